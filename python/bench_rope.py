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

Two more suites, one thread everywhere (``torch.set_num_threads(1)``; MLX's CPU ops run on the calling thread):

    python bench_rope.py --suite training      # forward + backward, (8, 2048, 16, 64) float32
    python bench_rope.py --suite mlx           # forward, N = 1 .. 4096 tokens of (N, 32, 128), vs mx.fast.rope

``training``: posenc's drop-in RotaryEmbedding (posenc.torch.compat.rotary_embedding_torch, interleaved) against
rotary-embedding-torch's, and posenc.torch.rope (half-split) against the Hugging Face formula in torch eager
(cos/sin precomputed); each call is y = rope(x), then dL/dx for a fixed dL/dy. ``mlx``: posenc.apply_rope
(half-split, allocating its result as MLX does) against ``mx.fast.rope(x, 128, traditional=False)`` evaluated
with ``mx.eval``. ``--json FILE`` writes the rows; docs/make_plots.py draws docs/plots/python_bench.png from the
committed python/results/*.json.
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


def suite_training(repeat: int) -> Dict[str, object]:
    """Forward + backward of RoPE on (8, 2048, 16, 64) float32, one thread."""
    import torch
    from rotary_embedding_torch import RotaryEmbedding as Original

    import posenc.torch as pt
    from posenc.torch.compat.rotary_embedding_torch import RotaryEmbedding as Dropin

    torch.set_num_threads(1)
    b, l, h, d = 8, 2048, 16, 64
    gen = torch.Generator().manual_seed(0)
    x_bhld = torch.randn(b, h, l, d, generator=gen).requires_grad_()
    x_blhd = x_bhld.detach().transpose(1, 2).contiguous().requires_grad_()
    g_bhld = torch.randn(b, h, l, d, generator=gen)
    g_blhd = g_bhld.transpose(1, 2).contiguous()
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d))
    emb = torch.cat([torch.outer(torch.arange(l).float(), inv_freq)] * 2, dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def hf(t):
        return t * cos + torch.cat((-t[..., d // 2:], t[..., : d // 2]), dim=-1) * sin

    original, dropin = Original(d), Dropin(d)
    plan = posenc.RopePlan(d, base=10000.0)
    variants = {
        "rotary-embedding-torch RotaryEmbedding (interleaved)": (lambda: original.rotate_queries_or_keys(x_bhld), x_bhld, g_bhld),
        "posenc drop-in RotaryEmbedding (interleaved)": (lambda: dropin.rotate_queries_or_keys(x_bhld), x_bhld, g_bhld),
        "torch eager HF formula (half-split, cos/sin cached)": (lambda: hf(x_bhld), x_bhld, g_bhld),
        "posenc.torch.rope (half-split)": (lambda: pt.rope(x_blhd, plan), x_blhd, g_blhd),
    }
    rows = {}
    for name, (f, x, g) in variants.items():
        rows[name] = timed(lambda f=f, x=x, g=g: torch.autograd.grad(f(), x, g), repeat)
    base = rows["rotary-embedding-torch RotaryEmbedding (interleaved)"][0]
    hf_base = rows["torch eager HF formula (half-split, cos/sin cached)"][0]
    print(f"forward + backward, (B, L, H, D) = ({b}, {l}, {h}, {d}) float32, torch {torch.__version__}, 1 thread")
    width = max(len(k) for k in rows)
    print(f"{'variant':<{width}}  {'ms/call':>9}  {'min ms':>8}  {'rotary-embedding-torch / this':>30}  {'HF eager / this':>15}")
    for name, (med, mn) in rows.items():
        print(f"{name:<{width}}  {med * 1e3:9.2f}  {mn * 1e3:8.2f}  {base / med:29.2f}x  {hf_base / med:14.2f}x")
    return {"suite": "training", "shape": [b, l, h, d], "torch": torch.__version__,
            "rows": {k: {"median_s": v[0], "min_s": v[1]} for k, v in rows.items()}}


def suite_mlx(repeat: int) -> Dict[str, object]:
    """Forward RoPE of N tokens of (N, 32, 128) float32 against MLX's mx.fast.rope on the CPU."""
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    h, d = 32, 128
    plan = posenc.RopePlan(d, base=10000.0)
    rows: Dict[str, Dict[str, float]] = {}
    print(f"forward, (1, N, {h}, {d}) float32, half-split, positions 0..N-1; MLX {mx.__version__} on the CPU")
    print(f"{'N':>6}  {'posenc us':>10}  {'mlx us':>10}  {'mlx / posenc':>12}  {'max |posenc - mlx|':>18}")
    for n in (1, 4, 16, 64, 256, 1024, 4096):
        x = np.random.default_rng(n).standard_normal((1, n, h, d), dtype=np.float32)
        xm = mx.array(np.ascontiguousarray(x.transpose(0, 2, 1, 3)))  # MLX: (B, H, L, D)
        mx.eval(xm)
        reps = max(repeat, 4096 // n)

        def run_mlx():
            y = mx.fast.rope(xm, d, traditional=False, base=10000.0, scale=1.0, offset=0)
            mx.eval(y)
            return y

        p_med, _ = timed(lambda: posenc.apply_rope(x, plan), reps)
        m_med, _ = timed(run_mlx, reps)
        err = float(np.abs(np.asarray(run_mlx()).transpose(0, 2, 1, 3) - posenc.apply_rope(x, plan)).max())
        rows[str(n)] = {"posenc_s": p_med, "mlx_s": m_med, "max_abs_diff": err}
        print(f"{n:6d}  {p_med * 1e6:10.1f}  {m_med * 1e6:10.1f}  {m_med / p_med:11.2f}x  {err:18.1e}")
    return {"suite": "mlx", "heads": h, "head_dim": d, "mlx": mx.__version__, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", type=int, nargs=4, default=[1, 4096, 32, 128], metavar=("N", "L", "H", "D"))
    ap.add_argument("--base", type=float, default=10000.0)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--isa", default=None, help="cap posenc's kernels (scalar, avx2, avx512, neon)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch even if installed")
    ap.add_argument("--suite", choices=("apply", "training", "mlx"), default="apply")
    ap.add_argument("--json", default=None, help="write the training / mlx rows to this file")
    args = ap.parse_args()
    if args.isa:
        posenc.set_isa(args.isa)
    if args.suite != "apply":
        print(f"CPU: {cpu_model()}  ({os.cpu_count()} logical CPUs; load average {os.getloadavg()[0]:.2f})")
        print(f"posenc {posenc.__version__}, ISA {posenc.isa()}")
        result = suite_training(args.repeat) if args.suite == "training" else suite_mlx(args.repeat)
        result.update({"cpu": cpu_model(), "isa": posenc.isa(), "posenc": posenc.__version__})
        if args.json:
            import json

            with open(args.json, "w") as f:
                json.dump(result, f, indent=1, sort_keys=True)
                f.write("\n")
        return

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
