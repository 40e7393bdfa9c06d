#!/usr/bin/env python3
"""Generate quant.txt: the ground truth of posenc's quantisation of RoPE outputs and KV-cache appends to int8,
fp8 E4M3 and fp8 E5M2 (format: FORMAT.md in this folder; issue #8 item 6).

Run:  python3 tests/golden/gen_quant.py            (writes quant.txt next to this script)
      python3 tests/golden/gen_quant.py --check    (also cross-checks the fp8 rounding against ml_dtypes if it
                                                    is importable, and counts where vLLM's int8 arithmetic
                                                    would give other codes; writes nothing else)

Written from the rules below, not from posenc's C++ (include/posenc/detail/math/quant.hpp); nothing is imported
from posenc. Float32 arithmetic (the scale, its reciprocal, the multiply) is numpy float32, which is IEEE 754
binary32 with round-to-nearest-even on every platform; every rounding to an integer or to an 8-bit format is
done on exact rationals (fractions.Fraction): int8 by Python's round() of a Fraction (ties to even), fp8 by a
search over the exact values of all codes, decoded from the spec's definition below. The RoPE rotation is
computed in mpmath at 40 digits and rounded once to float32, exactly (no double rounding through float64).

The rules (quant.hpp states the same rules)
-------------------------------------------
int8, symmetric (model: vLLM scaled_int8_quant, csrc/quantization/compressed_tensors/int8_quant_kernels.cu):
  inv = 1.0f / scale (float32 division); v = x * inv (float32 multiply, rounded to float32);
  q = round-half-to-even(v) saturated to [-128, 127]; NaN -> 0 (+-inf saturate to 127 / -128).
  Dynamic per-token-per-head scale: scale = absmax / 127.0f (float32 division) over the head's D values (the
  rotated values, in float32); absmax == 0 gives scale 0 and inv = 0 (defined), so every code is 0.
  Per-head (static) scale: given by the caller, finite and > 0.
  vLLM differs in two float32 steps: its static kernel divides (x / scale) and its dynamic kernel multiplies
  by 127.0f / absmax; both can move v by one ulp and so change a code where v lies at a rounding tie.
  posenc multiplies by the rounded reciprocal of the stored scale in both cases, so that a code depends only
  on x and on the scale that is stored next to it. `--check` counts the differences on the fused cases.
  The rounding and saturation are those of PTX cvt.rni.sat.s8.f32 (vLLM's float_to_int8_rn on CUDA).

fp8, given scale: v = x * (1.0f / scale) in float32, then rounded to nearest (ties to even mantissa) into the
format, saturating. Formats: OCP 8-bit Floating Point Specification (OFP8), Revision 1.0, 2023 (AMD, Arm,
Intel, Meta, Microsoft, NVIDIA, Qualcomm), table 1:
  E4M3 ("E4M3FN"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; NaN = S.1111.111; max normal
      S.1111.110 = 448; min normal 2^-6; subnormals m * 2^-9 (m = 1..7).
  E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-like: inf = S.11111.00, NaN = S.11111.{01,10,11};
      max normal S.11110.11 = 57344; min normal 2^-14; subnormals m * 2^-16 (m = 1..3).
  Rounding: to the nearest value of the format (subnormals included); a tie goes to the code with an even
  mantissa. Saturation (OFP8 "saturating" conversion, NVIDIA __NV_SATFINITE): a finite |v| at or beyond max
  gives +-max (values that would round past max, or to E4M3's NaN pattern, too); +-inf gives +-max.
  Underflow to zero keeps the sign (-tiny -> 0x80). NaN gives the canonical NaN with the input's sign bit:
  E4M3 0x7F | sign, E5M2 0x7E | sign (the quiet NaN of ml_dtypes, mantissa 0b10).
  (NVIDIA's cuda_fp8.hpp software path returns 0x7F for any NaN input, sign dropped, in both formats.)

Cases (all records are described in FORMAT.md, "Quantisation"):
  conversion cases: float32 values v (the product x * inv), as bit patterns, with the codes of all three
  conversions; scaled_* cases: x, a float32 scale and the codes of x * (1.0f / scale), with inputs chosen
  where x / scale would give another code; fused_* cases: RoPE (N=1, L=3, H=2, positions 0, 1, 100000,
  base 10000) of random float32 inputs, the rotated float32 values and their int8 (dynamic and per-head), e4m3
  and e5m2 codes.
"""

