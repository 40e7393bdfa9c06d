#!/usr/bin/env python3
"""Generate models.txt: every layer's positional treatment of current model families, from their configs.

Run:  python3 tests/golden/gen_models.py      (writes models.txt next to this script)

Inputs are the hand-written configs in tests/data/hf/models/ (public values of each model's config.json);
this script reads their numbers and applies each family's rules as its reference implementation states them,
in mpmath at 40 digits, importing nothing from posenc:
  layer structure   transformers configuration_<family>.py defaults and modeling_<family>.py attention classes:
                    Gemma 2 (layer i slides when (i+1) % 2), Gemma 3 ((i+1) % sliding_window_pattern, local
                    layers with rope_local_base_freq and no scaling; v5 rope_parameters per layer type),
                    Llama 4 (no_rope_layers default (i+1) % 4 != 0; chunked attention on RoPE layers; the
                    attention temperature 1 + attn_scale * ln(floor((p+1)/floor_scale) + 1) on q in NoPE
                    layers, Llama4TextAttention), SmolLM3 (no_rope_layers as Llama 4), GPT-OSS (layer_types),
                    Qwen3 and Qwen3-MoE (use_sliding_window off: every layer full;
                    Qwen3-30B-A3B with its model card's YaRN factor 4), ModernBERT (global every 3rd layer from 0
                    with global_rope_theta, local window local_attention with local_rope_theta), GLM-4
                    (partial_rotary_factor 0.5, interleaved pairs: modeling_glm4.py rotate_half over x[0::2],
                    x[1::2]), Mistral 7B v0.1 (sliding_window on every layer), DeepSeek-V3 (the
                    qk_rope_head_dim-wide rotary head, interleaved, DeepSeek YaRN), Phi-3 mini 128k (LongRoPE long
                    factors at 8192 positions, sliding_window on every layer; Phi-4-mini's shape, partial rotary 0.75 with
                    LongRoPE, whose 48 factor values are stand-ins: the published ones were not at hand),
                    Qwen2.5-VL 7B (text: MRoPE sections [16, 24, 24], full attention), Ministral 3 (YaRN and the factor
                    1 + llama_4_scaling_beta * ln(floor(p / original_max_position_embeddings) + 1) on q in every
                    layer, modeling_ministral3.py).
  frequencies       as gen_golden.py: w_i = base^(-2i/R); linear w/factor; llama3 bands; YaRN ramp with HF's
                    attention factor 0.1 ln(factor) + 1 (truncate false for GPT-OSS).

GGUF cases (gguf_<name>): tests/data/gguf/model_<name>.gguf, written by make_gguf.py from models.json, with the
per-layer plan from llama.cpp's loader rules (GGUF_RULES below: set_swa_pattern's period per architecture, the
window rule, the sliding layers' base, NoPE layers, Llama 4's and Ministral 3's temperature).

Case params: config (file name) or gguf (file name), layers. Arrays per case (L layers, K distinct RoPE plans, P = max pairs; mrope_section i64 (3) only for MRoPE models):
  rope i64 (L): 1 rotates, 0 NoPE;  attention i64 (L): 0 full, 1 sliding, 2 chunked;  window i64 (L);
  plan i64 (L): index into the plan arrays (-1 for NoPE layers);
  plan_rotary_dim i64 (K), plan_interleaved i64 (K), plan_magnitude f64 (K), plan_inv_freq f64 (K, P) (rows
  padded with 0 past rotary_dim/2);
  temp_positions i64 (T), temp_scale f64 (L, T): the factor on q at each position (1 where not enabled).
  Ministral 3's factor is also the temperature (offset 0 where Llama 4 adds 1 to p).
"""

import json
import os
import struct

from mpmath import mp, mpf

from gen_golden import default_inv_freq, get_mscale, llama3_inv_freq, yarn_inv_freq
from golden_io import Case, write_file

mp.dps = 40
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.environ.get('POSENC_HF_MODELS', os.path.join(HERE, '..', 'data', 'hf', 'models'))
GGUF_MODELS = os.environ.get('POSENC_GGUF_MODELS', os.path.join(HERE, '..', 'data', 'gguf', 'models.json'))
TEMP_POSITIONS = [0, 1, 8190, 8191, 8192, 16382, 16383, 16384, 32767, 32768, 100000, 1048575, 10485759]


def load(name):
    with open(os.path.join(MODELS, name)) as f:
        root = json.load(f)
    return root, root.get('text_config', root)


def head_dim(t):
    return t['head_dim'] if t.get('head_dim') else t['hidden_size'] // t['num_attention_heads']


