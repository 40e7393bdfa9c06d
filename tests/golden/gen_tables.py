#!/usr/bin/env python3
"""Generate the golden data of posenc's table encodings: sinusoidal.txt, t5.txt, learned.txt (format: FORMAT.md).

Run:  python3 tests/golden/gen_tables.py      (writes the three files next to this script)

Everything real-valued is computed in mpmath at 40 significant digits from exact inputs; numpy provides only
its random generator (default_rng, one seed per case from crc32("<file>/<case>")) and, for the T5 buckets,
float32 arithmetic. Nothing is imported from posenc (nor from gen_golden.py): this is an independent
statement of the formulas.

Sources of the formulas:
  sinusoidal.txt  interleaved: Vaswani et al. 2017, "Attention Is All You Need", sec. 3.5:
                    PE(p, 2i) = sin(p / base^(2i/D)), PE(p, 2i+1) = cos(p / base^(2i/D))
                  (also the seed module's div_term = exp(arange(0, D, 2) * -(ln(10000)/D))).
                  concat: tensor2tensor common_attention.get_timing_signal_1d (min_timescale 1, max_timescale
                  base, log_timescale_increment = ln(base) / max(D/2 - 1, 1), signal = [sin | cos]) and fairseq
                  SinusoidalPositionalEmbedding.get_embedding (emb = ln(10000)/(half_dim - 1), [sin | cos],
                  row padding_idx zeroed) with fairseq utils.make_positions for the padded positions:
                  positions = cumsum(mask) * mask + padding_idx, mask = tokens != padding_idx.
                  D = 2 concat: 0/0 in the exponent; tensor2tensor's max(., 1) gives w_0 = 1 (fairseq: NaN).
  t5.txt          T5 relative_position_bucket (Mesh TensorFlow transformer/attention.py; Hugging Face
                  transformers T5Attention._relative_position_bucket): the log branch is computed in float32 as
                  the reference does (int -> float32, / max_exact in float32, float32 log, / float32(math.log(
                  max_distance / max_exact)) with the log taken in double as Python does, * (num_buckets -
                  max_exact) in float32, truncation toward zero, min with num_buckets - 1). The float32 log is
                  the correctly rounded one (computed in mpmath and rounded to 24 bits); the script asserts that
                  numpy's float32 log gives the same bucket at every relative position it writes.
  learned.txt     torch.nn.LayerNorm (biased variance, eps inside the square root) applied to x + scale * E[p +
                  offset] (BERT / GPT-2 / OPT learned positions); the gradients are derivatives of
                  sum(grad_out * y) taken numerically in mpmath (mp.diff at 40 digits), independent of the
                  analytic backward formula.
"""

import math

import numpy as np
from mpmath import mp, mpf

from golden_io import Case, bf16_inputs, rng_for, write_file



# -------------------------------------------------------------------------------------------- sinusoidal

def sin_freqs(layout, D, base):
    base = mpf(base)
    h = D // 2
    if layout == 'interleaved':
        return [base ** (-mpf(2 * i) / D) for i in range(h)]
    den = max(h - 1, 1)          # tensor2tensor's guard; only matters at D = 2 (where i = 0 anyway)
    return [base ** (-mpf(i) / den) for i in range(h)]