import bisect
import math
import struct
import sys
from fractions import Fraction

import numpy as np
from mpmath import mp, mpf

from golden_io import Case, rng_for, write_file

mp.dps = 40
F32 = np.float32
FNAME = 'quant.txt'


# ------------------------------------------------------------------------------------------- float32 helpers

def bits_of(v):
    """The bit pattern of a float32 value (np.float32 or a Python float exactly representable in float32)."""
    return struct.unpack('<I', struct.pack('<f', float(v)))[0]


def bits_of_f32(v):
    """Bit pattern of an np.float32 (keeps NaN payloads, which a trip through Python float might not)."""
    return int(np.array([v], dtype=np.float32).view(np.uint32)[0])


def f32(v):
    """np.float32 from a bit pattern (int) or a value exactly representable in float32."""
    if isinstance(v, int) and not isinstance(v, bool):
        return np.array([v], dtype=np.uint32).view(np.float32)[0]
    r = F32(v)
    assert math.isnan(v) or float(r) == float(v), v
    return r


def nextup(v):
    return np.nextafter(F32(v), F32(np.inf))


def nextdown(v):
    return np.nextafter(F32(v), F32(-np.inf))


def signbit(v):
    return bits_of_f32(F32(v)) >> 31


def exact(v):
    """Exact rational value of a finite float (float32 values are exact in float64)."""
    return Fraction(float(v))


def mpf_fraction(v):
    """Exact value of a finite mpf: (-1)^sign * man * 2^exp from its (sign, man, exp, bc) tuple."""
    sign, man, exp, _ = mpf(v)._mpf_
    assert man != 0 or exp == 0, v                              # zero, not inf / nan
    r = Fraction(man) * Fraction(2) ** exp
    return -r if sign else r


def round_to_float32(r):
    """Exact round-to-nearest-even of a rational (normal float32 range only) to float32, as np.float32."""
    if r == 0:
        return F32(0.0)
    a = abs(r)
    e = a.numerator.bit_length() - a.denominator.bit_length()   # 2^e <= a < 2^(e+2)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    assert -126 <= e <= 127, r
    quantum = Fraction(2) ** (e - 23)
    q = round(a / quantum)                                      # Fraction.__round__: ties to even
    v = float(q * quantum)                                      # 24 significant bits: exact in double
    return F32(math.copysign(v, r))


# -------------------------------------------------------------------------------------------------- int8

def ref_int8(v):
    """int8 code of a float32 value v (already multiplied by inv): nearest even, saturated, NaN -> 0."""
    v = F32(v)
    if np.isnan(v):
        return 0
    if np.isinf(v):
        return 127 if v > 0 else -128
    q = round(exact(v))                                         # ties to even
    return max(-128, min(127, q))


def f32_div(a, b):
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        return F32(F32(a) / F32(b))


def f32_mul(a, b):
    with np.errstate(invalid='ignore', over='ignore', under='ignore'):
        return F32(F32(a) * F32(b))


def inverse_scale(scale):
    """inv = 1.0f / scale in float32; scale 0 (a dynamic scale of an all-zero head) gives inv = 0."""
    return F32(0.0) if float(scale) == 0.0 else f32_div(1.0, scale)


def dynamic_int8_scale(values):
    """absmax / 127.0f over one head's float32 values."""
    absmax = F32(0.0)
    for v in values:
        absmax = max(absmax, abs(F32(v)))
    return f32_div(absmax, 127.0)


# --------------------------------------------------------------------------------------------------- fp8

