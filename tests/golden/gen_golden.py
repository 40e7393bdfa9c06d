#!/usr/bin/env python3
"""Generate the golden data files for posenc's tests (format: FORMAT.md in this folder).

Run:  python3 tests/golden/gen_golden.py      (writes *.txt next to this script)

Everything is computed in mpmath at 40 significant digits from exact inputs; numpy is used only for its
random generator (default_rng, one fixed seed per case, derived from "<file>/<case>" with crc32). Nothing is
imported from posenc: these files are an independent statement of the formulas.

Number semantics: every input number means the exact value of the IEEE double that the file's text parses to
(so a parameter written 0.707 means the double nearest 0.707). Constants inside the formulas (0.1 in
get_mscale, 0.4 / 1.4 in zeta, 0.001 in the YaRN ramp) are exact decimals. Outputs are rounded to the nearest
double and printed with 17 significant digits.

Sources of the formulas, per file:
  rope_basic.txt    RoFormer (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
                    Embedding", eq. 34); GPT-J rotary (interleaved pairs, rotate_every_two) and GPT-NeoX rotary
                    (half_split pairs, rotate_half), with rotary_dim < head_dim as in GPT-J / NeoX "rotary_pct".
  rope_scaling.txt  Hugging Face transformers src/transformers/modeling_rope_utils.py
                    (_compute_linear_scaling_rope_parameters, _compute_dynamic_ntk_parameters,
                    _compute_yarn_parameters, _compute_longrope_parameters, _compute_llama3_parameters);
                    vLLM model_executor/layers/rotary_embedding (DynamicNTKScalingRotaryEmbedding: the table
                    is built once for max_len = max_position_embeddings * factor -> policy fixed_max;
                    DeepseekScalingRotaryEmbedding and DeepSeek-V3 modeling: cos/sin *= mscale ratio,
                    softmax_scale *= get_mscale(factor, mscale_all_dim)^2); NTK-aware base rescale
                    (bloc97; lucidrains / zeta base_rescale_factor); ggml ggml_rope_ext "rope_freqs" tensor
                    (freq_factors: theta_i / freq_factors[i]).
  rope_long.txt     as rope_basic / llama3 above, positions up to 2^20 (base 500000).
  xpos.txt          torchscale torchscale/component/xpos_relative_position.py (XPOS, fixed_pos_embedding,
                    apply_rotary_pos_emb), Sun et al. 2022 "A Length-Extrapolatable Transformer".
  mrope.txt         Qwen2-VL multimodal RoPE (HF modeling_qwen2_vl.py apply_multimodal_rotary_pos_emb: the
                    half-split pairs take their position from axis t, h, w by chunks of mrope_section),
                    Qwen3-VL interleaved sections (HF modeling_qwen3_vl.py apply_interleaved_mrope: pair i
                    takes h if i % 3 == 1 and i < 3*H, w if i % 3 == 2 and i < 3*W, else t), Qwen2-VL vision
                    2D RoPE (VisionRotaryEmbedding(head_dim/2): frequency index restarts in each section,
                    w_j = base^(-j/size)).
  compat.txt        zeta (kyegomez/zeta, zeta/nn/embeddings/rope.py, after lucidrains' rotary-embedding)
                    RotaryEmbedding.forward; torchscale fixed_pos_embedding / apply_rotary_pos_emb;
                    tiny-llm (skyzh/tiny-llm) RoPE(dims, seq_len, base, traditional).
"""

from mpmath import mp, mpf

from golden_io import Case, bf16_inputs, dbl, rng_for, write_file



def near_integer(v, tol=mpf('1e-9')):
    return abs(v - mp.nint(v)) < tol


# -------------------------------------------------------------------------------------------------- RoPE

