"""libposenc from Python through ctypes (issue 24): one RoPE call checked against the formula, one rejected call.

usage: python3 ctypes_test.py /path/to/libposenc.so
The expected values are RoFormer's rotation (Su et al. 2021, eq. 34) in half-split pairs, computed here in Python
floats (double) from theta = p * base^(-2i/D); the call runs in float64, so they agree to ~1e-15.
"""
import ctypes as C
import math
import sys

lib = C.CDLL(sys.argv[1])

MAX_RANK = 4


class Tensor(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("dtype", C.c_int32), ("rank", C.c_int32), ("reserved", C.c_int32),
                ("data", C.c_void_p), ("shape", C.c_int64 * MAX_RANK), ("strides", C.c_int64 * MAX_RANK)]


class Positions(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("kind", C.c_int32), ("index_type", C.c_int32), ("reserved", C.c_int32),
                ("offset", C.c_int64), ("values", C.c_void_p), ("batch", C.c_int64), ("length", C.c_int64),
                ("row_stride", C.c_int64)]


class RopeConfig(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("style", C.c_int32), ("head_dim", C.c_int64), ("rotary_dim", C.c_int64),
                ("rotary_offset", C.c_int64), ("base", C.c_double), ("scaling", C.c_int32), ("policy", C.c_int32),
                ("factor", C.c_double), ("original_max_positions", C.c_int64), ("beta_fast", C.c_double),
                ("beta_slow", C.c_double), ("truncate", C.c_int32), ("reserved", C.c_int32), ("mscale", C.c_double),
                ("mscale_all_dim", C.c_double), ("attention_factor", C.c_double), ("low_freq_factor", C.c_double),
                ("high_freq_factor", C.c_double), ("short_factor", C.c_void_p), ("long_factor", C.c_void_p),
                ("longrope_factor_count", C.c_int64), ("freq_factors", C.c_void_p), ("freq_factor_count", C.c_int64)]


F64, HALF_SPLIT = 2, 1
lib.posenc_version.restype = C.c_char_p
lib.posenc_active_isa.restype = C.c_char_p
lib.posenc_positions_offset.restype = Positions
lib.posenc_positions_offset.argtypes = [C.c_int64]
lib.posenc_tensor_contiguous.restype = Tensor
lib.posenc_tensor_contiguous.argtypes = [C.c_void_p, C.c_int, C.c_int32, C.POINTER(C.c_int64)]
lib.posenc_rope_config_init.argtypes = [C.POINTER(RopeConfig)]
lib.posenc_rope_plan_create.argtypes = [C.POINTER(RopeConfig), C.c_int64, C.POINTER(C.c_void_p)]
lib.posenc_rope_plan_destroy.argtypes = [C.c_void_p]
lib.posenc_apply_rope.argtypes = [C.c_void_p, C.c_void_p, C.POINTER(Tensor), C.POINTER(Tensor), C.POINTER(Positions),
                                  C.c_int32]
lib.posenc_last_error.restype = C.c_size_t
lib.posenc_last_error.argtypes = [C.c_char_p, C.c_size_t]


def last_error():
    buf = C.create_string_buffer(512)
    lib.posenc_last_error(buf, len(buf))
    return buf.value.decode()


assert C.sizeof(Tensor) == 88 and C.sizeof(Positions) == 56, "struct layouts differ from posenc.h"

N, L, H, D, P0, BASE = 1, 3, 2, 8, 5, 10000.0
cfg = RopeConfig()
lib.posenc_rope_config_init(C.byref(cfg))
assert cfg.struct_size == C.sizeof(RopeConfig), f"posenc_rope_config is {cfg.struct_size} bytes, ctypes {C.sizeof(RopeConfig)}"
cfg.head_dim = D
cfg.base = BASE
cfg.style = HALF_SPLIT
plan = C.c_void_p()
assert lib.posenc_rope_plan_create(C.byref(cfg), 0, C.byref(plan)) == 0, last_error()

x0 = [((7 * i) % 13 - 6) / 8.0 for i in range(N * L * H * D)]
buf = (C.c_double * len(x0))(*x0)
shape = (C.c_int64 * 4)(N, L, H, D)
t = lib.posenc_tensor_contiguous(C.cast(buf, C.c_void_p), F64, 4, shape)
pos = lib.posenc_positions_offset(P0)
status = lib.posenc_apply_rope(plan, None, C.byref(t), None, C.byref(pos), 0)
assert status == 0, last_error()
worst = 0.0
for l in range(L):
    p = P0 + l
    for h in range(H):
        row = (l * H + h) * D
        for i in range(D // 2):
            theta = p * BASE ** (-2.0 * i / D)
            a, b = x0[row + i], x0[row + i + D // 2]
            want = (a * math.cos(theta) - b * math.sin(theta), b * math.cos(theta) + a * math.sin(theta))
            got = (buf[row + i], buf[row + i + D // 2])
            worst = max(worst, abs(got[0] - want[0]), abs(got[1] - want[1]))
assert worst < 1e-14, f"RoPE through ctypes differs from the formula by {worst}"

# A rejected call: rank 3 for a rank-4 call; nothing written, a message.
before = list(buf)
bad = lib.posenc_tensor_contiguous(C.cast(buf, C.c_void_p), F64, 3, shape)
status = lib.posenc_apply_rope(plan, None, C.byref(bad), None, C.byref(pos), 0)
message = last_error()
assert status == 1, f"status {status} for a rank-3 tensor"
assert "rank 3" in message, message
assert list(buf) == before, "a rejected call wrote"
lib.posenc_rope_plan_destroy(plan)
print(f"ctypes: ok (posenc {lib.posenc_version().decode()}, {lib.posenc_active_isa().decode()}, max error {worst:.1e};"
      f" rejected: {message})")