class Fp8Format:
    """One OFP8 format, its value of every code from the spec's definition, and rounding into it by search
    over the sorted finite values."""

    def __init__(self, name, ebits, mbits, bias, has_inf, nan_code):
        self.name, self.ebits, self.mbits, self.bias, self.has_inf = name, ebits, mbits, bias, has_inf
        self.nan_code = nan_code
        self.codes = []        # positive finite codes, ascending value
        self.values = []       # their exact values
        for code in range(0x80):
            v = self.decode_exact(code)
            if isinstance(v, Fraction):
                self.codes.append(code)
                self.values.append(v)
        order = sorted(range(len(self.codes)), key=lambda k: self.values[k])
        self.codes = [self.codes[k] for k in order]
        self.values = [self.values[k] for k in order]
        self.max = self.values[-1]
        self.max_code = self.codes[-1]

    def decode_exact(self, code):
        """Fraction for finite codes, 'inf' / '-inf' / 'nan' otherwise (OFP8 table 1)."""
        s = code >> 7
        e = (code >> self.mbits) & ((1 << self.ebits) - 1)
        m = code & ((1 << self.mbits) - 1)
        top = (1 << self.ebits) - 1
        if self.has_inf and e == top:
            return ('-inf' if s else 'inf') if m == 0 else 'nan'
        if not self.has_inf and e == top and m == (1 << self.mbits) - 1:
            return 'nan'
        if e == 0:
            mag = Fraction(m, 1 << self.mbits) * Fraction(2) ** (1 - self.bias)
        else:
            mag = (1 + Fraction(m, 1 << self.mbits)) * Fraction(2) ** (e - self.bias)
        return -mag if s else mag

    def encode(self, v):
        """Code of a float32 value: nearest, ties to the even code, saturating, canonical NaN with sign."""
        v = F32(v)
        sign = signbit(v) << 7
        if np.isnan(v):
            return self.nan_code | sign
        if np.isinf(v):
            return self.max_code | sign
        a = abs(exact(v))
        if a >= self.max:
            return self.max_code | sign
        k = bisect.bisect_right(self.values, a) - 1          # values[k] <= a < values[k+1]
        lo, hi = self.values[k], self.values[k + 1]
        if a - lo < hi - a:
            code = self.codes[k]
        elif a - lo > hi - a:
            code = self.codes[k + 1]
        else:
            code = self.codes[k] if self.codes[k] % 2 == 0 else self.codes[k + 1]
        return code | sign

    def midpoints(self):
        """Every tie: between consecutive values, and between max and the next value the format would have
        without its top encodings (E4M3: 480, E5M2: 65536)."""
        vs = self.values
        out = [(vs[k] + vs[k + 1]) / 2 for k in range(len(vs) - 1)]
        out.append(self.max + Fraction(2) ** (self.max_exponent() - self.mbits - 1))
        return out

    def max_exponent(self):
        e = 0
        while Fraction(2) ** (e + 1) <= self.max:
            e += 1
        return e


E4M3 = Fp8Format('e4m3', 4, 3, 7, False, 0x7F)
E5M2 = Fp8Format('e5m2', 5, 2, 15, True, 0x7E)
assert E4M3.max == 448 and E5M2.max == 57344
assert E4M3.values[1] == Fraction(1, 512) and E5M2.values[1] == Fraction(1, 65536)


def codes_of(v):
    return ref_int8(v), E4M3.encode(v), E5M2.encode(v)


# ------------------------------------------------------------------------------------------------- cases

def conversion_case(name, values):
    """values: float32 bit patterns (ints). Arrays v_bits, int8, e4m3, e5m2."""
    c = Case(name)
    c.param('kind', 'conversion')
    vs = [f32(b) for b in values]
    c.array('v_bits', 'i64', [len(values)], values)
    c.array('int8', 'i64', [len(values)], [ref_int8(v) for v in vs])
    c.array('e4m3', 'i64', [len(values)], [E4M3.encode(v) for v in vs])
    c.array('e5m2', 'i64', [len(values)], [E5M2.encode(v) for v in vs])
    return c


def with_neighbours(vals, negated_ties=True):
    """Each value with its float32 neighbours below and above; with negated_ties also -value."""
    out = []
    for v in vals:
        v = F32(float(v))
        out += [bits_of(nextdown(v)), bits_of(v), bits_of(nextup(v))]
        if negated_ties:
            out.append(bits_of(-v))
    return out