class Plans:
    def __init__(self):
        self.rows = []   # (rotary_dim, interleaved, magnitude, inv_freq)

    def add(self, R, interleaved, magnitude, inv_freq):
        key = (R, interleaved, [str(v) for v in inv_freq], str(magnitude))
        for k, r in enumerate(self.rows):
            if (r[0], r[1], [str(v) for v in r[3]], str(r[2])) == key:
                return k
        self.rows.append((R, interleaved, magnitude, inv_freq))
        return len(self.rows) - 1


def case(name, config, layers, rope, attention, window, plan_of, plans, temp=None, source='config', mrope=None):
    c = Case(name)
    c.param(source, config)
    c.param('layers', layers)
    if mrope is not None:
        c.array('mrope_section', 'i64', [len(mrope)], mrope)
    c.array('rope', 'i64', [layers], rope)
    c.array('attention', 'i64', [layers], attention)
    c.array('window', 'i64', [layers], window)
    c.array('plan', 'i64', [layers], plan_of)
    K = len(plans.rows)
    P = max(r[0] // 2 for r in plans.rows)
    c.array('plan_rotary_dim', 'i64', [K], [r[0] for r in plans.rows])
    c.array('plan_interleaved', 'i64', [K], [1 if r[1] else 0 for r in plans.rows])
    c.array('plan_magnitude', 'f64', [K], [r[2] for r in plans.rows])
    c.array('plan_inv_freq', 'f64', [K, P], [v for r in plans.rows for v in list(r[3]) + [mpf(0)] * (P - len(r[3]))])
    T = len(TEMP_POSITIONS)
    c.array('temp_positions', 'i64', [T], TEMP_POSITIONS)
    scales = []
    for i in range(layers):
        for p in TEMP_POSITIONS:
            if temp is not None and temp[i] is not None:
                floor_scale, attn_scale, offset = temp[i]
                scales.append(1 + attn_scale * mp.log(mp.floor((mpf(p) + offset) / floor_scale) + 1))
            else:
                scales.append(mpf(1))
    c.array('temp_scale', 'f64', [layers, T], scales)
    return c


def uniform(name, config, slide, interleaved=False):
    """One RoPE for all layers (scaling none; Qwen2-VL's legacy type "mrope" is none with sections, reported as
    the model's mrope_section); slide(i) -> (attention, window)."""
    _, t = load(config)
    L, D = t['num_hidden_layers'], head_dim(t)
    R = int(D * t.get('partial_rotary_factor', 1))
    plans = Plans()
    k = plans.add(R, interleaved, mpf(1), default_inv_freq(mpf(t.get('rope_theta', 10000)), R))
    kinds = [slide(i, t) for i in range(L)]
    mrope = (t.get('rope_scaling') or {}).get('mrope_section')
    return case(name, config, L, [1] * L, [a for a, _ in kinds], [w for _, w in kinds], [k] * L, plans, mrope=mrope)


def gemma3(name, config):
    _, t = load(config)
    L, R = t['num_hidden_layers'], head_dim(t)
    plans = Plans()
    if 'rope_parameters' in t:
        rp = t['rope_parameters']
        glob = [w / mpf(rp['full_attention']['factor']) for w in default_inv_freq(mpf(rp['full_attention']['rope_theta']), R)]
        loc = default_inv_freq(mpf(rp['sliding_attention']['rope_theta']), R)
        sliding = [lt == 'sliding_attention' for lt in t['layer_types']]
    else:
        glob = [w / mpf(t['rope_scaling']['factor']) for w in default_inv_freq(mpf(t['rope_theta']), R)]
        loc = default_inv_freq(mpf(t['rope_local_base_freq']), R)
        sliding = [(i + 1) % t['sliding_window_pattern'] != 0 for i in range(L)]
    kg, kl = plans.add(R, False, mpf(1), glob), plans.add(R, False, mpf(1), loc)
    return case(name, config, L, [1] * L, [1 if s else 0 for s in sliding],
                [t['sliding_window'] if s else 0 for s in sliding], [kl if s else kg for s in sliding], plans)


def llama4(name, config):
    _, t = load(config)
    L, R = t['num_hidden_layers'], head_dim(t)
    rs = t['rope_scaling']
    plans = Plans()
    k = plans.add(R, True, mpf(1), llama3_inv_freq(mpf(t['rope_theta']), R, rs['factor'], rs['low_freq_factor'],
                                                   rs['high_freq_factor'], rs['original_max_position_embeddings']))
    rope = [1 if (i + 1) % 4 != 0 else 0 for i in range(L)]
    temp = [None if r else (mpf(t['floor_scale']), mpf(t['attn_scale']), 1) for r in rope]
    return case(name, config, L, rope, [2 if r else 0 for r in rope], [t['attention_chunk_size'] if r else 0 for r in rope],
                [k if r else -1 for r in rope], plans, temp)


def smollm3(name, config):
    _, t = load(config)
    L, R = t['num_hidden_layers'], head_dim(t)
    plans = Plans()
    k = plans.add(R, False, mpf(1), default_inv_freq(mpf(t['rope_theta']), R))
    rope = [1 if (i + 1) % t['no_rope_layer_interval'] != 0 else 0 for i in range(L)]
    return case(name, config, L, rope, [0] * L, [0] * L, [k if r else -1 for r in rope], plans)


def gpt_oss(name, config):
    _, t = load(config)
    L, R = t['num_hidden_layers'], head_dim(t)
    rs = t['rope_scaling']
    plans = Plans()
    inv = yarn_inv_freq(mpf(t['rope_theta']), R, rs['factor'], rs['original_max_position_embeddings'],
                        rs['beta_fast'], rs['beta_slow'], rs['truncate'])
    k = plans.add(R, False, get_mscale(rs['factor']), inv)
    sliding = [lt == 'sliding_attention' for lt in t['layer_types']]
    return case(name, config, L, [1] * L, [1 if s else 0 for s in sliding], [t['sliding_window'] if s else 0 for s in sliding],
                [k] * L, plans)


def yarn_uniform(name, config):
    """One YaRN RoPE for all layers (HF _compute_yarn_parameters: beta_fast 32, beta_slow 1, truncated ramp,
    magnitude 0.1 ln(factor) + 1), full attention everywhere (Qwen3-MoE with use_sliding_window false)."""
    _, t = load(config)
    L, R = t['num_hidden_layers'], head_dim(t)
    rs = t['rope_scaling']
    plans = Plans()
    inv = yarn_inv_freq(mpf(t['rope_theta']), R, rs['factor'], rs['original_max_position_embeddings'], 32, 1, True)
    k = plans.add(R, False, get_mscale(rs['factor']), inv)
    return case(name, config, L, [1] * L, [0] * L, [0] * L, [k] * L, plans)


def modernbert(name, config):
    _, t = load(config)
    L, R = t['num_hidden_layers'], head_dim(t)
    plans = Plans()
    kg = plans.add(R, False, mpf(1), default_inv_freq(mpf(t['global_rope_theta']), R))
    kl = plans.add(R, False, mpf(1), default_inv_freq(mpf(t['local_rope_theta']), R))
    glob = [i % t['global_attn_every_n_layers'] == 0 for i in range(L)]
    return case(name, config, L, [1] * L, [0 if g else 1 for g in glob], [0 if g else t['local_attention'] for g in glob],
                [kg if g else kl for g in glob], plans)


def deepseek_v3(name, config):
    """The rotary part is its own qk_rope_head_dim-wide head, interleaved pairs, DeepSeek YaRN (truncated ramp;
    magnitude mscale(factor, mscale) / mscale(factor, mscale_all_dim)): DeepSeek-V3 modeling, HF
    modeling_deepseek_v3.py. Every layer the same, full attention."""
    _, t = load(config)
    L, R = t['num_hidden_layers'], t['qk_rope_head_dim']
    rs = t['rope_scaling']
    plans = Plans()
    inv = yarn_inv_freq(mpf(t['rope_theta']), R, rs['factor'], rs['original_max_position_embeddings'],
                        rs['beta_fast'], rs['beta_slow'], True)
    k = plans.add(R, True, get_mscale(rs['factor'], rs['mscale']) / get_mscale(rs['factor'], rs['mscale_all_dim']), inv)
    return case(name, config, L, [1] * L, [0] * L, [0] * L, [k] * L, plans)


def phi3_longrope(name, config, seq_len=8192):
    """LongRoPE (HF _compute_longrope_parameters): the long factors for seq_len > original_max_position_embeddings,
    w_i / factor_i, magnitude sqrt(1 + ln(F)/ln(M)) with F = max_position_embeddings / M; Phi-3 attends within
    sliding_window on every layer (modeling_phi3.py)."""
    _, t = load(config)
    L, R = t['num_hidden_layers'], int(head_dim(t) * t.get('partial_rotary_factor', 1))  # HF: int(D * factor)
    rs, M = t['rope_scaling'], t['original_max_position_embeddings']
    ext = rs['long_factor'] if seq_len > M else rs['short_factor']
    F = mpf(t['max_position_embeddings']) / M
    inv = [w / mpf(e) for w, e in zip(default_inv_freq(mpf(t['rope_theta']), R), ext)]
    plans = Plans()
    k = plans.add(R, False, mp.sqrt(1 + mp.log(F) / mp.log(M)), inv)
    return case(name, config, L, [1] * L, [1] * L, [t['sliding_window']] * L, [k] * L, plans)


def ministral3(name, config):
    """YaRN from rope_parameters (magnitude mscale(F, mscale) / mscale(F, mscale_all_dim), HF
    _compute_yarn_parameters) and, on every layer, q times 1 + beta ln(floor(p / M) + 1) with beta =
    llama_4_scaling_beta and M = original_max_position_embeddings (modeling_ministral3.py
    get_llama_4_attn_scale, position = cache_position). Full attention everywhere (sliding_window null)."""
    _, t = load(config)
    L, R = t['num_hidden_layers'], head_dim(t)
    rp = t['rope_parameters']
    plans = Plans()
    inv = yarn_inv_freq(mpf(rp['rope_theta']), R, rp['factor'], rp['original_max_position_embeddings'],
                        rp['beta_fast'], rp['beta_slow'], True)
    k = plans.add(R, False, get_mscale(rp['factor'], rp['mscale']) / get_mscale(rp['factor'], rp['mscale_all_dim']), inv)
    temp = [(mpf(rp['original_max_position_embeddings']), mpf(rp['llama_4_scaling_beta']), 0)] * L
    return case(name, config, L, [1] * L, [0] * L, [0] * L, [k] * L, plans, temp)


# llama.cpp's per-layer reading of GGUF metadata (src/models/<arch>.cpp load_arch_hparams, restated):
# (default period of set_swa_pattern, dense_first, window rule, SWA layers' RoPE, NoPE rule).
#   window: 'required' / 'default:N' / 'present' (SWA only with the key > 0) / 'llama4' (chunks of 8192)
#   swa_rope: 'main' (main base and scaling, rope.freq_base_swa overrides the base), 'local' (freq_base_swa else
#   10000, no scaling), 'plain' (main base or freq_base_swa, no scaling: Olmo 3's graph)
#   nope: None, 'every_4th' ((i+1) % 4 == 0: Llama 4, SmolLM3), 'full' (non-SWA layers: Cohere 2, EXAONE 4)
GGUF_RULES = {
    'gemma2': (2, False, 'default:4096', 'main', None),
    'gemma3': (6, False, 'present', 'local', None),
    'gpt-oss': (2, False, 'required', 'main', None),
    'llama4': (4, False, 'llama4', 'main', 'every_4th'),
    'modern-bert': (3, True, 'present', 'local', None),
    'olmo2': (4, False, 'present', 'plain', None),
    'cohere2': (4, False, 'required', 'main', 'full'),
    'mistral3': (None, False, None, 'main', None),
}
# llama.cpp llama_model_rope_type: NORM (interleaved) architectures among the above.
GGUF_NORM = ('llama4', 'cohere2', 'mistral3')


def swa_layer(il, period, dense_first):
    """llama_hparams::set_swa_pattern (src/llama-hparams.cpp)."""
    if period == 0:
        return True
    return il % period != 0 if dense_first else il % period < period - 1


def gguf_case(name):
    """The per-layer plan of tests/data/gguf/model_<name>.gguf from its keys (models.json) and GGUF_RULES. The
    RoPE of the main layers is try_read_gguf_rope's mapping of llama.cpp's keys: w_i = base^(-2i/R), linear
    w/F, YaRN with ggml's floor/ceil ramp ends and HF's default magnitude 0.1 ln F + 1."""
    with open(GGUF_MODELS) as f:
        kv = {k: v for k, _, v in json.load(f)[name]}
    arch = kv['general.architecture']
    a = arch + '.'
    L = kv[a + 'block_count']
    D = kv.get(a + 'attention.key_length') or kv[a + 'embedding_length'] // kv[a + 'attention.head_count']
    R = kv.get(a + 'rope.dimension_count', D)
    period, dense_first, wrule, swa_rope, nope = GGUF_RULES[arch]
    interleaved = arch in GGUF_NORM
    base = mpf(kv.get(a + 'rope.freq_base', 10000))
    stype = kv.get(a + 'rope.scaling.type', 'linear' if a + 'rope.scaling.factor' in kv else 'none')
    F = kv.get(a + 'rope.scaling.factor')
    if stype == 'linear' and F:
        main_inv, main_mag = [w / F for w in default_inv_freq(base, R)], mpf(1)
    elif stype == 'yarn':
        M = kv.get(a + 'rope.scaling.original_context_length', kv[a + 'context_length'])
        main_inv = yarn_inv_freq(base, R, F, M, 32, 1, True)
        main_mag = get_mscale(F)
    else:
        main_inv, main_mag = default_inv_freq(base, R), mpf(1)
    window = kv.get(a + 'attention.sliding_window')
    if wrule is None:
        swa_on = False
    elif wrule == 'llama4':
        swa_on, window = window != 0, 8192
    elif wrule.startswith('default:'):
        swa_on, window = True, window or int(wrule.split(':')[1])
    elif wrule == 'present':
        swa_on = bool(window)
    else:
        swa_on = True
    pattern = kv.get(a + 'attention.sliding_window_pattern', period)
    swa = [False] * L
    if swa_on:
        swa = list(pattern) if isinstance(pattern, list) else [swa_layer(i, pattern, dense_first) for i in range(L)]
    swa_base = mpf(kv[a + 'rope.freq_base_swa']) if a + 'rope.freq_base_swa' in kv else None
    plans = Plans()
    kg = plans.add(R, interleaved, main_mag, main_inv)
    if swa_rope == 'local':
        kl = plans.add(R, interleaved, mpf(1), default_inv_freq(swa_base or mpf(10000), R))
    elif swa_rope == 'plain':
        kl = plans.add(R, interleaved, mpf(1), default_inv_freq(swa_base or base, R))
    elif swa_base is not None:
        raise ValueError('main-scaling SWA layers with their own base: not among the cases')
    else:
        kl = kg
    rope = [1] * L
    if nope == 'every_4th' and not (wrule == 'llama4' and not swa_on):
        rope = [0 if (i + 1) % 4 == 0 else 1 for i in range(L)]
    if nope == 'full' and swa_on:
        rope = [1 if s else 0 for s in swa]
    kind = 2 if wrule == 'llama4' else 1
    temp = [None] * L
    if wrule == 'llama4' and swa_on:
        temp = [None if r else (mpf(8192), mpf('0.1'), 1) for r in rope]
    ts = kv.get(a + 'attention.temperature_scale')
    if ts:
        floor = kv.get(a + 'rope.scaling.original_context_length') or kv[a + 'context_length']
        temp = [(mpf(floor), mpf(f32(ts)), 0)] * L
    return case('gguf_' + name, 'model_%s.gguf' % name, L, rope, [kind if s else 0 for s in swa],
                [window if s else 0 for s in swa], [(kl if s else kg) if r else -1 for s, r in zip(swa, rope)], plans,
                temp, source='gguf')


def f32(x):
    """x rounded to float32, as the GGUF file stores it."""
    return struct.unpack('<f', struct.pack('<f', x))[0]


def main():
    cases = [
        uniform('gemma2_9b', 'gemma2_9b.json', lambda i, t: (1, t['sliding_window']) if (i + 1) % 2 else (0, 0)),
        gemma3('gemma3_4b', 'gemma3_4b.json'),
        gemma3('gemma3_4b_v5', 'gemma3_4b_v5.json'),
        llama4('llama4_scout', 'llama4_scout.json'),
        smollm3('smollm3_3b', 'smollm3_3b.json'),
        gpt_oss('gpt_oss_20b', 'gpt_oss_20b.json'),
        uniform('qwen3_8b', 'qwen3_8b.json', lambda i, t: (0, 0)),
        yarn_uniform('qwen3_30b_a3b_yarn', 'qwen3_30b_a3b_yarn.json'),
        modernbert('modernbert_base', 'modernbert_base.json'),
        uniform('glm4_9b', 'glm4_9b.json', lambda i, t: (0, 0), interleaved=True),
        uniform('mistral_7b_v01', 'mistral_7b_v01.json', lambda i, t: (1, t['sliding_window'])),
        deepseek_v3('deepseek_v3', 'deepseek_v3.json'),
        phi3_longrope('phi3_mini_128k', 'phi3_mini_128k.json'),
        ministral3('ministral3_14b', 'ministral3_14b.json'),
        uniform('qwen2_5_vl_7b', 'qwen2_5_vl_7b.json', lambda i, t: (0, 0)),
        phi3_longrope('phi4_mini_shaped', 'phi4_mini_shaped.json'),
    ]
    cases += [gguf_case(n) for n in ('gemma3_4b', 'gemma2_9b', 'gpt_oss_20b', 'llama4_layers', 'modernbert_base',
                                     'olmo3_7b', 'cohere2_7b', 'ministral3_14b')]
    write_file('models.txt', 'gen_models.py', [
        'Per-layer positional treatment of model families from tests/data/hf/models/*.json (see gen_models.py).',
    ], cases)


if __name__ == '__main__':
    main()
