#!/usr/bin/env python3
"""Generate tests/golden/alibi.txt, the ALiBi golden data (format: FORMAT.md in this folder).

Run:  python3 tests/golden/gen_alibi.py      (writes alibi.txt next to this script)

Everything is computed in mpmath at 40 significant digits from exact inputs. Nothing is imported from posenc
(nor from gen_golden.py): this file is an independent statement of the formulas.

Sources:
  Press, Smith, Lewis 2022, "Train Short, Test Long: Attention with Linear Biases Enables Input Length
  Extrapolation" (ICLR 2022), section 3, and its reference implementation `get_slopes`
  (github.com/ofirpress/attention_with_linear_biases, fairseq/models/transformer.py): for a power of two n
  the slopes are the geometric sequence start * ratio^i with start = ratio = 2^(-2^-(log2(n) - 3)) = 2^(-8/n);
  otherwise the slopes of the largest power of two n below H, followed by get_slopes(2n)[0::2][:H - n].
  BLOOM / Hugging Face transformers `build_alibi_tensor` (modeling_bloom.py): base = 2^(-(2^-(log2(n) - 3))),
  powers 1..n, then extra_base = 2^(-(2^-(log2(2n) - 3))) to the odd powers 1, 3, ..., 2(H - n) - 1.
  ggml `ggml_soft_max_ext` (max_bias generalisation): m0 = 2^(-max_bias / n), m1 = 2^(-max_bias / 2 / n),
  slope_h = m0^(h + 1) for h < n, else m1^(2(h - n) + 1).
  The bias: ALiBi adds slope * (j - i) to the score of query i and key j (the paper's figure 3 shows the
  causal part, j <= i); with a KV cache the query sits at position i + offset. The symmetric form
  -slope * |j - i - offset| is the one llama.cpp builds for non-causal attention (its KQ mask holds -|p0 - p1|).

The fp32 arithmetic (posenc::alibi_arithmetic::fp32; cases `fp32_*`): what float32 engines compute, e.g.
llama.cpp's ggml_soft_max_ext (a float slope times the float distance of its KQ mask, fused into the score by
ggml_vec_mad_f32's FMA): the slope rounded to float, the distance j - q rounded to float, then
  y = RN_f(RN_f(slope) * RN_f(d) + x)  (one rounding of the exact sum: a float fma),
  bias = RN_f(RN_f(slope) * RN_f(d))   (the bias written alone),
with RN_f the nearest float (ties to even), evaluated here in mpmath at 24 bits from exact values.

The generator checks that the three slope constructions agree exactly (for max_bias 8, where the paper and
BLOOM apply) before writing anything.
"""

import math

from mpmath import mp, mpf

from golden_io import Case, bf16_inputs, rng_for, write_file

FNAME = 'alibi.txt'


# ------------------------------------------------------------------------------------------------ slopes

def pow2_floor(h):
    n = 1
    while 2 * n <= h:
        n *= 2
    return n


def slopes_formula(H, max_bias):
    """CLI_SPEC.md / ggml: n = largest power of two <= H; 2^(-mb (h+1)/n) for h < n, else 2^(-mb (2(h-n)+1)/(2n))."""
    n = pow2_floor(H)
    mb = mpf(max_bias)
    out = []
    for h in range(H):
        if h < n:
            out.append(mpf(2) ** (-mb * (h + 1) / n))
        else:
            out.append(mpf(2) ** (-mb * (2 * (h - n) + 1) / (2 * n)))
    return out