def gen_conversion_cases():
    cases = []
    # int8 ties k + 0.5 (nearest even) with their float32 neighbours, around zero and the saturation edges;
    # the tie itself for every k in between.
    near = [k + 0.5 for k in list(range(-131, -120)) + list(range(-6, 6)) + list(range(120, 131))]
    cases.append(conversion_case('int8_ties', with_neighbours(near, negated_ties=False) +
                                 [bits_of(k + 0.5) for k in range(-120, 120) if not -6 <= k < 6]))
    # every tie of each fp8 format (between consecutive values, 0 and the smallest subnormal, max and the next
    # power) with its float32 neighbours, and the negated tie.
    for fmt in (E4M3, E5M2):
        mids = fmt.midpoints()
        for m in mids:
            assert Fraction(float(m)) == m and float(F32(float(m))) == float(m), (fmt.name, m)
        cases.append(conversion_case('%s_ties' % fmt.name, with_neighbours([float(m) for m in mids])))
    # exact values of every positive finite code of both formats (each must map to its own code)
    cases.append(conversion_case('fp8_exact_values', sorted(set(
        bits_of(float(v)) for fmt in (E4M3, E5M2) for v in fmt.values))))
    # special values
    specials = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FA00000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x80800000,
                0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF]
    for v in (127.0, 127.49999, 127.5, 128.0, 129.0, -128.0, -128.5, -129.0, 1e6, -1e6, 1e30, -1e30,
              448.0, 449.0, 464.0, 479.0, 480.0, 500.0, 512.0, 57344.0, 61440.0, 65536.0, 1e5,
              2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 2.0 ** -11, 2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 2.0 ** -18,
              2.0 ** -30, 2.0 ** -126, 0.5, 1.0, 1.5, 2.5):
        for w in (nextdown(v), F32(v), nextup(v)):
            for s in (1.0, -1.0):
                specials.append(bits_of(s * float(w)))
    cases.append(conversion_case('specials', specials))
    # random float32 values over many binades (exponents 2^-30 .. 2^20), random mantissas and signs
    rng = rng_for(FNAME + '/random_binades')
    rnd = []
    for _ in range(200):
        e = int(rng.integers(-30, 21))
        mant = int(rng.integers(0, 1 << 23))
        sign = int(rng.integers(0, 2))
        rnd.append((sign << 31) | ((e + 127) << 23) | mant)
    cases.append(conversion_case('random_binades', rnd))
    # dense random values where the codes live: |v| < 2 (fp8 fine steps) and |v| < 140 (int8)
    rng = rng_for(FNAME + '/random_dense')
    dense = [bits_of(F32(u)) for u in rng.uniform(-2.0, 2.0, 64)]
    dense += [bits_of(F32(u)) for u in rng.uniform(-140.0, 140.0, 64)]
    cases.append(conversion_case('random_dense', dense))
    return cases


def divide_differs(x, scale):
    """Whether x / scale and x * (1.0f / scale) give different codes in some format."""
    a = f32_div(x, scale)
    b = f32_mul(x, inverse_scale(scale))
    return codes_of(a) != codes_of(b)


