"""posenc.rope_append_kv: the fused RoPE + KV-cache append equals rotating the keys with apply_rope and copying
them into their slots by hand, for a contiguous cache at per-sequence lengths and a paged cache (vLLM's slot
mapping, -1 skipped), float32 into float16 caches included; a rejected call writes nothing."""
import numpy as np
import pytest

import posenc


def test_contiguous_cache_at_sequence_lengths():
    rng = np.random.default_rng(1)
    n, l, hk, d, max_len = 2, 3, 2, 16, 10
    plan = posenc.RopePlan(d, base=10000.0)
    k = rng.uniform(-1, 1, (n, l, hk, d)).astype(np.float32)
    v = rng.uniform(-1, 1, (n, l, hk, d)).astype(np.float32)
    seq_lens = np.array([4, 0], np.int64)
    k_cache = np.zeros((n, max_len, hk, d), np.float32)
    v_cache = np.zeros((n, max_len, hk, d), np.float32)
    posenc.rope_append_kv(k, v, k_cache, v_cache, plan, seq_lens=seq_lens)
    want_k = posenc.apply_rope(k, plan, starts=seq_lens)  # sequence n continues at seq_lens[n]
    for b in range(n):
        s = seq_lens[b]
        np.testing.assert_allclose(k_cache[b, s:s + l], want_k[b], atol=1e-6)
        np.testing.assert_array_equal(v_cache[b, s:s + l], v[b])
        assert not k_cache[b, :s].any() and not k_cache[b, s + l:].any()


def test_paged_cache_with_q_and_half_caches():
    rng = np.random.default_rng(2)
    n, l, hq, hk, d, blocks, block = 2, 2, 4, 2, 32, 3, 4
    plan = posenc.RopePlan(d, base=500000.0)
    q = rng.uniform(-1, 1, (n, l, hq, d)).astype(np.float32)
    k = rng.uniform(-1, 1, (n, l, hk, d)).astype(np.float32)
    v = rng.uniform(-1, 1, (n, l, hk, d)).astype(np.float32)
    slots = np.array([[5, 6], [11, -1]], np.int64)  # the last token is padding
    pos = np.array([[7, 8], [3, 4]], np.int64)
    k_cache = np.zeros((blocks, block, hk, d), np.float16)
    v_cache = np.zeros((blocks, block, hk, d), np.float16)
    want_q = posenc.apply_rope(q, plan, positions=pos)
    want_k = posenc.apply_rope(k, plan, positions=pos)
    posenc.rope_append_kv(k, v, k_cache, v_cache, plan, slot_mapping=slots, positions=pos, q=q)
    np.testing.assert_allclose(q, want_q, atol=1e-6)
    written = set()
    for b in range(n):
        for t in range(l):
            s = slots[b, t]
            if s < 0:
                continue
            written.add(int(s))
            np.testing.assert_array_equal(k_cache[s // block, s % block], want_k[b, t].astype(np.float16))
            np.testing.assert_array_equal(v_cache[s // block, s % block], v[b, t].astype(np.float16))
    for s in set(range(blocks * block)) - written:
        assert not k_cache[s // block, s % block].any() and not v_cache[s // block, s % block].any()


def test_rejected_call_writes_nothing():
    plan = posenc.RopePlan(8)
    k = np.ones((1, 2, 1, 8), np.float32)
    k_cache = np.zeros((1, 1, 1, 8), np.float32)  # room for one token only
    v_cache = np.zeros_like(k_cache)
    with pytest.raises(ValueError, match="rope_append_kv"):
        posenc.rope_append_kv(k, k, k_cache, v_cache, plan, seq_lens=np.array([0], np.int64))
    assert not k_cache.any() and not v_cache.any()
    with pytest.raises(ValueError, match="exactly one of"):
        posenc.rope_append_kv(k, k, k_cache, v_cache, plan)
