#!/usr/bin/env python3
"""Regenerates every golden file into a temporary folder and compares it byte for byte with the committed
one, so the data can never drift from the generators that document it. Exit 0 when all match, 1 on a
difference, 77 (CTest's skip code) when numpy or mpmath is missing."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATORS = ('gen_golden.py', 'gen_alibi.py', 'gen_tables.py', 'gen_quant.py', 'gen_models.py', 'gen_vision.py')

try:
    import mpmath  # noqa: F401
    import numpy  # noqa: F401
except ImportError as e:
    print('check_reproducible: skipped, %s' % e)
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    for name in GENERATORS + ('golden_io.py',):
        shutil.copy(os.path.join(HERE, name), tmp)
    for gen in GENERATORS:
        # gen_models.py / gen_vision.py read tests/data/hf/models and tests/data/gguf/models.json, which the copy
        # does not carry.
        env = dict(os.environ, POSENC_HF_MODELS=os.path.join(HERE, '..', 'data', 'hf', 'models'),
                   POSENC_GGUF_MODELS=os.path.join(HERE, '..', 'data', 'gguf', 'models.json'))
        subprocess.run([sys.executable, os.path.join(tmp, gen)], check=True, stdout=subprocess.DEVNULL, env=env)
    produced = sorted(f for f in os.listdir(tmp) if f.endswith('.txt'))
    committed = sorted(f for f in os.listdir(HERE) if f.endswith('.txt'))
    bad = [f for f in committed if f not in produced]
    for f in produced:
        with open(os.path.join(tmp, f), 'rb') as a, open(os.path.join(HERE, f), 'rb') as b:
            if a.read() != b.read():
                bad.append(f)
    if bad:
        print('check_reproducible: differs from its generator: %s' % ', '.join(bad))
        sys.exit(1)
    print('check_reproducible: %d golden files reproduced byte for byte' % len(produced))
