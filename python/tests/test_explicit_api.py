"""Issue 21: calls that used to give wrong results silently are now explicit or loud.

* positions: one id per token through ``positions=`` ((N, L), or (L,) / (1, L) broadcast over the batch as HF
  does), one start per sequence through ``starts=`` ((N,)); a shape that fits neither is a ValueError. Before,
  a 1-D ``positions`` meant per-sequence starts, so (L,) with N == L was taken as N starts without a word.
* a length-dependent scaling (dynamic NTK per_length, LongRoPE per_length / past_original) needs ``seq_len`` or
  a fixed policy; before, the plan silently used n = 0 (unscaled base / short factors).
* a loaded model's configuration stays adjustable (overrides at load, from_config, replace).
* enum values in either spelling ("half-split" as the CLI, "half_split" as Python).
The expected values are formed here from the formulas (angles p * base^(-2i/R)), not from posenc."""

from __future__ import annotations

import numpy as np
import pytest

import posenc

from golden import data_dir

HF = data_dir("hf")
needs_hf = pytest.mark.skipif(HF is None, reason="tests/data/hf is not next to python/")


def rope_ref(x, pos, base=10000.0):
    """Half-split RoPE in float64 of x (N, L, H, D) at integer positions pos (N, L)."""
    d = x.shape[-1]
    w = base ** (-2.0 * np.arange(d // 2) / d)
    ang = pos[:, :, None, None].astype(np.float64) * w
    c, s = np.cos(ang), np.sin(ang)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)


@pytest.fixture
def x():
    return np.random.default_rng(21).uniform(-1, 1, (3, 3, 2, 8))  # N == L == 3: the ambiguous shape


def test_positions_of_length_l_are_per_token_even_when_n_equals_l(x):
    plan = posenc.RopePlan(8)
    ids = np.array([5, 9, 2], np.int64)
    tiled = np.tile(ids, (3, 1))
    got = posenc.apply_rope(x, plan, positions=ids)
    np.testing.assert_allclose(got, rope_ref(x, tiled), atol=1e-14)
    np.testing.assert_array_equal(got, posenc.apply_rope(x, plan, positions=tiled))
    np.testing.assert_array_equal(got, posenc.apply_rope(x, plan, positions=ids[None, :]))  # (1, L)
    np.testing.assert_array_equal(got, posenc.apply_rope(x, plan, positions=ids.astype(np.int32)))


def test_starts_are_one_per_sequence(x):
    plan = posenc.RopePlan(8)
    starts = np.array([5, 9, 2], np.int64)
    pos = starts[:, None] + np.arange(3)[None, :]
    np.testing.assert_allclose(posenc.apply_rope(x, plan, starts=starts), rope_ref(x, pos), atol=1e-14)
    np.testing.assert_allclose(posenc.apply_rope(x, plan, offset=4), rope_ref(x, np.tile(np.arange(4, 7), (3, 1))), atol=1e-14)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"positions": np.zeros((2, 3), np.int64)}, r"must have shape \(L,\), \(1, L\) or \(N, L\) with N=3, got \(2, 3\)"),
        ({"positions": np.zeros((3, 3, 1), np.int64)}, r"positions has 3 dimensions; at most 2"),
        ({"positions": np.zeros(4, np.int64)}, r"does not match \(N, L\)=\(3, 3\)"),
        ({"starts": np.zeros((3, 3), np.int64)}, r"starts \(one start per sequence\) must have shape \(N,\) = \(3,\), got \(3, 3\)"),
        ({"starts": np.zeros(2, np.int64)}, r"must have shape \(N,\) = \(3,\), got \(2,\)"),
        ({"starts": np.zeros(3, np.int64), "positions": np.zeros(3, np.int64)}, "not both"),
        ({"starts": np.zeros(3, np.int64), "offset": 2}, "offset=2 must be 0 when starts are given"),
    ],
)
def test_a_shape_that_fits_no_meaning_is_an_error(x, kwargs, message):
    before = x.copy()
    with pytest.raises(ValueError, match=message):
        posenc.apply_rope(x, posenc.RopePlan(8), out=x, **kwargs)
    np.testing.assert_array_equal(x, before)  # nothing written