def default_inv_freq(base, R):
    base = mpf(base)
    return [base ** (-mpf(2 * i) / R) for i in range(R // 2)]


def rope_apply(x, shape, positions, inv_freq, R, o, style, magnitude, inverse):
    """RoFormer eq. 34 on pairs laid out by `style`; features outside [o, o+R) are copied."""
    N, L, H, D = shape
    y = [mpf(v) for v in x]
    m = mpf(magnitude)
    half = R // 2
    for n in range(N):
        for l in range(L):
            p = positions[n][l]
            for i in range(half):
                th = p * inv_freq[i]
                if inverse:
                    th = -th
                c, s = mp.cos(th), mp.sin(th)
                for h in range(H):
                    base_idx = ((n * L + l) * H + h) * D + o
                    if style == 'interleaved':
                        a, b = base_idx + 2 * i, base_idx + 2 * i + 1
                    else:
                        a, b = base_idx + i, base_idx + i + half
                    xa, xb = mpf(x[a]), mpf(x[b])
                    y[a] = m * (xa * c - xb * s)
                    y[b] = m * (xb * c + xa * s)
    return y


def rope_case(tag, name, *, style, N, L, H, D, R=None, o=0, base=10000, direction='forward',
              pos_form, offset=None, seq_offsets=None, positions=None, inv_freq=None, scaling='none',
              scaling_params=(), scaling_arrays=(), seq_len=None, magnitude=1, logit_scale=1):
    R = D if R is None else R
    assert R % 2 == 0 and o + R <= D
    rng = rng_for(tag + '/' + name)
    if pos_form == 'offset':
        positions = [[offset + l for l in range(L)] for _ in range(N)]
    elif pos_form == 'per_sequence':
        assert len(seq_offsets) == N
        positions = [[seq_offsets[n] + l for l in range(L)] for n in range(N)]
    else:
        assert pos_form == 'per_token'
        if positions is None:
            positions = rng.integers(0, 5000, size=(N, L)).tolist()
        positions = [[int(p) for p in row] for row in positions]
    if inv_freq is None:
        inv_freq = default_inv_freq(base, R)
    assert len(inv_freq) == R // 2
    if seq_len is None:
        seq_len = max(max(row) for row in positions) + 1
    x = bf16_inputs(rng, N * L * H * D)
    y = rope_apply(x, (N, L, H, D), positions, inv_freq, R, o, style, magnitude, direction == 'inverse')

    c = Case(name)
    for k, v in (('style', style), ('head_dim', D), ('rotary_dim', R), ('rotary_offset', o), ('base', base),
                 ('direction', direction), ('pos_form', pos_form)):
        c.param(k, v)
    if pos_form == 'offset':
        c.param('offset', offset)
    c.param('scaling', scaling)
    for k, v in scaling_params:
        c.param(k, v)
    c.param('seq_len', seq_len)
    c.param('magnitude', magnitude, computed=True)
    c.param('logit_scale', logit_scale, computed=True)
    c.array('inv_freq', 'f64', [R // 2], inv_freq)
    if pos_form == 'per_sequence':
        c.array('seq_offsets', 'i64', [N], seq_offsets)
    for k, vals in scaling_arrays:
        c.array(k, 'f64', [len(vals)], vals)
    c.array('positions', 'i64', [N, L], [p for row in positions for p in row])
    c.array('x', 'f64', [N, L, H, D], x)
    c.array('y', 'f64', [N, L, H, D], y)
    return c


def gen_rope_basic():
    tag = 'rope_basic'
    full = dict(N=2, L=5, H=3, D=16)
    cases = []
    for st in ('interleaved', 'half_split'):
        def add(what, **kw):
            cases.append(rope_case(tag, '%s_%s' % (st, what), style=st, **kw))
        add('full', **full, pos_form='offset', offset=0)
        add('offset', **full, pos_form='offset', offset=7)
        add('per_sequence', **full, pos_form='per_sequence', seq_offsets=[3, 100])
        add('per_token', **full, pos_form='per_token')
        add('partial', **full, R=8, pos_form='offset', offset=2)
        add('window', **full, R=8, o=4, pos_form='offset', offset=2)
        add('odd_head', N=2, L=5, H=3, D=9, R=6, pos_form='offset', offset=1)
        add('tail', N=1, L=1, H=1, D=6, pos_form='offset', offset=12345)
        add('one_pair', N=1, L=3, H=2, D=2, pos_form='offset', offset=0)
        add('inverse', **full, pos_form='per_token', direction='inverse')
        add('base500k', N=1, L=4, H=2, D=12, base=500000, pos_form='offset', offset=1000)
    write_file('rope_basic.txt', 'gen_golden.py', [
        'RoPE without scaling. Source: RoFormer (Su et al. 2021) eq. 34; GPT-J (interleaved) and GPT-NeoX',
        '(half_split) rotary. magnitude 1, logit_scale 1. seq_len = max(positions) + 1.'], cases)


# ---- scaling (HF modeling_rope_utils; vLLM; DeepSeek-V3; ggml)

def get_mscale(s, m=1):
    s, m = mpf(s), mpf(m)
    if s <= 1:
        return mpf(1)
    return mpf('0.1') * m * mp.log(s) + 1


def yarn_inv_freq(base, R, factor, M, beta_fast, beta_slow, truncate):
    """HF _compute_yarn_parameters (find_correction_range, linear_ramp_factor), in exact arithmetic."""
    base, factor, M = mpf(base), mpf(factor), mpf(M)

    def corr_dim(r):
        return R * mp.log(M / (mpf(r) * 2 * mp.pi)) / (2 * mp.log(base))

    low, high = corr_dim(beta_fast), corr_dim(beta_slow)
    if truncate:
        # guard: the library computes these in double; stay away from floor/ceil boundaries
        assert not near_integer(low) and not near_integer(high), (low, high)
        low, high = mp.floor(low), mp.ceil(high)
    low = max(low, mpf(0))
    high = min(high, mpf(R - 1))
    if low == high:
        high += mpf('0.001')
    w = default_inv_freq(base, R)
    out = []
    for i in range(R // 2):
        ramp = min(max((i - low) / (high - low), mpf(0)), mpf(1))
        extrap = 1 - ramp
        out.append((w[i] / factor) * (1 - extrap) + w[i] * extrap)
    return out


def llama3_inv_freq(base, R, factor, low_ff, high_ff, M):
    """HF _compute_llama3_parameters (Llama 3.1)."""
    factor, low_ff, high_ff, M = mpf(factor), mpf(low_ff), mpf(high_ff), mpf(M)
    low_wl, high_wl = M / low_ff, M / high_ff
    out = []
    for w in default_inv_freq(base, R):
        wl = 2 * mp.pi / w
        # guard: no wavelength within 1e-9 (relative) of a band edge
        assert abs(wl / low_wl - 1) > 1e-9 and abs(wl / high_wl - 1) > 1e-9
        if wl < high_wl:
            out.append(w)
        elif wl > low_wl:
            out.append(w / factor)
        else:
            s = (M / wl - low_ff) / (high_ff - low_ff)
            out.append((1 - s) * w / factor + s * w)
    return out


def gen_rope_scaling():
    tag = 'rope_scaling'
    positions = [[0, 1, 4097, 30000]]
    common = dict(style='half_split', N=1, L=4, H=2, pos_form='per_token', positions=positions)
    cases = []

    def add(name, D=32, base=10000, **kw):
        kw.setdefault('seq_len', 4)
        cases.append(rope_case(tag, name, D=D, base=base, **common, **kw))

    R = 32
    add('none_default')
    add('linear', scaling='linear', scaling_params=[('factor', 4)],
        inv_freq=[w / 4 for w in default_inv_freq(10000, R)])
    ntk_base = 10000 * mpf(8) ** (mpf(R) / (R - 2))
    add('ntk', scaling='ntk', scaling_params=[('base_rescale_factor', 8)], inv_freq=default_inv_freq(ntk_base, R))

    def dyn_base(base, factor, M, n):
        if n <= M:
            return mpf(base)
        return base * (mpf(factor) * n / M - (factor - 1)) ** (mpf(R) / (R - 2))

    for name, policy, seq_len in (('dynamic_ntk_hf_short', 'hf', 1000), ('dynamic_ntk_hf_long', 'hf', 8192),
                                  ('dynamic_ntk_fixed', 'fixed_max', 4)):
        n = seq_len if policy == 'hf' else 2048 * 4
        add(name, scaling='dynamic_ntk', seq_len=seq_len,
            scaling_params=[('factor', 4), ('original_max_positions', 2048), ('policy', policy)],
            inv_freq=default_inv_freq(dyn_base(10000, 4, 2048, n), R))

    def yarn(name, factor=4, M=4096, beta_fast=32, beta_slow=1, truncate=1, mscale=0, mscale_all_dim=0,
             attention_factor=None, D=32, base=10000, deepseek=False):
        inv = yarn_inv_freq(base, D, factor, M, beta_fast, beta_slow, truncate)
        logit = 1
        if deepseek:
            mag = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
            logit = get_mscale(factor, mscale_all_dim) ** 2
        elif attention_factor is not None:
            mag = mpf(attention_factor)
        elif mscale and mscale_all_dim:
            mag = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            mag = get_mscale(factor)
        sp = [('factor', factor), ('original_max_positions', M), ('beta_fast', beta_fast),
              ('beta_slow', beta_slow), ('truncate', truncate), ('mscale', mscale),
              ('mscale_all_dim', mscale_all_dim)]
        if attention_factor is not None:
            sp.append(('attention_factor', attention_factor))
        add(name, D=D, base=base, scaling='deepseek_yarn' if deepseek else 'yarn', scaling_params=sp,
            inv_freq=inv, magnitude=mag, logit_scale=logit)

    yarn('yarn_default')
    yarn('yarn_notruncate', truncate=0, factor=8, beta_fast=16, beta_slow=2)
    yarn('yarn_attention_factor', attention_factor=1.25)
    yarn('yarn_mscale', mscale=0.707, mscale_all_dim=1)
    yarn('deepseek_yarn', D=64, factor=40, mscale=1, mscale_all_dim=1, deepseek=True)
    yarn('deepseek_yarn_mscale', D=64, factor=40, mscale=0.707, mscale_all_dim=1, deepseek=True)

    for name, lo, hi in (('llama3', 1, 4), ('llama3_equal', 2, 2)):
        add(name, D=128, base=500000, scaling='llama3',
            scaling_params=[('factor', 8), ('low_freq_factor', lo), ('high_freq_factor', hi),
                            ('original_max_positions', 8192)],
            inv_freq=llama3_inv_freq(500000, 128, 8, lo, hi, 8192))

    # LongRoPE (HF _compute_longrope_parameters): short/long factors chosen by seq_len > M.
    short = [dbl(1 + mpf('0.05') * i) for i in range(R // 2)]
    long_ = [dbl(1 + mpf('1.5') * i) for i in range(R // 2)]
    M, factor = 4096, 32
    att = mp.sqrt(1 + mp.log(factor) / mp.log(M)) if factor > 1 else mpf(1)
    for name, seq_len in (('longrope_short', 4096), ('longrope_long', 4097)):
        ext = long_ if seq_len > M else short
        inv = [1 / (mpf(ext[i]) * mpf(10000) ** (mpf(2 * i) / R)) for i in range(R // 2)]
        add(name, scaling='longrope', seq_len=seq_len,
            scaling_params=[('factor', factor), ('original_max_positions', M), ('policy', 'hf')],
            scaling_arrays=[('short_factor', short), ('long_factor', long_)], inv_freq=inv, magnitude=att)

    ff = [float(1 + (i % 3)) for i in range(R // 2)]
    add('freq_factors', scaling='freq_factors', scaling_arrays=[('freq_factors', ff)],
        inv_freq=[w / mpf(f) for w, f in zip(default_inv_freq(10000, R), ff)])
    add('partial_linear', R=16, scaling='linear', scaling_params=[('factor', 2)],
        inv_freq=[w / 2 for w in default_inv_freq(10000, 16)])

    write_file('rope_scaling.txt', 'gen_golden.py', [
        'RoPE frequency scalings. Sources: HF transformers modeling_rope_utils.py; vLLM rotary_embedding',
        '(dynamic NTK fixed_max, DeepSeek YaRN); DeepSeek-V3 modeling; ggml rope_freqs.',
        'All: half_split, forward, per_token positions [0, 1, 4097, 30000], N=1 L=4 H=2.'], cases)


def gen_rope_long():
    tag = 'rope_long'
    positions = [[0, 1, 65535, 65536, 999999, 1000000, 1048575, 1048576]]
    common = dict(N=1, L=8, H=1, D=128, base=500000, pos_form='per_token', positions=positions,
                  seq_len=1048577)
    cases = [rope_case(tag, 'long_interleaved', style='interleaved', **common),
             rope_case(tag, 'long_half_split', style='half_split', **common),
             rope_case(tag, 'long_llama3', style='half_split', **common, scaling='llama3',
                       scaling_params=[('factor', 8), ('low_freq_factor', 1), ('high_freq_factor', 4),
                                       ('original_max_positions', 8192)],
                       inv_freq=llama3_inv_freq(500000, 128, 8, 1, 4, 8192))]
    write_file('rope_long.txt', 'gen_golden.py', [
        'RoPE at positions up to 2^20, base 500000, D = R = 128 (theta reduced mod 2*pi at 40 digits).'], cases)


# -------------------------------------------------------------------------------------------------- xPos

def gen_xpos():
    """torchscale XPOS.forward(x, offset, downscale): scale = zeta ** ((k + min_pos) / scale_base) with
    min_pos = -(L + offset) // 2, i.e. centre C = ceil((L + P0) / 2); sin/cos from fixed_pos_embedding of
    the (L + P0, D/2) scale tensor, i.e. theta = p * 10000^(-2i/D); last L rows kept."""
    tag = 'xpos'
    cases = []

    def add(name, N=2, L=7, D=16, P0=0, C=None, downscale=0, style='interleaved', tol='absolute',
            gamma=0.4, scale_base=512, base=10000):
        Cdef = (L + P0 + 1) // 2
        C = Cdef if C is None else C
        rng = rng_for(tag + '/' + name)
        x = bf16_inputs(rng, N * L * D)
        y = [mpf(v) for v in x]
        g = mpf(gamma)
        half = D // 2
        for l in range(L):
            p = P0 + l
            for i in range(half):
                zeta = (mpf(2 * i) / D + g) / (1 + g)
                s = zeta ** (mpf(p - C) / mpf(scale_base))
                if downscale:
                    s = 1 / s
                th = p * mpf(base) ** (-mpf(2 * i) / D)
                c, sn = mp.cos(th), mp.sin(th)
                for n in range(N):
                    b0 = (n * L + l) * D
                    a, b = (b0 + 2 * i, b0 + 2 * i + 1) if style == 'interleaved' else (b0 + i, b0 + i + half)
                    xa, xb = mpf(x[a]), mpf(x[b])
                    y[a] = s * (xa * c - xb * sn)
                    y[b] = s * (xb * c + xa * sn)
        c = Case(name)
        for k, v in (('head_dim', D), ('scale_base', scale_base), ('gamma', gamma), ('base', base),
                     ('offset', P0), ('center', C), ('center_default', int(C == Cdef)),
                     ('downscale', downscale), ('style', style), ('tolerance_mode', tol)):
            c.param(k, v)
        c.array('x', 'f64', [N, L, D], x)
        c.array('y', 'f64', [N, L, D], y)
        cases.append(c)

    add('default')
    add('offset3', P0=3)
    add('offset3_down', P0=3, downscale=1)
    add('half_split', style='half_split')
    add('kv_cache', P0=4090, L=6, C=2048)
    add('long_centre', P0=200000, L=8, C=200003)
    add('far_up', N=1, L=4, P0=30000, C=0, tol='relative')
    add('far_down', N=1, L=4, P0=30000, C=0, downscale=1, tol='relative')
    write_file('xpos.txt', 'gen_golden.py', [
        'xPos (Sun et al. 2022). Source: torchscale xpos_relative_position.py. x, y are (N, L, D).'], cases)


# ------------------------------------------------------------------------------------------------ compat

def gen_compat():
    tag = 'compat'
    cases = []

    # zeta RotaryEmbedding(dim, use_xpos, scale_base, interpolation_factor, base, base_rescale_factor)
    def zeta(name, dim=8, seq_len=6, use_xpos=0, scale_base=512, interpolation_factor=1, base=10000,
             base_rescale_factor=1):
        b = mpf(base) * mpf(base_rescale_factor) ** (mpf(dim) / (dim - 2))
        inv = [b ** (-mpf(2 * i) / dim) for i in range(dim // 2)]
        freqs, scale = [], []
        for t in range(seq_len):
            tt = mpf(t) / mpf(interpolation_factor)
            row = [tt * f for f in inv]
            freqs += row + row
            power = mpf(t - seq_len // 2) / mpf(scale_base)
            row = [((2 * i + mpf(2) / 5 * dim) / (mpf(7) / 5 * dim)) ** power for i in range(dim // 2)]
            scale += row + row
        c = Case(name)
        for k, v in (('dim', dim), ('use_xpos', use_xpos), ('scale_base', scale_base),
                     ('interpolation_factor', interpolation_factor), ('base', base),
                     ('base_rescale_factor', base_rescale_factor), ('seq_len', seq_len)):
            c.param(k, v)
        if not use_xpos:
            c.param('scale_is_one', 1)
        c.array('freqs', 'f64', [seq_len, dim], freqs)
        if use_xpos:
            c.array('scale', 'f64', [seq_len, dim], scale)
        cases.append(c)

    zeta('zeta_rotary_plain')
    zeta('zeta_rotary_xpos', use_xpos=1)
    zeta('zeta_rotary_scaled', seq_len=7, interpolation_factor=2, base=500, base_rescale_factor=1.5,
         use_xpos=1, scale_base=1024)

    # torchscale fixed_pos_embedding(x), x: (seq_len, dim); inv_freq_j = 10000^(-j/dim), j = 0..dim-1
    def fixed_pos(seq_len, dim):
        ang = [[t * mpf(10000) ** (-mpf(j) / dim) for j in range(dim)] for t in range(seq_len)]
        return ([mp.sin(a) for row in ang for a in row], [mp.cos(a) for row in ang for a in row])

    sin, cos = fixed_pos(5, 4)
    c = Case('fixed_pos_embedding')
    c.param('seq_len', 5)
    c.param('dim', 4)
    c.array('sin', 'f64', [5, 4], sin)
    c.array('cos', 'f64', [5, 4], cos)
    cases.append(c)

    # torchscale apply_rotary_pos_emb(x, sin, cos, scale): interleaved pairs, sin/cos (L, D/2), scalar scale
    B, L, D, scale = 2, 5, 8, 0.5
    sin, cos = fixed_pos(L, D // 2)
    x = bf16_inputs(rng_for(tag + '/apply_rotary_pos_emb'), B * L * D)
    y = [mpf(v) for v in x]
    for b in range(B):
        for l in range(L):
            for i in range(D // 2):
                a = (b * L + l) * D + 2 * i
                s_, c_ = sin[l * (D // 2) + i], cos[l * (D // 2) + i]
                xa, xb = mpf(x[a]), mpf(x[a + 1])
                y[a] = scale * (xa * c_ - xb * s_)
                y[a + 1] = scale * (xb * c_ + xa * s_)
    c = Case('apply_rotary_pos_emb')
    c.param('scale', scale)
    c.array('x', 'f64', [B, L, D], x)
    c.array('sin', 'f64', [L, D // 2], sin)
    c.array('cos', 'f64', [L, D // 2], cos)
    c.array('y', 'f64', [B, L, D], y)
    cases.append(c)

    # tiny-llm RoPE(dims, seq_len, base, traditional)(x, offset): traditional = interleaved
    for trad, st in (('traditional', 'interleaved'), ('half', 'half_split')):
        cases.append(rope_case(tag, 'tiny_llm_slice_' + trad, style=st, N=1, L=5, H=2, D=8, seq_len=20,
                               pos_form='offset', offset=5))
        cases.append(rope_case(tag, 'tiny_llm_requests_' + trad, style=st, N=2, L=5, H=2, D=8, seq_len=20,
                               pos_form='per_sequence', seq_offsets=[0, 7]))
    write_file('compat.txt', 'gen_golden.py', [
        'Python API compatibility: zeta RotaryEmbedding, torchscale fixed_pos_embedding /',
        'apply_rotary_pos_emb, tiny-llm RoPE.'], cases)


# ------------------------------------------------------------------------------------------------- MRoPE

def mrope_axis(sections, layout):
    T, H, W = sections
    axes = []
    for i in range(T + H + W):
        if layout == 'chunked':
            axes.append(0 if i < T else (1 if i < T + H else 2))
        elif i % 3 == 1 and i < 3 * H:
            axes.append(1)
        elif i % 3 == 2 and i < 3 * W:
            axes.append(2)
        else:
            axes.append(0)
    return axes


def gen_mrope():
    tag = 'mrope'
    cases = []

    def add(name, *, D, sections, layout, N=1, L=6, H=2, base=10000, freq_mode='standard', pos=None):
        R = 2 * sum(sections)
        rng = rng_for(tag + '/' + name)
        axes = mrope_axis(sections, layout)
        if freq_mode == 'standard':
            inv_freq = default_inv_freq(base, R)
        else:  # sectioned: the frequency index restarts in each section, exponent over 2*size
            inv_freq = []
            for size in sections:
                inv_freq += [mpf(base) ** (-mpf(j) / size) for j in range(size)]
        if pos is None:
            pos = rng.integers(0, 3000, size=(N, 3, L)).tolist()
            form = 'per_token'
        else:
            form = 'shared'
        x = bf16_inputs(rng, N * L * H * D)
        y = [mpf(v) for v in x]
        half = R // 2
        for n in range(N):
            p3 = pos if form == 'shared' else pos[n]
            for l in range(L):
                for i in range(half):
                    th = p3[axes[i]][l] * inv_freq[i]
                    c, sn = mp.cos(th), mp.sin(th)
                    for h in range(H):
                        b0 = ((n * L + l) * H + h) * D
                        a, b = b0 + i, b0 + i + half
                        xa, xb = mpf(x[a]), mpf(x[b])
                        y[a] = xa * c - xb * sn
                        y[b] = xb * c + xa * sn
        c = Case(name)
        for k, v in (('style', 'half_split'), ('head_dim', D), ('rotary_dim', R), ('base', base),
                     ('mrope_layout', layout), ('sections', ','.join(str(v) for v in sections)),
                     ('freq_mode', freq_mode), ('pos_form', form)):
            c.param(k, v)
        c.array('inv_freq', 'f64', [half], inv_freq)
        c.array('axis', 'i64', [half], axes)
        if form == 'shared':
            c.array('positions', 'i64', [3, L], [v for row in pos for v in row])
        else:
            c.array('positions', 'i64', [N, 3, L], [v for blk in pos for row in blk for v in row])
        c.array('x', 'f64', [N, L, H, D], x)
        c.array('y', 'f64', [N, L, H, D], y)
        cases.append(c)

    grid = [[0, 1, 2, 2, 2, 2, 8], [0, 1, 2, 2, 3, 3, 8], [0, 1, 2, 3, 2, 3, 8]]
    grid = [row[:6] for row in grid]
    add('qwen2vl_chunked', D=16, sections=(2, 3, 3), layout='chunked', pos=grid)
    add('qwen3vl_interleaved', D=24, sections=(4, 4, 4), layout='interleaved', pos=grid)
    add('qwen3vl_uneven', D=26, sections=(5, 4, 4), layout='interleaved', pos=grid)
    add('per_token_chunked', D=16, sections=(2, 3, 3), layout='chunked', N=2, L=4, H=3)
    add('vision_2d', D=16, sections=(0, 4, 4), layout='chunked', freq_mode='sectioned', pos=grid)
    write_file('mrope.txt', 'gen_golden.py', [
        'Multimodal RoPE: Qwen2-VL chunked sections, Qwen3-VL interleaved sections, Qwen2-VL vision 2D',
        '(frequency index restarting per section). half_split pairs, magnitude 1.'], cases)


if __name__ == '__main__':
    gen_rope_basic()
    gen_rope_scaling()
    gen_rope_long()
    gen_xpos()
    gen_compat()
    gen_mrope()
