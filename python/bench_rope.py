#!/usr/bin/env python3
"""Benchmark: posenc.apply_rope against the Hugging Face formula written in NumPy (and in PyTorch eager when
`import torch` works), on one (N, L, H, D) float32 tensor, Llama-style half-split pairs, positions 0..L-1.

The Hugging Face formula (transformers `LlamaRotaryEmbedding.forward` + `apply_rotary_pos_emb`):

    inv_freq = 1 / base^(arange(0, D, 2) / D);  freqs = outer(positions, inv_freq);  emb = cat(freqs, freqs)
    cos, sin = cos(emb), sin(emb);              y = x * cos + rotate_half(x) * sin

Rows reported (time per call: the median and the minimum of --repeat calls after a warm-up; GB/s as one read
and one write of the tensor; the speed-up over the NumPy formula, apply only; the max error):
  - numpy HF, cos/sin included / apply only (cos/sin computed once, as a model shares them across layers);
  - torch eager HF, the same two (if PyTorch is installed);
  - posenc with a RopePlan (angles in double per call) and with a float32 RopeCache (table lookup), each
    allocating the result (out=None, like the formula) and in place (out=x).
Every variant is checked against the float64 formula first. posenc and NumPy run on one thread here;
PyTorch uses its default thread count (printed).

    python bench_rope.py                       # (1, 4096, 32, 128)
    python bench_rope.py --shape 1 512 32 128 --repeat 50 --isa avx2
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from typing import Callable, Dict, List, Optional, Tuple

import sys

import numpy as np

# Run as a script, Python puts this folder first on sys.path, where the source package (without the compiled
# extension) would shadow the installed one: import the installed posenc.
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import posenc  # noqa: E402


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def timed(fn: Callable[[], object], repeat: int, warmup: int = 2) -> Tuple[float, float]:
    """(median, min) seconds per call."""
    for _ in range(warmup):
        fn()
    times: List[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def hf_cos_sin_numpy(length: int, dim: int, base: float, dtype=np.float32):
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))
    t = np.arange(length, dtype=np.float32)
    freqs = np.outer(t, inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def rotate_half_numpy(x: np.ndarray) -> np.ndarray:
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def hf_apply_numpy(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    # x: (N, L, H, D); HF keeps (N, H, L, D) and unsqueezes cos at dim 1: here the head axis is 2.
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    return x * c + rotate_half_numpy(x) * s


def reference(x: np.ndarray, base: float) -> np.ndarray:
    """The formula in float64 with exact positions: what every variant is checked against."""
    n, l, h, d = x.shape
    inv_freq = base ** (-np.arange(0, d, 2) / d)
    emb = np.concatenate([np.outer(np.arange(l), inv_freq)] * 2, axis=-1)
    x64 = x.astype(np.float64)
    return x64 * np.cos(emb)[None, :, None, :] + rotate_half_numpy(x64) * np.sin(emb)[None, :, None, :]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", type=int, nargs=4, default=[1, 4096, 32, 128], metavar=("N", "L", "H", "D"))
    ap.add_argument("--base", type=float, default=10000.0)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--isa", default=None, help="cap posenc's kernels (scalar, avx2, avx512, neon)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch even if installed")
    args = ap.parse_args()
    if args.isa:
        posenc.set_isa(args.isa)

    n, l, h, d = args.shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, l, h, d), dtype=np.float32)
    ref = reference(x, args.base)
    mbytes = x.nbytes / 1e6

    print(f"CPU: {cpu_model()}  ({os.cpu_count()} logical CPUs; load average {os.getloadavg()[0]:.2f})")
    print(f"posenc {posenc.__version__}, ISA {posenc.isa()}; NumPy {np.__version__}; Python {platform.python_version()}")
    print(f"shape (N, L, H, D) = {tuple(args.shape)} float32 ({mbytes:.0f} MB), half-split, base {args.base:g}, "
          f"positions 0..{l - 1}; median of {args.repeat} calls")

    rows: Dict[str, Tuple[float, float]] = {}
    errors: Dict[str, float] = {}

    def record(name: str, fn: Callable[[], object], result: Optional[np.ndarray]) -> None:
        if result is not None:
            errors[name] = float(np.abs(result.astype(np.float64) - ref).max())
        rows[name] = timed(fn, args.repeat)

    # --- NumPy, the Hugging Face formula
    cos, sin = hf_cos_sin_numpy(l, d, args.base)
    record("numpy HF (cos/sin included)", lambda: hf_apply_numpy(x, *hf_cos_sin_numpy(l, d, args.base)),
           hf_apply_numpy(x, cos, sin))
    record("numpy HF (apply only)", lambda: hf_apply_numpy(x, cos, sin), None)

    # --- PyTorch eager, the same formula
    torch_threads = None
    if not args.no_torch:
        try:
            import torch
        except ImportError:
            torch = None
            print("PyTorch: not installed (torch rows skipped)")
        if torch is not None:
            torch_threads = torch.get_num_threads()
            print(f"PyTorch {torch.__version__}, {torch_threads} threads")
            xt = torch.from_numpy(x)

            def torch_cos_sin():
                inv_freq = 1.0 / (args.base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
                freqs = torch.outer(torch.arange(l, dtype=torch.float32), inv_freq)
                emb = torch.cat((freqs, freqs), dim=-1)
                return emb.cos(), emb.sin()

            def rotate_half(t):
                return torch.cat((-t[..., d // 2:], t[..., : d // 2]), dim=-1)

            def torch_apply(c, s):
                c, s = c[None, :, None, :], s[None, :, None, :]
                return xt * c + rotate_half(xt) * s

            with torch.inference_mode():
                tc, ts = torch_cos_sin()
                record("torch eager HF (cos/sin included)", lambda: torch_apply(*torch_cos_sin()),
                       torch_apply(tc, ts).numpy())
                record("torch eager HF (apply only)", lambda: torch_apply(tc, ts), None)

    # --- posenc
    plan = posenc.RopePlan(d, base=args.base)
    cache = posenc.RopeCache(plan, l, "float32")
    for name, src in (("plan", plan), ("cache<float32>", cache)):
        record(f"posenc {name}, out=None (allocates)", lambda s=src: posenc.apply_rope(x, s), posenc.apply_rope(x, src))
        buf = x.copy()
        # In place: rotating the same buffer again each call (the values drift, the work is the same).
        record(f"posenc {name}, out=x (in place)", lambda s=src, b=buf: posenc.apply_rope(b, s, out=b),
               posenc.apply_rope(x.copy(), src, out=None))

    # --- posenc on the torch tensor itself (DLPack, zero-copy), against torch eager
    if torch_threads is not None:
        xt_plan = torch.from_numpy(x.copy())
        xt_cache = torch.from_numpy(x.copy())
        record("posenc plan on a torch tensor, out=x", lambda: posenc.apply_rope(xt_plan, plan, out=xt_plan), None)
        record("posenc cache<float32> on a torch tensor, out=x",
               lambda: posenc.apply_rope(xt_cache, cache, out=xt_cache), None)

    baseline = rows["numpy HF (apply only)"][0]
    torch_base = rows.get("torch eager HF (apply only)", (None,))[0]
    width = max(len(k) for k in rows)
    print()
    print(f"{'variant':<{width}}  {'ms/call':>9}  {'min ms':>8}  {'GB/s':>6}  {'numpy HF / this':>15}  "
          f"{'torch HF / this' if torch_base else '':>15}  {'max |err|':>9}")
    for name, (med, mn) in rows.items():
        gbs = 2 * x.nbytes / med / 1e9  # one read and one write of the tensor
        err = f"{errors[name]:.1e}" if name in errors else ""
        vs_torch = f"{torch_base / med:14.2f}x" if torch_base else ""
        print(f"{name:<{width}}  {med * 1e3:9.2f}  {mn * 1e3:8.2f}  {gbs:6.2f}  {baseline / med:14.2f}x  {vs_torch:>15}  {err:>9}")
    worst = max(v for k, v in errors.items() if k.startswith("posenc"))
    print(f"\nmax |err|: against the formula in float64 with exact angles. posenc forms angles in double (within "
          f"{worst:.1e}); the HF formula in float32 forms p * w_i in float32, whose error grows with the position.")
    assert worst < 1e-5, "posenc disagrees with the formula"
    assert all(v < 1e-2 for v in errors.values()), "a variant disagrees with the formula"


if __name__ == "__main__":
    main()