def scaled_case(name, scale, rng):
    """x and the codes of x * (1.0f / scale). Inputs: for every int8 tie and every fp8 tie in range, the
    float32 values of x nearest tie * scale (+-2 ulp), keeping those where dividing gives other codes; plus
    random x."""
    scale = F32(scale)
    inv = inverse_scale(scale)
    xs = []
    targets = [Fraction(2 * k + 1, 2) for k in range(-129, 129)]
    targets += [m for fmt in (E4M3, E5M2) for m in fmt.midpoints() if m * exact(scale) < 2 ** 100]
    for t in targets:
        centre = round_to_float32(t * exact(scale))
        w = nextdown(nextdown(centre))
        for _ in range(5):
            if divide_differs(w, scale) and bits_of(w) not in xs:
                xs.append(bits_of(w))
            w = nextup(w)
    found = len(xs)
    if found > 24:                                   # keep 24, spread over the range of ties
        xs = [xs[(k * found) // 24] for k in range(24)]
    lim = 1.5 * 448.0 * float(scale)
    xs += [bits_of(F32(u)) for u in rng.uniform(-lim, lim, 24)]
    c = Case(name)
    c.param('kind', 'scaled')
    c.param('scale', float(scale))
    c.param('inv', float(inv))
    c.param('divide_differs', min(found, 24))
    vs = [f32_mul(f32(b), inv) for b in xs]
    c.array('x_bits', 'i64', [len(xs)], xs)
    c.array('int8', 'i64', [len(xs)], [ref_int8(v) for v in vs])
    c.array('e4m3', 'i64', [len(xs)], [E4M3.encode(v) for v in vs])
    c.array('e5m2', 'i64', [len(xs)], [E5M2.encode(v) for v in vs])
    return c, found


def gen_scaled_cases():
    cases = []
    for name, s in (('scaled_0p01', 0.01), ('scaled_inv127', 1.0 / 127.0), ('scaled_0p3', 0.3),
                    ('scaled_3em5', 3e-5)):
        c, found = scaled_case(name, s, rng_for(FNAME + '/' + name))
        assert found > 0, name
        cases.append(c)
    return cases


# ---- fused RoPE + quantisation

def rope_rotate(x, shape, positions, style, base):
    """Exact RoPE (RoFormer eq. 34) of float32 inputs, rounded once to float32. Pair i at angle p * w_i,
    w_i = base^(-2i/D): half_split (i, i + D/2), interleaved (2i, 2i + 1); out_a = x_a cos - x_b sin,
    out_b = x_b cos + x_a sin."""
    N, L, H, D = shape
    y = [None] * len(x)
    w = [mpf(base) ** (-mpf(2 * i) / D) for i in range(D // 2)]
    for n in range(N):
        for l in range(L):
            p = positions[n][l]
            for i in range(D // 2):
                th = p * w[i]
                c, s = mp.cos(th), mp.sin(th)
                for h in range(H):
                    o = ((n * L + l) * H + h) * D
                    a, b = (o + i, o + i + D // 2) if style == 'half_split' else (o + 2 * i, o + 2 * i + 1)
                    xa, xb = mpf(float(x[a])), mpf(float(x[b]))
                    y[a] = round_to_float32(mpf_fraction(xa * c - xb * s))
                    y[b] = round_to_float32(mpf_fraction(xb * c + xa * s))
    return y, w


def fused_inputs(rng, count):
    """Random float32 values: three quarters uniform in [-1, 1], one quarter scaled by 2^-k (k = 1..14), so
    that small codes and fp8 subnormals occur."""
    out = []
    for _ in range(count):
        u = float(rng.uniform(-1.0, 1.0))
        if rng.integers(0, 4) == 0:
            u *= 2.0 ** -int(rng.integers(1, 15))
        out.append(F32(u))
    return out


def fused_case(style, D, zero_head):
    N, L, H = 1, 3, 2
    base = 10000
    positions = [[0, 1, 100000]]
    name = 'fused_%s_d%d' % (style, D)
    rng = rng_for(FNAME + '/' + name)
    x = fused_inputs(rng, N * L * H * D)
    if zero_head:                                   # token 0, head 1: all zero -> dynamic scale 0
        for d in range(D):
            x[(0 * H + 1) * D + d] = F32(0.0)
    y, w = rope_rotate(x, (N, L, H, D), positions, style, base)
    int8_scale = [F32(0.01), F32(1.0 / 127.0)]
    e4m3_scale = [F32(0.0025), F32(1.0 / 448.0)]
    e5m2_scale = [F32(2e-5), F32(1.0 / 40000.0)]

    dyn_scale, dyn, st, q4, q5 = [], [], [], [], []
    for t in range(N * L):
        for h in range(H):
            row = y[(t * H + h) * D:(t * H + h + 1) * D]
            s = dynamic_int8_scale(row)
            dyn_scale.append(s)
            inv = inverse_scale(s)
            dyn += [ref_int8(f32_mul(v, inv)) for v in row]
            st += [ref_int8(f32_mul(v, inverse_scale(int8_scale[h]))) for v in row]
            q4 += [E4M3.encode(f32_mul(v, inverse_scale(e4m3_scale[h]))) for v in row]
            q5 += [E5M2.encode(f32_mul(v, inverse_scale(e5m2_scale[h]))) for v in row]

    c = Case(name)
    c.param('kind', 'fused')
    for k, v in (('style', style), ('head_dim', D), ('rotary_dim', D), ('rotary_offset', 0), ('base', base),
                 ('direction', 'forward'), ('pos_form', 'per_token'), ('scaling', 'none')):
        c.param(k, v)
    shape = [N, L, H, D]
    c.array('inv_freq', 'f64', [D // 2], w)
    c.array('positions', 'i64', [N, L], [p for row in positions for p in row])
    c.array('x', 'f64', shape, [float(v) for v in x])
    c.array('y', 'f64', shape, [float(v) for v in y])
    c.array('int8_dyn_scale', 'f64', [N, L, H], [float(v) for v in dyn_scale])
    c.array('int8_dyn', 'i64', shape, dyn)
    c.array('int8_scale', 'f64', [H], [float(v) for v in int8_scale])
    c.array('int8', 'i64', shape, st)
    c.array('e4m3_scale', 'f64', [H], [float(v) for v in e4m3_scale])
    c.array('e4m3', 'i64', shape, q4)
    c.array('e5m2_scale', 'f64', [H], [float(v) for v in e5m2_scale])
    c.array('e5m2', 'i64', shape, q5)
    return c


def gen_fused_cases():
    return [fused_case(st, D, zero_head=(D == 8)) for st in ('half_split', 'interleaved') for D in (8, 64)]


# --------------------------------------------------------------------------------------------------- check

def check(cases):
    """Optional cross-checks: fp8 against ml_dtypes (clip to +-max, then astype), and how often vLLM's int8
    arithmetic (static: x / scale; dynamic: x * (127.0f / absmax)) gives other codes on the fused cases."""
    ok = True
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
        print('check: ml_dtypes not importable, fp8 cross-check skipped')
    if ml_dtypes is not None:
        vals = []
        for c in cases:
            for key, _, _, values in c.arrays:
                if key in ('v_bits', 'x_bits'):
                    vals += [int(b) for b in values]
        rng = np.random.default_rng(12345)
        vals += [int(b) for b in rng.integers(0, 1 << 32, 200000, dtype=np.uint64)]
        arr = np.array(vals, dtype=np.uint32).view(np.float32)
        for fmt, dt in ((E4M3, ml_dtypes.float8_e4m3fn), (E5M2, ml_dtypes.float8_e5m2)):
            m = float(fmt.max)
            with np.errstate(invalid='ignore'):
                got = np.clip(arr, -m, m).astype(dt).view(np.uint8)
            bad = 0
            for v, g in zip(arr, got):
                want = fmt.encode(v)
                if int(g) != want:
                    bad += 1
                    if bad <= 5:
                        print('check: %s mismatch at bits 0x%08x: reference 0x%02x, ml_dtypes 0x%02x' %
                              (fmt.name, bits_of_f32(v), want, int(g)))
            print('check: %s vs ml_dtypes %s: %d of %d codes equal (NaN inputs included)' %
                  (fmt.name, ml_dtypes.__version__, len(arr) - bad, len(arr)))
            ok = ok and bad == 0
        # exact decoding of all 256 codes
        for fmt, dt in ((E4M3, ml_dtypes.float8_e4m3fn), (E5M2, ml_dtypes.float8_e5m2)):
            dec = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
            for code in range(256):
                v = fmt.decode_exact(code & 0x7F)
                want = (-v if code & 0x80 else v) if isinstance(v, Fraction) else v
                d = float(dec[code])
                same = (math.isnan(d) if want == 'nan' else
                        (math.isinf(d) and (d > 0) == (code < 0x80)) if want in ('inf', '-inf') else
                        Fraction(d) == want and (math.copysign(1.0, d) < 0) == (code >= 0x80))
                if not same:
                    print('check: %s decode of 0x%02x: reference %s, ml_dtypes %r' % (fmt.name, code, want, d))
                    ok = False
        print('check: decoding of all 256 codes of both formats compared with ml_dtypes')
    # vLLM's int8 arithmetic on the fused cases
    diff_static = diff_dyn = total = 0
    for c in cases:
        arrays = {k: (shape, values) for k, _, shape, values in c.arrays}
        if 'y' not in arrays:
            continue
        N, L, H, D = arrays['y'][0]
        y = [F32(v) for v in arrays['y'][1]]
        for t in range(N * L):
            for h in range(H):
                row = y[(t * H + h) * D:(t * H + h + 1) * D]
                absmax = max(abs(v) for v in row)
                s = F32(arrays['int8_scale'][1][h])
                tmp = f32_div(127.0, absmax) if absmax > 0 else F32(np.inf)
                for j, v in enumerate(row):
                    k = (t * H + h) * D + j
                    total += 1
                    diff_static += ref_int8(f32_div(v, s)) != arrays['int8'][1][k]
                    diff_dyn += ref_int8(f32_mul(v, tmp)) != arrays['int8_dyn'][1][k]
    print('check: vLLM arithmetic on the fused cases: static (x / scale) differs in %d of %d codes, dynamic '
          '(x * (127 / absmax)) in %d of %d' % (diff_static, total, diff_dyn, total))
    return ok


def main():
    cases = gen_conversion_cases() + gen_scaled_cases() + gen_fused_cases()
    if '--check' in sys.argv[1:]:
        sys.exit(0 if check(cases) else 1)
    write_file(FNAME, 'gen_quant.py', [
        'int8 (symmetric, nearest even, saturating, NaN -> 0), fp8 E4M3 / E5M2 (OFP8 2023, nearest even,',
        'saturating, canonical NaN with sign) of float32 values; scaled inputs; fused RoPE + quantisation.'],
        cases)


if __name__ == '__main__':
    main()
