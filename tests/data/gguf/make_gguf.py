#!/usr/bin/env python3
"""Writes the small GGUF test files of tests/gguf_test.cpp (and the seeds of tests/fuzz/gguf_fuzz.cpp) into
this directory, by hand from the published format (ggml docs/gguf.md) with `struct`: no dependency.

    python3 tests/data/gguf/make_gguf.py           # rewrite the files
    python3 tests/data/gguf/make_gguf.py --check   # also read the valid ones back with the PyPI `gguf`
                                                   # package (pip install gguf), an independent reader

Layout of a GGUF file (little-endian): b"GGUF", uint32 version, uint64 tensor count, uint64 metadata count;
each metadata entry: key (uint64 length + UTF-8 bytes), uint32 value type, value (arrays: uint32 element type,
uint64 count, elements); each tensor info: name, uint32 n_dims, n_dims uint64 extents (fastest first), uint32
ggml type, uint64 offset into the data section; zero padding to `general.alignment` (default 32); the data.

Key names are llama.cpp's (src/llama-arch.cpp). The models are shaped like real ones (head counts, dims,
bases, scaling) but carry only a few dummy weight tensors besides the RoPE factor tensors the converter
writes (convert_hf_to_gguf.py): rope_freqs.weight for Llama 3 scaling, rope_factors_{long,short}.weight for
Phi-3 LongRoPE. The per-pair factors follow simple formulas that gguf_test.cpp recomputes independently.

Valid files:  llama3.gguf (llama, interleaved pairs, Llama 3.1 bands in rope_freqs), qwen2_yarn.gguf (qwen2,
half-split, YaRN), gptneox.gguf (version 2, partial rotary 24 of 96, alignment 64), phi3_longrope.gguf
(phi3, LongRoPE tensors, attn_factor), qwen2vl_mrope.gguf (dimension_sections), deepseek2_yarn.gguf
(deepseek2, YaRN with yarn_log_multiplier).
Model files: model_<name>.gguf, the per-layer keys of models.json (see there).
Malformed files: bad_*.gguf, one defect each (see MALFORMED below).
"""
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# GGUF value types (gguf.h enum gguf_type).
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR_FMT = {UINT8: '<B', INT8: '<b', UINT16: '<H', INT16: '<h', UINT32: '<I', INT32: '<i', FLOAT32: '<f',
              BOOL: '<B', UINT64: '<Q', INT64: '<q', FLOAT64: '<d'}
# ggml types used here: (id, elements per block, bytes per block).
F32, F16, Q8_0, BF16 = (0, 1, 4), (1, 1, 2), (8, 32, 34), (30, 1, 2)


def gstr(s):
    b = s.encode('utf-8') if isinstance(s, str) else s
    return struct.pack('<Q', len(b)) + b


def value(vtype, v):
    if vtype == STRING:
        return gstr(v)
    if vtype == ARRAY:
        etype, items = v
        out = struct.pack('<IQ', etype, len(items))
        return out + b''.join(value(etype, x) for x in items)
    return struct.pack(SCALAR_FMT[vtype], v)


def f32(x):
    """x rounded to float32 (what the file stores)."""
    return struct.unpack('<f', struct.pack('<f', x))[0]


