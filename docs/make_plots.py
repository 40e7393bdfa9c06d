#!/usr/bin/env python3
"""Draws the plots of docs/*.md from the `posenc` tool's own output.

Every curve labelled "posenc" is read back from a file the tool wrote (`posenc plan`, `rope`, `xpos`, `alibi`,
`t5-buckets`, `sinusoidal`); the only values computed here are the references the plots compare against
(the exact angle, in mpmath at 40 digits, and the float32 angle most engines form, in numpy float32, as
`inv_freq = 1.0 / (base ** (arange(0, R, 2).float() / R))` and `outer(t.float(), inv_freq)` do in PyTorch).
CI runs this script (scripts/check_docs.sh), so the pictures cannot drift from the code.

Usage: /usr/bin/python3 docs/make_plots.py --posenc build/examples-release/examples/cli/posenc [--out docs/plots]
Needs numpy, mpmath and matplotlib (Debian: python3-numpy python3-mpmath python3-matplotlib).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mpmath  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PHI3_CONFIG = os.path.join(REPO, "tests", "data", "hf", "phi3.json")  # Phi-3-mini-128k-instruct's config.json


SUMMARY = []  # "name value" lines written to plots/summary.txt, which CI compares with the committed one


def fact(name, value):
    """Records a number a plot shows, to 4 significant digits (stable across ISAs and library versions)."""
    SUMMARY.append("%s %.4g" % (name, value))


class Tool:
    """Runs the posenc binary; every output goes through a file in a scratch folder."""

    def __init__(self, exe, scratch):
        self.exe = exe
        self.scratch = scratch
        self.count = 0

    def path(self, suffix):
        self.count += 1
        return os.path.join(self.scratch, "f%d%s" % (self.count, suffix))

    def run(self, *args):
        cmd = [self.exe] + [str(a) for a in args]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("make_plots.py: %s failed (%d): %s" % (" ".join(cmd), done.returncode, done.stderr.strip()))

    def plan(self, *flags):
        """Columns inv_freq, wavelength, magnitude, logit_scale of `posenc plan` (float64 [R/2, 4])."""
        out = self.path(".npy")
        self.run("plan", "--output", out, *flags)
        return np.load(out)

    def npy(self, sub, *flags):
        out = self.path(".npy")
        self.run(sub, "--output", out, *flags)
        return np.load(out)


def save(fig, out, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=110)
    plt.close(fig)
    print("make_plots.py: wrote", os.path.join(os.path.relpath(out, REPO), name))


def wavelength_figure(title, base_plan, curves, context_lines, note=None):
    """Top: wavelength per pair (log); bottom: the ratio scaled / unscaled."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 6.2), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    pairs = np.arange(base_plan.shape[0])
    top.semilogy(pairs, base_plan[:, 1], "k-", lw=2, label="unscaled")
    for label, plan, style in curves:
        top.semilogy(pairs, plan[:, 1], style, label=label)
        bottom.plot(pairs, plan[:, 1] / base_plan[:, 1], style, label=label)
    for value, label in context_lines:
        top.axhline(value, color="0.6", ls=":", lw=1)
        top.text(pairs[-1], value, " " + label, va="bottom", ha="right", fontsize=8, color="0.4")
    top.set_ylabel("wavelength 2*pi/w_i (positions)")
    top.set_title(title)
    top.legend(fontsize=8, loc="upper left")
    top.grid(True, which="major", alpha=0.3)
    bottom.set_ylabel("scaled / unscaled")
    bottom.set_xlabel("pair i")
    bottom.grid(True, alpha=0.3)
    if note:
        bottom.text(0.99, 0.05, note, transform=bottom.transAxes, va="bottom", ha="right", fontsize=8,
                    bbox={"facecolor": "white", "edgecolor": "0.8"})
    return fig