def sin_row(layout, D, base, p, padding_idx=None):
    if padding_idx is not None and p == padding_idx:
        return [mpf(0)] * D
    w = sin_freqs(layout, D, base)
    s = [mp.sin(p * wi) for wi in w]
    c = [mp.cos(p * wi) for wi in w]
    if layout == 'interleaved':
        out = []
        for i in range(D // 2):
            out += [s[i], c[i]]
        return out
    return s + c


def make_positions(tokens, padding_idx):
    """fairseq utils.make_positions: cumsum(mask) * mask + padding_idx."""
    out = []
    for row in tokens:
        cnt, r = 0, []
        for t in row:
            m = 1 if t != padding_idx else 0
            cnt += m
            r.append(cnt * m + padding_idx)
        out.append(r)
    return out


def sin_table_case(name, layout, L, D, base=10000, offset=0, padding_idx=None):
    c = Case(name)
    c.param('layout', layout)
    c.param('dim', D)
    c.param('base', base)
    c.param('offset', offset)
    c.param('length', L)
    if padding_idx is not None:
        c.param('padding_idx', padding_idx)
    vals = []
    for l in range(L):
        vals += sin_row(layout, D, base, offset + l, padding_idx)
    c.array('table', 'f64', [L, D], vals)
    return c


def sin_add_case(tag, name, layout, N, L, D, base=10000, positions=None, tokens=None, padding_idx=None):
    rng = rng_for(tag + '/' + name)
    c = Case(name)
    c.param('layout', layout)
    c.param('dim', D)
    c.param('base', base)
    if padding_idx is not None:
        c.param('padding_idx', padding_idx)
        c.array('tokens', 'i64', [N, L], [t for row in tokens for t in row])
        positions = make_positions(tokens, padding_idx)
    x = bf16_inputs(rng, N * L * D)
    y = []
    for n in range(N):
        for l in range(L):
            row = sin_row(layout, D, base, positions[n][l], padding_idx)
            y += [mpf(x[(n * L + l) * D + d]) + row[d] for d in range(D)]
    c.array('positions', 'i64', [N, L], [p for row in positions for p in row])
    c.array('x', 'f64', [N, L, D], x)
    c.array('y', 'f64', [N, L, D], y)
    return c


def gen_sinusoidal():
    tag = 'sinusoidal'
    cases = []
    for lay in ('interleaved', 'concat'):
        cases.append(sin_table_case(lay + '_basic', lay, L=6, D=8))
        cases.append(sin_table_case(lay + '_offset', lay, L=5, D=16, offset=37))
        cases.append(sin_table_case(lay + '_large_offset', lay, L=3, D=64, offset=100000))
        cases.append(sin_table_case(lay + '_base500', lay, L=4, D=12, base=500, offset=3))
        cases.append(sin_table_case(lay + '_d2', lay, L=4, D=2))
        cases.append(sin_table_case(lay + '_d4', lay, L=3, D=4, offset=1))
        cases.append(sin_table_case(lay + '_d10', lay, L=4, D=10, offset=2))
    # fairseq: the table with its zero padding row, and a left/right padded batch.
    cases.append(sin_table_case('concat_padding_table', 'concat', L=6, D=8, padding_idx=1))
    cases.append(sin_add_case(tag, 'fairseq_padded_add', 'concat', N=2, L=5, D=8, padding_idx=1,
                              tokens=[[1, 1, 7, 9, 4], [5, 6, 1, 8, 1]]))
    rng = rng_for(tag + '/positions')
    pos = [[int(v) for v in rng.integers(0, 3000, size=4)], [0, 1, 70000, 123456]]
    cases.append(sin_add_case(tag, 'interleaved_add_per_token', 'interleaved', N=2, L=4, D=16, positions=pos))
    cases.append(sin_add_case(tag, 'concat_add_per_token', 'concat', N=2, L=4, D=16, positions=pos))
    write_file('sinusoidal.txt', 'gen_tables.py', [
        'Sinusoidal tables and additions (Vaswani et al. 2017 interleaved; tensor2tensor / fairseq concat).',
        'Table cases: params layout, dim, base, offset, length [, padding_idx]; array table (length, dim):',
        'row l is position offset + l. Add cases: params layout, dim, base [, padding_idx]; arrays [tokens],',
        'positions (N, L), x, y (N, L, D): y = x + T[positions].',
    ], cases)


# -------------------------------------------------------------------------------------------- T5 buckets

def f32(v):
    """Exact value (mpf, int) -> nearest float32, as a numpy float32."""
    with mp.workprec(24):
        r = +mpf(v)
    return np.float32(float(r))


def logf_cr(x):
    """Correctly rounded float32 log of a float32."""
    return f32(mp.log(mpf(float(x))))


def t5_bucket(r, bidirectional, num_buckets, max_distance, log32=logf_cr):
    ret = 0
    nb = num_buckets
    if bidirectional:
        nb //= 2
        if r > 0:
            ret += nb
        n = abs(r)
    else:
        n = max(-r, 0)
    e = nb // 2
    if n < e:
        return ret + n
    q = f32(n) / np.float32(e)                        # float32 / float32 -> float32 (IEEE, round to nearest)
    lq = log32(q)
    lr = np.float32(math.log(max_distance / e))       # Python: double division and log, then float32
    v = (lq / lr) * np.float32(nb - e)
    assert isinstance(v, np.float32)
    b = e + int(v)                                    # .to(torch.long): truncation (v >= 0)
    return ret + min(b, nb - 1)


def numpy_log32(x):
    return np.log(np.float32(x))


def checked_bucket(r, bidir, nb, md):
    b = t5_bucket(r, bidir, nb, md)
    b2 = t5_bucket(r, bidir, nb, md, numpy_log32)
    assert b == b2, ('numpy float32 log disagrees', r, bidir, nb, md, b, b2)
    return b


def t5_table_case(name, bidir, nb, md, Lq, Lk, offset):
    c = Case(name)
    c.param('bidirectional', bidir)
    c.param('num_buckets', nb)
    c.param('max_distance', md)
    c.param('query_len', Lq)
    c.param('key_len', Lk)
    c.param('query_offset', offset)
    vals = [checked_bucket(j - (i + offset), bidir, nb, md) for i in range(Lq) for j in range(Lk)]
    c.array('buckets', 'i64', [Lq, Lk], vals)
    return c


def t5_boundary_case(name, bidir, nb, md, extra=()):
    """Relative positions around every bucket boundary (both directions), the extremes, and `extra`."""
    per = nb // 2 if bidir else nb
    e = per // 2
    ns = set(range(0, e + 2))
    prev = None
    for n in range(0, 2 * md + 3):
        b = checked_bucket(-n, bidir, nb, md)
        if prev is not None and b != prev:
            ns.update(range(max(n - 2, 0), n + 2))
        prev = b
    ns.update([md - 1, md, md + 1, 10 ** 6, 2 ** 31, 2 ** 62, 2 ** 63 - 1])
    ns.update(extra)
    rel = sorted(set([-n for n in ns] + [n for n in ns]))
    c = Case(name)
    c.param('bidirectional', bidir)
    c.param('num_buckets', nb)
    c.param('max_distance', md)
    c.array('relative', 'i64', [len(rel)], rel)
    c.array('bucket', 'i64', [len(rel)], [checked_bucket(r, bidir, nb, md) for r in rel])
    return c


def gen_t5():
    cases = []
    brief = (8, 12, 16, 31, 32, 64, 127, 128, 1000)
    cases.append(t5_boundary_case('boundary_bidir_32_128', True, 32, 128, brief))
    cases.append(t5_boundary_case('boundary_causal_16_128', False, 16, 128, brief))
    cases.append(t5_boundary_case('boundary_causal_32_128', False, 32, 128))
    cases.append(t5_boundary_case('boundary_bidir_16_64', True, 16, 64))
    cases.append(t5_boundary_case('boundary_causal_12_50', False, 12, 50))
    cases.append(t5_boundary_case('boundary_bidir_33_100', True, 33, 100))
    cases.append(t5_boundary_case('boundary_causal_4_72', False, 4, 72))
    cases.append(t5_boundary_case('boundary_bidir_64_256', True, 64, 256))
    cases.append(t5_table_case('table_bidir_32_128', True, 32, 128, Lq=12, Lk=200, offset=0))
    cases.append(t5_table_case('table_bidir_32_128_offset', True, 32, 128, Lq=6, Lk=200, offset=150))
    cases.append(t5_table_case('table_causal_32_128_offset', False, 32, 128, Lq=8, Lk=198, offset=190))
    cases.append(t5_table_case('table_bidir_16_64', True, 16, 64, Lq=5, Lk=90, offset=7))
    cases.append(t5_table_case('table_causal_12_50', False, 12, 50, Lq=4, Lk=80, offset=60))
    cases.append(t5_table_case('table_bidir_33_100', True, 33, 100, Lq=3, Lk=130, offset=0))
    write_file('t5.txt', 'gen_tables.py', [
        'T5 relative-position buckets (reference relative_position_bucket, float32 log branch).',
        'boundary_*: params bidirectional, num_buckets, max_distance; arrays relative (K), bucket (K).',
        'table_*: same params plus query_len, key_len, query_offset; array buckets (query_len, key_len):',
        'buckets[i, j] = bucket(j - (i + query_offset)).',
    ], cases)


# ---------------------------------------------------------------------------------------------- learned

def layer_norm_rows(h, D, gamma, beta, eps):
    out = []
    for t in range(len(h) // D):
        row = h[t * D:(t + 1) * D]
        mean = sum(row) / D
        var = sum((v - mean) ** 2 for v in row) / D
        rs = 1 / mp.sqrt(var + eps)
        out += [gamma[d] * (row[d] - mean) * rs + beta[d] for d in range(D)]
    return out


def gen_learned():
    tag = 'learned'
    name = 'layer_norm'
    rng = rng_for(tag + '/' + name)
    N, L, D = 2, 3, 8
    max_positions, offset_rows, past, scale = 4, 2, 1, 0.5
    rows = max_positions + offset_rows
    eps = 1e-5
    x = bf16_inputs(rng, N * L * D)
    E = bf16_inputs(rng, rows * D)
    gamma = bf16_inputs(rng, D, 0.5, 1.5)
    beta = bf16_inputs(rng, D, -0.5, 0.5)
    gout = bf16_inputs(rng, N * L * D)
    positions = [[past + l for l in range(L)] for _ in range(N)]   # GPT-2: past_length + arange(L)
    eps_m = mpf(eps)

    def forward(xv, Ev, gv, bv):
        h = []
        for n in range(N):
            for l in range(L):
                r = positions[n][l] + offset_rows
                h += [mpf(xv[(n * L + l) * D + d]) + mpf(scale) * mpf(Ev[r * D + d]) for d in range(D)]
        return layer_norm_rows(h, D, [mpf(g) for g in gv], [mpf(b) for b in bv], eps_m)

    y = forward(x, E, gamma, beta)

    def grad_of(vec_index):
        """d/dv sum(gout * y) for every element of one input vector (0 x, 1 E, 2 gamma, 3 beta)."""
        base = [list(map(mpf, v)) for v in (x, E, gamma, beta)]
        grads = []
        for k in range(len(base[vec_index])):
            def f(t, k=k):
                args = [list(v) for v in base]
                args[vec_index][k] = base[vec_index][k] + t
                return sum(mpf(g) * yy for g, yy in zip(gout, forward(*args)))
            grads.append(mp.diff(f, 0))
        return grads

    c = Case(name)
    for k, v in (('batch', N), ('length', L), ('dim', D), ('max_positions', max_positions),
                 ('position_offset', offset_rows), ('past_length', past), ('scale', scale), ('eps', eps)):
        c.param(k, v)
    c.array('positions', 'i64', [N, L], [p for row in positions for p in row])
    c.array('x', 'f64', [N, L, D], x)
    c.array('table', 'f64', [rows, D], E)
    c.array('gamma', 'f64', [D], gamma)
    c.array('beta', 'f64', [D], beta)
    c.array('y', 'f64', [N, L, D], y)
    c.array('grad_out', 'f64', [N, L, D], gout)
    c.array('grad_x', 'f64', [N, L, D], grad_of(0))
    c.array('grad_table', 'f64', [rows, D], grad_of(1))
    c.array('grad_gamma', 'f64', [D], grad_of(2))
    c.array('grad_beta', 'f64', [D], grad_of(3))
    write_file('learned.txt', 'gen_tables.py', [
        'Learned positions with layer norm: y = LN(x + scale * table[p + position_offset]) (gamma, beta, eps),',
        'p = past_length + l (GPT-2); gradients of sum(grad_out * y) by numerical differentiation in mpmath.',
    ], [c])


if __name__ == '__main__':
    gen_sinusoidal()
    gen_t5()
    gen_learned()