class Gguf:
    def __init__(self, version=3, alignment=32):
        self.version, self.alignment = version, alignment
        self.kv = []       # raw encoded entries
        self.tensors = []  # (name, dims, ggml type, data bytes)

    def add(self, key, vtype, v):
        self.kv.append(gstr(key) + struct.pack('<I', vtype) + value(vtype, v))
        return self

    def add_raw(self, blob):
        self.kv.append(blob)
        return self

    def tensor(self, name, dims, gtype, data=None):
        n = 1
        for d in dims:
            n *= d
        size = n // gtype[1] * gtype[2]
        if data is None:
            data = bytes((i * 7) % 251 for i in range(size))
        assert len(data) == size, (name, len(data), size)
        self.tensors.append((name, list(dims), gtype[0], data))
        return self

    def build(self, offsets=None, infos_override=None):
        pad = lambda n: (-n) % self.alignment
        out = b'GGUF' + struct.pack('<IQQ', self.version, len(self.tensors), len(self.kv)) + b''.join(self.kv)
        data, offs = b'', []
        for _, _, _, d in self.tensors:
            data += b'\0' * pad(len(data))
            offs.append(len(data))
            data += d
        if offsets is not None:
            offs = offsets
        for (name, dims, gt, _), off in zip(self.tensors, offs):
            out += gstr(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
            out += struct.pack('<IQ', gt, off)
        if infos_override is not None:
            out += infos_override
        return out + b'\0' * pad(len(out)) + data


def f32_tensor(values):
    return b''.join(struct.pack('<f', v) for v in values)


# --------------------------------------------------------------------------------------------- valid files

def llama3_factors(base=500000.0, dim=128, factor=8.0, low=1.0, high=4.0, old_ctx=8192):
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors (Llama 3.1 `rope_freqs`), in double, each factor
    rounded to float32 once (the converter works in float32 throughout: a few ulps apart at most)."""
    out = []
    for i in range(0, dim, 2):
        freq = 1.0 / base ** (i / dim)
        wavelen = 2 * math.pi / freq
        if wavelen < old_ctx / high:
            out.append(1.0)
        elif wavelen > old_ctx / low:
            out.append(factor)
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return [f32(x) for x in out]


def llama3(arch='llama'):
    g = Gguf()
    g.add('general.architecture', STRING, arch)
    g.add('general.name', STRING, 'posenc test Llama-3.1-8B-shaped')
    g.add('general.file_type', UINT32, 7)
    g.add(arch + '.block_count', UINT32, 32)
    g.add(arch + '.context_length', UINT32, 131072)
    g.add(arch + '.embedding_length', UINT32, 4096)
    g.add(arch + '.feed_forward_length', UINT32, 14336)
    g.add(arch + '.attention.head_count', UINT32, 32)
    g.add(arch + '.attention.head_count_kv', UINT32, 8)
    g.add(arch + '.rope.freq_base', FLOAT32, 500000.0)
    g.add(arch + '.attention.layer_norm_rms_epsilon', FLOAT32, 1e-5)
    g.add(arch + '.rope.dimension_count', UINT32, 128)
    g.add('tokenizer.ggml.model', STRING, 'gpt2')
    g.add('tokenizer.ggml.tokens', ARRAY, (STRING, ['<|begin_of_text|>', 'Hello', ' world', '\u00e9t\u00e9']))
    g.add('tokenizer.ggml.token_type', ARRAY, (INT32, [3, 1, 1, 1]))
    g.add('tokenizer.ggml.add_bos_token', BOOL, 1)
    g.add('general.quantization_version', UINT32, 2)
    g.tensor('token_embd.weight', [64, 4], F16)
    g.tensor('rope_freqs.weight', [64], F32, f32_tensor(llama3_factors()))
    g.tensor('blk.0.attn_q.weight', [64, 2], Q8_0)
    return g


def qwen2_yarn():
    g = Gguf()
    g.add('general.architecture', STRING, 'qwen2')
    g.add('general.name', STRING, 'posenc test Qwen2.5-7B-shaped, YaRN')
    g.add('qwen2.block_count', UINT32, 28)
    g.add('qwen2.context_length', UINT32, 131072)
    g.add('qwen2.embedding_length', UINT32, 3584)
    g.add('qwen2.attention.head_count', UINT32, 28)
    g.add('qwen2.attention.head_count_kv', UINT32, 4)
    g.add('qwen2.rope.freq_base', FLOAT32, 1000000.0)
    g.add('qwen2.rope.scaling.type', STRING, 'yarn')
    g.add('qwen2.rope.scaling.factor', FLOAT32, 4.0)
    g.add('qwen2.rope.scaling.original_context_length', UINT32, 32768)
    g.tensor('token_embd.weight', [128, 2], BF16)
    return g


def gptneox():
    g = Gguf(version=2, alignment=64)
    g.add('general.architecture', STRING, 'gptneox')
    g.add('general.name', STRING, 'posenc test GPT-NeoX-20B-shaped, GGUF v2')
    g.add('general.alignment', UINT32, 64)
    g.add('gptneox.context_length', UINT64, 2048)   # any integer type is read as a count
    g.add('gptneox.embedding_length', UINT32, 6144)
    g.add('gptneox.block_count', UINT32, 44)
    g.add('gptneox.attention.head_count', UINT32, 64)
    g.add('gptneox.rope.dimension_count', UINT32, 24)  # rotary_pct 0.25 of 96
    g.add('gptneox.use_parallel_residual', BOOL, 1)
    g.add('gptneox.attention.layer_norm_epsilon', FLOAT64, 1e-5)
    g.tensor('output_norm.weight', [96], F32)
    g.tensor('blk.0.attn_qkv.weight', [96, 3], F16)
    return g


PHI3_SHORT = [1.0 + i / 64.0 for i in range(48)]   # exact in float32
PHI3_LONG = [1.0 + i / 2.0 for i in range(48)]


def phi3_longrope():
    g = Gguf()
    g.add('general.architecture', STRING, 'phi3')
    g.add('general.name', STRING, 'posenc test Phi-3-mini-128k-shaped')
    g.add('phi3.context_length', UINT32, 131072)
    g.add('phi3.rope.scaling.original_context_length', UINT32, 4096)
    g.add('phi3.embedding_length', UINT32, 3072)
    g.add('phi3.attention.head_count', UINT32, 32)
    g.add('phi3.attention.head_count_kv', UINT32, 32)
    g.add('phi3.rope.dimension_count', UINT32, 96)
    g.add('phi3.rope.freq_base', FLOAT32, 10000.0)
    # Phi3MiniModel.set_gguf_parameters: sqrt(1 + ln(131072/4096) / ln 4096), as float32.
    g.add('phi3.rope.scaling.attn_factor', FLOAT32, math.sqrt(1 + math.log(32.0) / math.log(4096.0)))
    g.tensor('rope_factors_long.weight', [48], F32, f32_tensor(PHI3_LONG))
    g.tensor('rope_factors_short.weight', [48], F32, f32_tensor(PHI3_SHORT))
    return g


def qwen2vl_mrope():
    g = Gguf()
    g.add('general.architecture', STRING, 'qwen2vl')
    g.add('qwen2vl.context_length', UINT32, 32768)
    g.add('qwen2vl.embedding_length', UINT32, 3584)
    g.add('qwen2vl.attention.head_count', UINT32, 28)
    g.add('qwen2vl.attention.head_count_kv', UINT32, 4)
    g.add('qwen2vl.rope.freq_base', FLOAT32, 1000000.0)
    g.add('qwen2vl.rope.dimension_sections', ARRAY, (INT32, [16, 24, 24, 0]))
    return g


def deepseek2_yarn():
    g = Gguf()
    g.add('general.architecture', STRING, 'deepseek2')
    g.add('general.name', STRING, 'posenc test DeepSeek-V3-shaped')
    g.add('deepseek2.context_length', UINT32, 163840)
    g.add('deepseek2.embedding_length', UINT32, 7168)
    g.add('deepseek2.attention.head_count', UINT32, 128)
    g.add('deepseek2.attention.key_length', UINT32, 192)
    g.add('deepseek2.rope.dimension_count', UINT32, 64)
    g.add('deepseek2.rope.freq_base', FLOAT32, 10000.0)
    g.add('deepseek2.rope.scaling.type', STRING, 'yarn')
    g.add('deepseek2.rope.scaling.factor', FLOAT32, 40.0)
    g.add('deepseek2.rope.scaling.original_context_length', UINT32, 4096)
    g.add('deepseek2.rope.scaling.yarn_log_multiplier', FLOAT32, 0.1)  # 0.1 * mscale_all_dim (= 1)
    g.add('deepseek2.rope.scaling.yarn_beta_fast', FLOAT32, 32.0)
    g.add('deepseek2.rope.scaling.yarn_beta_slow', FLOAT32, 1.0)
    return g


VALID = {
    'llama3.gguf': llama3,
    'qwen2_yarn.gguf': qwen2_yarn,
    'gptneox.gguf': gptneox,
    'phi3_longrope.gguf': phi3_longrope,
    'qwen2vl_mrope.gguf': qwen2vl_mrope,
    'deepseek2_yarn.gguf': deepseek2_yarn,
}

# ------------------------------------------------------------------------------------------ malformed files


def replace_kv(g, key, vtype, v):
    """g with the entry `key` re-encoded as type vtype."""
    prefix = gstr(key)
    g.kv = [gstr(key) + struct.pack('<I', vtype) + value(vtype, v) if e.startswith(prefix) else e for e in g.kv]
    return g


def header(tensors, kvs, version=3):
    return b'GGUF' + struct.pack('<IQQ', version, tensors, kvs)


def malformed():
    good = llama3().build()
    files = {}
    files['bad_magic.gguf'] = b'GGUG' + good[4:]
    files['bad_version.gguf'] = good[:4] + struct.pack('<I', 1) + good[8:]
    files['bad_big_endian.gguf'] = good[:4] + struct.pack('>I', 3) + good[8:]
    files['bad_truncated.gguf'] = good[:450]  # inside the metadata
    files['bad_huge_kv_count.gguf'] = header(0, 1 << 62) + good[24:]
    files['bad_huge_tensor_count.gguf'] = header(1 << 40, 1) + gstr('general.architecture') + \
        struct.pack('<I', STRING) + gstr('llama')
    files['bad_string_past_end.gguf'] = header(0, 1) + struct.pack('<Q', 1 << 40) + b'general.architecture'
    files['bad_wrong_type.gguf'] = replace_kv(llama3(), 'llama.rope.freq_base', STRING, '500000').build()
    files['bad_nested_array.gguf'] = Gguf().add('general.architecture', STRING, 'llama').add_raw(
        gstr('posenc.nested') + struct.pack('<I', ARRAY) + struct.pack('<IQ', ARRAY, 1) +
        struct.pack('<IQ', UINT8, 2) + b'\1\2').build()
    files['bad_value_type.gguf'] = Gguf().add('general.architecture', STRING, 'llama').add_raw(
        gstr('posenc.odd') + struct.pack('<I', 13) + b'\0' * 8).build()
    files['bad_bool.gguf'] = Gguf().add('general.architecture', STRING, 'llama').add_raw(
        gstr('posenc.flag') + struct.pack('<IB', BOOL, 2)).build()
    files['bad_duplicate_key.gguf'] = llama3().add('llama.rope.freq_base', FLOAT32, 10000.0).build()
    files['bad_alignment.gguf'] = llama3().add('general.alignment', UINT32, 48).build()
    g = llama3()
    g.tensors[0] = ('token_embd.weight', [4, 2, 2, 2, 2], F32[0], b'\0' * 128)
    files['bad_too_many_dims.gguf'] = g.build()
    g = llama3()
    g.tensors[0] = ('token_embd.weight', [1 << 32, 1 << 32], F16[0], b'')
    files['bad_dims_overflow.gguf'] = g.build()
    files['bad_misaligned_offset.gguf'] = llama3().build(offsets=[0, 516, 768])
    files['bad_rope_freqs_past_end.gguf'] = llama3().build(offsets=[0, 1 << 20, 768])
    g = llama3()
    g.tensors[1] = ('rope_freqs.weight', [64], F16[0], b'\0' * 128)
    files['bad_rope_freqs_type.gguf'] = g.build()
    g = llama3()
    g.tensors[1] = ('rope_freqs.weight', [32], F32[0], f32_tensor([1.0] * 32))
    files['bad_rope_freqs_shape.gguf'] = g.build()
    g = llama3()
    g.kv = g.kv[1:]
    files['bad_missing_architecture.gguf'] = g.build()
    files['bad_unknown_architecture.gguf'] = llama3('mystery').build()
    return files


def models():
    """model_<name>.gguf of models.json: the per-layer keys of model families (tests/model_plan_test.cpp)."""
    import json
    with open(os.path.join(HERE, 'models.json')) as f:
        spec = json.load(f)
    types = {'str': STRING, 'u32': UINT32, 'f32': FLOAT32}
    files = {}
    for name, kvs in spec.items():
        if name.startswith('_'):
            continue
        g = Gguf()
        for key, t, v in kvs:
            if t == 'bool[]':
                g.add(key, ARRAY, (BOOL, [1 if b else 0 for b in v]))
            else:
                g.add(key, types[t], v)
        files['model_%s.gguf' % name] = g.build()
    return files


def main():
    written = []
    for name, blob in models().items():
        with open(os.path.join(HERE, name), 'wb') as f:
            f.write(blob)
        written.append(name)
    for name, make in VALID.items():
        with open(os.path.join(HERE, name), 'wb') as f:
            f.write(make().build())
        written.append(name)
    for name, blob in malformed().items():
        with open(os.path.join(HERE, name), 'wb') as f:
            f.write(blob)
        written.append(name)
    print('wrote %d files into %s' % (len(written), HERE))
    if '--check' in sys.argv:
        check()


def check():
    """Reads every valid file back with the PyPI `gguf` package (llama.cpp's own Python reader)."""
    import gguf
    for name in VALID:
        r = gguf.GGUFReader(os.path.join(HERE, name))
        arch = r.fields['general.architecture']
        arch = bytes(arch.parts[arch.data[0]]).decode()
        for t in r.tensors:
            assert t.n_bytes == len(bytes(t.data)), (name, t.name)
        if 'rope_freqs.weight' in [t.name for t in r.tensors]:
            t = [t for t in r.tensors if t.name == 'rope_freqs.weight'][0]
            assert list(t.data) == llama3_factors(), name
        print('gguf %s: %s: %s, %d keys, tensors %s' % (gguf.__version__ if hasattr(gguf, '__version__') else '',
              name, arch, len(r.fields), [(t.name, t.tensor_type.name, list(t.shape)) for t in r.tensors]))


if __name__ == '__main__':
    main()