def slopes_paper(H):
    """The paper's reference get_slopes (max_bias 8), transcribed to mpmath."""
    def power_of_2(n):
        start = mpf(2) ** (-(mpf(2) ** -(mp.log(n, 2) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(H).is_integer():
        return power_of_2(H)
    closest = 2 ** math.floor(math.log2(H))
    return power_of_2(closest) + slopes_paper(2 * closest)[0::2][:H - closest]


def slopes_bloom(H):
    """HF build_alibi_tensor (max_bias 8), transcribed to mpmath."""
    closest = 2 ** math.floor(math.log2(H))
    base = mpf(2) ** (-(mpf(2) ** -(mp.log(closest, 2) - 3)))
    out = [base ** p for p in range(1, closest + 1)]
    if closest != H:
        extra_base = mpf(2) ** (-(mpf(2) ** -(mp.log(2 * closest, 2) - 3)))
        out += [extra_base ** p for p in range(1, 1 + 2 * (H - closest), 2)]
    return out


def slopes_ggml(H, max_bias):
    """ggml_soft_max_ext's m0 / m1 powers, in exact arithmetic."""
    n = pow2_floor(H)
    m0 = mpf(2) ** (-mpf(max_bias) / n)
    m1 = mpf(2) ** (-mpf(max_bias) / 2 / n)
    return [m0 ** (h + 1) if h < n else m1 ** (2 * (h - n) + 1) for h in range(H)]


def slopes(H, max_bias):
    ref = slopes_formula(H, max_bias)
    others = [slopes_ggml(H, max_bias)]
    if max_bias == 8:
        others += [slopes_paper(H), slopes_bloom(H)]
    for other in others:
        assert len(other) == H
        for a, b in zip(ref, other):
            assert abs(a - b) <= mpf('1e-35') * a, (H, max_bias, a, b)
    return ref


def round_f32(v):
    """The float nearest the real v (ties to even); the values here are zero or normal floats."""
    if v == 0:
        return mpf(0)
    with mp.workprec(24):
        r = +mpf(v)
    assert mpf(2) ** -126 <= abs(r) < mpf(2) ** 128, v
    return r


# -------------------------------------------------------------------------------------------------- file

def slopes_case(H, max_bias):
    tag = ('%g' % max_bias).replace('.', 'p')
    c = Case('slopes_h%d_mb%s' % (H, tag))
    c.param('num_heads', H)
    c.param('max_bias', max_bias)
    c.array('slopes', 'f64', [H], slopes(H, max_bias))
    return c


def bias_case(name, *, H, Lq, Lk, offset, max_bias=8, head_begin=0, head_end=None, form='linear'):
    head_end = H if head_end is None else head_end
    s = slopes(H, max_bias)
    vals = []
    for h in range(head_begin, head_end):
        for i in range(Lq):
            for j in range(Lk):
                d = j - (i + offset)
                vals.append(s[h] * (d if form == 'linear' else -abs(d)))
    c = Case(name)
    for k, v in (('num_heads', H), ('max_bias', max_bias), ('head_begin', head_begin), ('head_end', head_end),
                 ('query_len', Lq), ('key_len', Lk), ('query_offset', offset), ('form', form)):
        c.param(k, v)
    c.array('bias', 'f64', [head_end - head_begin, Lq, Lk], vals)
    return c


def fp32_case(name, *, H, Lq, Lk, offset, max_bias=8, head_begin=0, head_end=None, form='linear', scale=1.0):
    """The fp32 arithmetic on scores x (bfloat16-exact, uniform in [-scale, scale]): y = x + bias with one float
    rounding, and the bias alone, both from the float slope and the float distance."""
    head_end = H if head_end is None else head_end
    sf = [round_f32(v) for v in slopes(H, max_bias)]
    count = (head_end - head_begin) * Lq * Lk
    x = bf16_inputs(rng_for(FNAME + '/' + name), count, -scale, scale)
    ys, bias = [], []
    k = 0
    for h in range(head_begin, head_end):
        for i in range(Lq):
            for j in range(Lk):
                d = j - (i + offset)
                slope = sf[h] if form == 'linear' or d <= 0 else -sf[h]
                df = round_f32(mpf(d))
                ys.append(round_f32(slope * df + mpf(x[k])))
                bias.append(round_f32(slope * df))
                k += 1
    c = Case(name)
    for key, v in (('num_heads', H), ('max_bias', max_bias), ('head_begin', head_begin), ('head_end', head_end),
                   ('query_len', Lq), ('key_len', Lk), ('query_offset', offset), ('form', form),
                   ('arithmetic', 'fp32')):
        c.param(key, v)
    shape = [head_end - head_begin, Lq, Lk]
    c.array('x', 'f64', shape, x)
    c.array('y', 'f64', shape, ys)
    c.array('bias', 'f64', shape, bias)
    return c


def main():
    cases = []
    for H in (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 40, 64, 66, 71):
        cases.append(slopes_case(H, 8))
    for H in (6, 12, 32):
        cases.append(slopes_case(H, 16))
    for H in (5, 8, 20):
        cases.append(slopes_case(H, 1.5))

    cases += [
        bias_case('bias_h8_prefill', H=8, Lq=5, Lk=5, offset=0),
        bias_case('bias_h6_decode', H=6, Lq=1, Lk=18, offset=17),
        bias_case('bias_h12_chunk', H=12, Lq=3, Lk=10, offset=7),
        bias_case('bias_h40_shard', H=40, Lq=4, Lk=6, offset=2, head_begin=10, head_end=20),
        bias_case('bias_h71_shard_tail', H=71, Lq=2, Lk=9, offset=5, head_begin=60, head_end=71),
        bias_case('bias_h5_symmetric', H=5, Lq=6, Lk=9, offset=1, form='symmetric'),
        bias_case('bias_h3_mb16_symmetric', H=3, Lq=4, Lk=4, offset=0, max_bias=16, form='symmetric'),
        bias_case('bias_h7_mb1p5_keys_after', H=7, Lq=3, Lk=12, offset=2, max_bias=1.5),
        # Far from the origin: |bias| up to 25000 (head 0 of 4: slope 1/4), still inside Eigen::half's range.
        bias_case('bias_h4_far', H=4, Lq=2, Lk=6, offset=100000),
        # fp32: slopes that are not powers of two (H = 12, 40), a shard, the symmetric form, scores of
        # magnitude 64 (sums that round), rows longer than a vector (Lk 37: body and tail), and distances past
        # 2^24, where the float distance itself rounds.
        fp32_case('fp32_h12_chunk', H=12, Lq=3, Lk=37, offset=30, scale=64.0),
        fp32_case('fp32_h40_shard', H=40, Lq=2, Lk=21, offset=1000, head_begin=10, head_end=20, scale=32.0),
        fp32_case('fp32_h5_symmetric', H=5, Lq=4, Lk=19, offset=3, form='symmetric', scale=64.0),
        fp32_case('fp32_h6_beyond_2p24', H=6, Lq=2, Lk=5, offset=2 ** 24 + 3, max_bias=16, scale=4.0),
    ]

    write_file(FNAME, 'gen_alibi.py', [
        'ALiBi slopes (Press et al. 2022, generalised by max_bias as ggml) and bias tensors [H_local, Lq, Lk].'], cases)


if __name__ == '__main__':
    main()
