#!/usr/bin/env python3
"""Writes the seed corpus of the .npy fuzzer (tests/fuzz/corpus/): small valid files of every supported dtype
and format version, and a few near-misses. Run: python3 tests/fuzz/make_corpus.py (needs numpy)."""
import os
import struct

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus')
os.makedirs(HERE, exist_ok=True)


def npy(header_dict, data, version=(1, 0)):
    h = header_dict.encode('latin1')
    size_fmt = '<H' if version[0] == 1 else '<I'
    pre = 10 if version[0] == 1 else 12
    pad = (64 - (pre + len(h) + 1) % 64) % 64
    h = h + b' ' * pad + b'\n'
    return b'\x93NUMPY' + bytes(version) + struct.pack(size_fmt, len(h)) + h + data


def put(name, blob):
    with open(os.path.join(HERE, name), 'wb') as f:
        f.write(blob)


for dt in ('<f2', '<f4', '<f8', '<i4', '<i8'):
    a = np.arange(6, dtype=dt).reshape(2, 3)
    for v in ((1, 0), (2, 0), (3, 0)):
        put('valid_%s_v%d.npy' % (dt[1:], v[0]),
            npy("{'descr': '%s', 'fortran_order': False, 'shape': (2, 3), }" % dt, a.tobytes(), v))
put('valid_scalar.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", np.float32(1).tobytes()))
put('valid_empty.npy', npy("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4), }", b''))
put('valid_rank1.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", np.ones(5, np.float32).tobytes()))
put('fortran.npy', npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", np.zeros(6, np.float32).tobytes()))
put('bigendian.npy', npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", np.zeros(2, '>f4').tobytes()))
put('object.npy', npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b'\0' * 8))
put('truncated.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (100,), }", b'\0' * 8))
put('huge_shape.npy', npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", b''))
put('negative_dim.npy', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }", b''))
put('bad_header_len.npy', b'\x93NUMPY\x01\x00\xff\xff' + b"{'descr': '<f4'")
