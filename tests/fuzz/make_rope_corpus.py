#!/usr/bin/env python3
"""Writes the seed corpus of the RoPE differential fuzzer (tests/fuzz/corpus_rope/): 48 byte strings of 64 to
4096 pseudo-random bytes, fixed seed. rope_diff_fuzz.cpp reads every choice (storage type, shape, window,
scaling, position form, values) through FuzzedDataProvider, so long random inputs reach large shapes, every
scaling and huge positions from the first run, where libFuzzer's own inputs start at a few bytes.
Run: python3 tests/fuzz/make_rope_corpus.py (standard library only)."""
import os
import random

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus_rope')
os.makedirs(HERE, exist_ok=True)
rng = random.Random(20261124)
for i in range(48):
    size = rng.choice([64, 128, 256, 512, 1024, 2048, 4096])
    with open(os.path.join(HERE, 'seed_%02d' % i), 'wb') as f:
        f.write(bytes(rng.randrange(256) for _ in range(size)))