def plot_rope(tool, out):
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for base, style in ((10000, "-"), (500000, "--"), (1000000, ":")):
        p = tool.plan("--head-dim", 128, "--base", base)
        ax.semilogy(np.arange(p.shape[0]), p[:, 1], style, label="base %g" % base)
    for value, label in ((4096, "4k context"), (131072, "128k context")):
        ax.axhline(value, color="0.6", ls=":", lw=1)
        ax.text(63, value, label + " ", va="bottom", ha="right", fontsize=8, color="0.4")
    ax.set_xlabel("pair i (head_dim 128)")
    ax.set_ylabel("wavelength 2*pi/w_i (positions)")
    ax.set_title("RoPE wavelengths: w_i = base^(-2i/R)   [posenc plan]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    save(fig, out, "rope_wavelengths.png")


def plot_scalings(tool, out):
    d = ["--head-dim", 128]
    base = tool.plan(*d)
    lin = tool.plan(*d, "--scaling", "linear", "--factor", 4)
    ntk = tool.plan(*d, "--scaling", "ntk", "--factor", 4)
    fig = wavelength_figure("Linear interpolation and NTK-aware scaling, factor 4 (base 10000, D 128)   [posenc plan]",
                            base, [("linear, factor 4", lin, "C0-"), ("NTK-aware, factor 4", ntk, "C1--")],
                            [(4096, "M = 4096")])
    save(fig, out, "scaling_linear_ntk.png")

    curves = []
    for n, style in ((4096, "C0-"), (8192, "C1--"), (16384, "C2-."), (65536, "C3:")):
        curves.append(("dynamic NTK, sequence length %d" % n,
                       tool.plan(*d, "--scaling", "dynamic-ntk", "--factor", 4, "--original-max-positions", 4096,
                                 "--length", n), style))
    fig = wavelength_figure("Dynamic NTK (factor 4, M 4096): the base grows with the sequence length   [posenc plan]",
                            base, curves, [(4096, "M = 4096")],
                            note="n <= M: unscaled; n > M: base' = base*((F*n/M) - (F-1))^(R/(R-2))")
    save(fig, out, "scaling_dynamic_ntk.png")

    yarn = tool.plan(*d, "--scaling", "yarn", "--factor", 8, "--original-max-positions", 4096)
    m = yarn[0, 2]
    fact("yarn_factor8_magnitude", m)
    fact("yarn_factor8_last_pair_ratio", yarn[-1, 1] / base[-1, 1])
    fact("ntk_factor4_last_pair_ratio", ntk[-1, 1] / base[-1, 1])
    fact("dynamic_ntk_65536_last_pair_ratio", curves[-1][1][-1, 1] / base[-1, 1])
    # The ramp's ends: the pairs that turn beta_fast (32) and beta_slow (1) times over the original context.
    fast, slow = 4096 / 32.0, 4096 / 1.0
    fig = wavelength_figure("YaRN, factor 8, M 4096, beta_fast 32, beta_slow 1   [posenc plan]", base,
                            [("YaRN", yarn, "C0-"), ("linear, factor 8 (for comparison)",
                                                     tool.plan(*d, "--scaling", "linear", "--factor", 8), "C7:")],
                            [(fast, "M/beta_fast = %g" % fast), (slow, "M/beta_slow = %g" % slow)],
                            note="ratio 1 (extrapolate) -> ramp -> ratio 8 (interpolate); magnitude %.4f = 0.1 ln 8 + 1" % m)
    save(fig, out, "scaling_yarn.png")

    l3d = ["--head-dim", 128, "--base", 500000]
    l3base = tool.plan(*l3d)
    llama3 = tool.plan(*l3d, "--scaling", "llama3", "--factor", 8, "--low-freq-factor", 1, "--high-freq-factor", 4,
                       "--original-max-positions", 8192)
    fig = wavelength_figure("Llama 3 scaling (Llama 3.1: factor 8, low 1, high 4, M 8192, base 500000)   [posenc plan]",
                            l3base, [("llama3", llama3, "C0-")],
                            [(8192 / 1.0, "M/low_freq_factor = 8192"), (8192 / 4.0, "M/high_freq_factor = 2048")],
                            note="wavelength < M/high: unchanged; > M/low: divided by 8; smooth blend between")
    save(fig, out, "scaling_llama3.png")

    fact("llama3_factor8_last_pair_ratio", llama3[-1, 1] / l3base[-1, 1])
    fact("llama3_factor8_first_pair_ratio", llama3[0, 1] / l3base[0, 1])
    short = tool.plan("--hf-config", PHI3_CONFIG, "--length", 4096)
    long = tool.plan("--hf-config", PHI3_CONFIG, "--length", 131072)
    fact("phi3_longrope_magnitude", long[0, 2])
    fact("phi3_longrope_long_over_short_last_pair", long[-1, 1] / short[-1, 1])
    fig = wavelength_figure("LongRoPE: Phi-3-mini-128k-instruct's config.json (M 4096)   [posenc plan --hf-config]",
                            tool.plan("--hf-config", PHI3_CONFIG, "--scaling", "none"),
                            [("short factors (length <= 4096)", short, "C0-"),
                             ("long factors (length 131072)", long, "C1--")], [(4096, "M = 4096")],
                            note="magnitude %.4f = sqrt(1 + ln 32 / ln 4096) with either factor set" % long[0, 2])
    save(fig, out, "scaling_longrope.png")


def exact_angle_error(p, w_exact_mp, angle):
    """|angle - p*w| reduced to (-pi, pi], with p*w exact (mpmath)."""
    e = mpmath.mpf(float(angle)) - mpmath.mpf(int(p)) * w_exact_mp
    e = e - 2 * mpmath.pi * mpmath.nint(e / (2 * mpmath.pi))
    return abs(float(e))


def plot_angle_error(tool, out):
    """The angle error of the highest- and a middle-frequency pair against position: float32-formed angles
    (engines) against posenc's outputs, whose angle is formed in double and rounded once at the end."""
    mpmath.mp.dps = 40
    base, r = 10000, 128
    positions = np.unique(np.round(np.logspace(0, 6, 160)).astype(np.int64))
    pairs = (1, 20)  # w = 0.866 and 0.056 (pair 0 has w = 1, which float32 multiplies exactly)
    w_exact = [mpmath.power(base, -mpmath.mpf(2 * i) / r) for i in pairs]
    # Engines: inv_freq and the product in float32.
    inv32 = (np.float32(1.0) / (np.float32(base) ** (np.arange(0, r, 2, dtype=np.float32) / np.float32(r)))).astype(np.float32)
    # posenc: rotate x = (1, 0) in pair i; the output is (cos, sin) of the angle, in the input's dtype.
    x = np.zeros((1, len(positions), 1, r))
    for i in pairs:
        x[0, :, 0, i] = 1.0  # half-split: pair i is (x[i], x[i + R/2])
    pos_file = tool.path(".npy")
    np.save(pos_file, positions.reshape(1, -1))
    results = {}
    for dtype in ("<f4", "<f8"):
        xin = tool.path(".npy")
        np.save(xin, x.astype(dtype))
        yout = tool.path(".npy")
        tool.run("rope", "--input", xin, "--output", yout, "--positions", pos_file, "--base", base)
        results[dtype] = np.load(yout).astype(np.float64)
    worst = {"float32-formed angle": 0.0, "posenc float32 output": 0.0, "posenc float64 output": 0.0}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, k, i in zip(axes, range(len(pairs)), pairs):
        f32 = [exact_angle_error(p, w_exact[k], np.float32(p) * inv32[i]) for p in positions]
        got = {}
        for dtype, y in results.items():
            ang = np.arctan2(y[0, :, 0, i + r // 2], y[0, :, 0, i])
            got[dtype] = [max(exact_angle_error(p, w_exact[k], a), 1e-17) for p, a in zip(positions, ang)]
        for name, errs in zip(worst, (f32, got["<f4"], got["<f8"])):
            worst[name] = max(worst[name], max(errs))
        # Points, not lines: an error is often exactly 0 at one position and large at the next.
        ax.loglog(positions, np.maximum(f32, 1e-17), "C3.", ms=4, label="angle formed in float32 (most engines)")
        ax.loglog(positions, got["<f4"], "C0.", ms=4, label="posenc, float32 output (angle in double)")
        ax.loglog(positions, got["<f8"], "C2.", ms=4, label="posenc, float64 output")
        ax.set_title("pair %d: w = %s" % (i, mpmath.nstr(w_exact[k], 4)))
        ax.set_xlabel("position")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("|angle error| (rad)")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle("RoPE angle error against the exact p*w (base 10000, R 128)   [posenc rope]", fontsize=10)
    save(fig, out, "angle_error.png")
    return worst


def plot_tables(tool, out):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, layout in zip(axes, ("interleaved", "concat")):
        t = tool.npy("sinusoidal", "--length", 128, "--dim", 64, "--layout", layout)
        im = ax.imshow(t, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
        ax.set_title("%s layout" % layout)
        ax.set_xlabel("feature")
        ax.set_ylabel("position")
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.suptitle("Sinusoidal table, L 128, D 64   [posenc sinusoidal]", fontsize=10)
    fig.savefig(os.path.join(out, "sinusoidal.png"), dpi=110)
    plt.close(fig)
    print("make_plots.py: wrote", os.path.join(os.path.relpath(out, REPO), "sinusoidal.png"))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, causal in zip(axes, (False, True)):
        flags = ["--query-len", 64, "--key-len", 64] + (["--causal"] if causal else [])
        b = tool.npy("t5-buckets", *flags)
        im = ax.imshow(b, cmap="viridis", interpolation="nearest")
        ax.set_title("causal (decoder)" if causal else "bidirectional (encoder)")
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("T5 relative-position buckets, 32 buckets, max distance 128   [posenc t5-buckets]", fontsize=10)
    save(fig, out, "t5_buckets.png")

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    bias = tool.npy("alibi", "--heads", 8, "--query-len", 32, "--key-len", 32)
    for ax, h in zip(axes[:2], (0, 7)):
        im = ax.imshow(bias[h], cmap="magma", interpolation="nearest")
        ax.set_title("bias, head %d of 8" % h)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        fig.colorbar(im, ax=ax, shrink=0.8)
    for heads, style in ((8, "o-"), (12, "s--"), (32, "^:")):
        s = tool.npy("alibi-slopes", "--heads", heads)
        axes[2].semilogy(np.arange(heads), s, style, ms=3, label="%d heads" % heads)
    axes[2].set_title("slopes")
    axes[2].set_xlabel("head h")
    axes[2].legend(fontsize=8)
    axes[2].grid(True, alpha=0.3)
    fig.suptitle("ALiBi: bias = slope_h * (j - i), max_bias 8   [posenc alibi, alibi-slopes]", fontsize=10)
    save(fig, out, "alibi.png")

    d, length = 64, 2048
    x = np.zeros((1, length, d))
    x[0, :, 0::2] = 1.0  # interleaved pairs (x[2i], x[2i+1]) = (1, 0): the output's norm is the xPos scale
    xin = tool.path(".npy")
    np.save(xin, x.astype("<f8"))
    fig, ax = plt.subplots(figsize=(7.5, 4))
    for mode, style in (("up", "-"), ("down", "--")):
        flags = ["--input", xin, "--center", 0] + (["--downscale"] if mode == "down" else [])
        yout = tool.path(".npy")
        tool.run("xpos", "--output", yout, *flags)
        y = np.load(yout)
        for k, i in enumerate((0, 8, 31)):
            norm = np.hypot(y[0, :, 2 * i], y[0, :, 2 * i + 1])
            ax.semilogy(np.arange(length), norm, "C%d%s" % (k, style),
                        label="pair %d, %s" % (i, "queries (zeta^(p/512))" if mode == "up" else "keys (divided)"))
    ax.set_xlabel("position p (centre 0)")
    ax.set_ylabel("scale")
    ax.set_title("xPos scale per pair, D 64, scale_base 512, gamma 0.4   [posenc xpos]")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, alpha=0.3)
    save(fig, out, "xpos.png")


def plot_python_bench(out):
    """python/bench_rope.py's mlx and training suites, from the committed python/results/*.json (measured numbers,
    not recomputed here): time per token against N for posenc and MLX, and the training speed-ups."""
    import glob
    import json

    results = {}
    for path in sorted(glob.glob(os.path.join(REPO, "python", "results", "*.json"))):
        with open(path) as f:
            r = json.load(f)
        results[r["suite"]] = (os.path.basename(path), r)
    if "mlx" not in results:
        return
    name, r = results["mlx"]
    ns = sorted(int(n) for n in r["rows"])
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for key, label in (("posenc_s", "posenc.apply_rope"), ("mlx_s", "MLX mx.fast.rope (CPU)")):
        ax.loglog(ns, [r["rows"][str(n)][key] / n * 1e9 for n in ns], marker="o", label=label)
    ax.set_xlabel("tokens N of (N, %d, %d) float32" % (r["heads"], r["head_dim"]))
    ax.set_ylabel("ns per token")
    ax.set_title("RoPE forward, one thread, %s\n[python/results/%s]" % (r["cpu"], name), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, out, "python_bench.png")
    fact("python_bench_mlx_slowest_ratio", min(r["rows"][str(n)]["mlx_s"] / r["rows"][str(n)]["posenc_s"] for n in ns))
    if "training" in results:
        rows = results["training"][1]["rows"]
        base = rows["rotary-embedding-torch RotaryEmbedding (interleaved)"]["median_s"]
        fact("python_bench_dropin_vs_rotary_embedding_torch", base / rows["posenc drop-in RotaryEmbedding (interleaved)"]["median_s"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--posenc", required=True, help="the posenc binary (build/examples-release/examples/cli/posenc)")
    ap.add_argument("--out", default=os.path.join(HERE, "plots"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="posenc_plots_") as scratch:
        tool = Tool(os.path.abspath(args.posenc), scratch)
        plot_rope(tool, args.out)
        plot_scalings(tool, args.out)
        worst = plot_angle_error(tool, args.out)
        plot_tables(tool, args.out)
    plot_python_bench(args.out)
    # Orders of magnitude only: the float32 figures are the reference's, the posenc ones may move in the last bits.
    for name, value in worst.items():
        fact("worst_angle_error_" + name.replace(" ", "_"), float("1e%d" % round(np.log10(value))))
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write("# Numbers the plots show (docs/make_plots.py); CI regenerates this file and compares it.\n")
        f.write("\n".join(SUMMARY) + "\n")
    print("make_plots.py: worst angle error over positions 1 .. 1e6, pairs 1 and 20: " +
          ", ".join("%s %.3g rad" % kv for kv in worst.items()))


if __name__ == "__main__":
    main()