def test_every_entry_taking_positions_takes_starts():
    rng = np.random.default_rng(5)
    n, l, h, d = 2, 3, 2, 8
    plan = posenc.RopePlan(d)
    starts = np.array([4, 11], np.int64)
    ids = starts[:, None] + np.arange(l)[None, :]
    q = rng.uniform(-1, 1, (n, l, h, d))
    k = rng.uniform(-1, 1, (n, l, 1, d))

    def same(f):
        np.testing.assert_array_equal(f(dict(starts=starts)), f(dict(positions=ids)))

    same(lambda kw: posenc.apply_rope(q, plan, **kw))
    same(lambda kw: np.concatenate([a.ravel() for a in posenc.apply_rope_qk(q.copy(), k.copy(), plan, **kw)]))
    other = posenc.RopePlan(d, base=500000.0)
    same(lambda kw: posenc.rerotate_rope(k.copy(), plan, other, **kw))
    xp = posenc.XposPlan(d)
    same(lambda kw: posenc.apply_xpos(q, xp, center=3, **kw))
    same(lambda kw: np.concatenate([a.ravel() for a in posenc.apply_xpos_qk(q.copy(), k.copy(), xp, center=3, **kw)]))
    scores = rng.uniform(-1, 1, (n, 4, l, 16))
    same(lambda kw: posenc.add_alibi_bias(scores.copy(), causal=True, **kw))
    e = rng.uniform(-1, 1, (n, l, d))
    same(lambda kw: posenc.add_sinusoidal(e, **kw))

    def append(kw):
        kc, vc = np.zeros((n, 16, 1, d)), np.zeros((n, 16, 1, d))
        posenc.rope_append_kv(k, k, kc, vc, plan, seq_lens=np.array([0, 5], np.int64), **kw)
        return kc

    same(append)
    # the contiguous cache's default: sequence n continues at seq_lens[n]
    kc, vc = np.zeros((n, 16, 1, d)), np.zeros((n, 16, 1, d))
    posenc.rope_append_kv(k, k, kc, vc, plan, seq_lens=starts)
    want = rope_ref(k, ids)
    np.testing.assert_allclose(kc[0, 4:7], want[0], atol=1e-14)
    np.testing.assert_allclose(kc[1, 11:14], want[1], atol=1e-14)


def test_length_dependent_scalings_need_a_length():
    dyn = {"rope_type": "dynamic", "factor": 4.0, "max_position_embeddings": 2048}
    with pytest.raises(ValueError, match="dynamic_ntk \\(policy per_length\\) depends on the sequence length"):
        posenc.RopePlan(64, scaling=dyn)
    r = 64
    m, f, n = 2048, 4.0, 8192
    base = 10000.0 * ((f * n / m) - (f - 1)) ** (r / (r - 2))  # HF _compute_dynamic_ntk_parameters
    np.testing.assert_allclose(posenc.RopePlan(64, scaling=dyn, seq_len=n).inv_freq,
                               base ** (-2.0 * np.arange(32) / 64), rtol=1e-13)
    fixed = posenc.RopePlan(64, scaling={**dyn, "dynamic_policy": "fixed_at_max"})  # vLLM: n = M * factor
    np.testing.assert_allclose(fixed.inv_freq, base ** (-2.0 * np.arange(32) / 64), rtol=1e-13)
    lr = {"rope_type": "longrope", "factor": 8.0, "original_max_position_embeddings": 16,
          "short_factor": [1.0] * 4, "long_factor": [2.0] * 4}
    for policy in ("per_length", "past_original"):
        with pytest.raises(ValueError, match="longrope"):
            posenc.RopePlan(8, scaling={**lr, "longrope_policy": policy})
    assert posenc.RopePlan(8, scaling={**lr, "longrope_policy": "always_long"}).inv_freq[0] == 0.5


@needs_hf
def test_loaded_configs_stay_adjustable():
    llama = posenc.RopePlan.from_hf_config(HF / "llama3.1.json")
    over = posenc.RopePlan.from_hf_config(HF / "llama3.1.json", base=1e6, scaling={"factor": 16.0})
    assert over.config["base"] == 1e6 and over.config["scaling"]["factor"] == 16.0
    assert over.config["scaling"]["type"] == "llama3" and over.info == llama.info  # the rest is the file's
    edited = dict(llama.config, base=1e6, scaling=dict(llama.config["scaling"], factor=16.0))
    np.testing.assert_array_equal(posenc.RopePlan.from_config(edited).inv_freq, over.inv_freq)
    np.testing.assert_array_equal(llama.replace(base=1e6, scaling={"factor": 16.0}).inv_freq, over.inv_freq)
    assert llama.config["base"] == 500000.0  # the loaded plan is not changed
    # an override can make a length-dependent file plannable without a length
    phi = posenc.RopePlan.from_hf_config(HF / "phi3.json", scaling={"longrope_policy": "always_long"})
    assert phi.config["scaling"]["longrope_policy"] == "always_long"
    with pytest.raises(TypeError, match="unknown configuration key 'theta'"):
        llama.replace(theta=1.0)
    with pytest.raises(ValueError, match="config\\['scaling'\\] has no key 'rope_type'"):
        posenc.RopePlan.from_config(dict(llama.config, scaling={"rope_type": "linear"}))


def test_enum_values_in_either_spelling():
    a = posenc.RopePlan(16, style="half-split")
    assert a.style == "half_split"
    np.testing.assert_array_equal(a.inv_freq, posenc.RopePlan(16, style="HALF_SPLIT").inv_freq)
    assert posenc.MropePlan(posenc.RopePlan(16), (2, 3, 3), layout="Interleaved").layout == "interleaved"
    t1 = posenc.sinusoidal_table(3, 8, style="concat")
    np.testing.assert_array_equal(t1, posenc.sinusoidal_table(3, 8, style="CONCAT"))
    with pytest.raises(ValueError, match="style='neox' is not one of: interleaved, half_split"):
        posenc.RopePlan(16, style="neox")
