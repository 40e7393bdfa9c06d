#!/usr/bin/env python3
"""Runs the two benchmark binaries several times and prints the table of bench/README.md (issue 20).

Each binary (posenc_bench: default flags and run-time dispatch; posenc_bench_native: -march=native and static
dispatch) runs --runs times, alternating, pinned to one core (taskset, where present); every row reports the
median over the runs of ns_per_call, vs_baseline and vs_plain (baseline.hpp, plain.hpp). "default / native" is
the default binary's vs_plain over the native binary's (vs_baseline where a row has no plain loop): both are
paired against the same plain loop and baseline (one library, built once), so the ratio does not depend on how
fast the machine was during either run, which a ratio of raw times across two processes does on a shared VM
(>= 0.95: default flags within 5% of -march=native).

Usage: /usr/bin/python3 bench/run_table.py BUILD_DIR [--runs 3] [--min-time 0.3] [--filter REGEX] [--json OUT]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys


def run(binary, min_time, bench_filter, core):
    cmd = [binary, "--benchmark_format=json", f"--benchmark_min_time={min_time}"]
    if bench_filter:
        cmd.append(f"--benchmark_filter={bench_filter}")
    if core is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(core)] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def key_of(name):
    """The row's name without the ISA suffix (/avx2, /avx2/static) and manual_time."""
    name = name.replace("/manual_time", "")
    name = re.sub(r"/(scalar|avx2|avx512|neon)(/static)?", "", name)
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--min-time", default="0.3")
    ap.add_argument("--filter", default="")
    ap.add_argument("--core", type=int, default=1 if (os.cpu_count() or 1) > 1 else 0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    bins = {"default": os.path.join(args.build, "bench", "posenc_bench"),
            "native": os.path.join(args.build, "bench", "posenc_bench_native")}
    rows = {}  # key -> mode -> list of dicts
    isa = {}
    context = None
    for r in range(args.runs):
        for mode, b in bins.items():
            if not os.path.exists(b):
                continue
            data = run(b, args.min_time, args.filter, args.core)
            context = context or data.get("context")
            for bm in data["benchmarks"]:
                k = key_of(bm["name"])
                m = re.search(r"/(scalar|avx2|avx512|neon)(/static)?", bm["name"])
                if m:
                    isa[mode] = m.group(0).lstrip("/")
                rows.setdefault(k, {}).setdefault(mode, []).append(bm)
        print(f"run {r + 1}/{args.runs} done", file=sys.stderr)

    def med(mode_rows, field):
        vals = [b[field] for b in mode_rows if field in b]
        return statistics.median(vals) if vals else None

    def fmt_ns(ns):
        if ns is None:
            return ""
        for unit, scale in (("ms", 1e6), ("µs", 1e3)):
            if ns >= scale:
                return f"{ns / scale:.3g} {unit}"
        return f"{ns:.0f} ns"

    def fmt(v, digits=2):
        return "" if v is None else f"{v:.{digits}f}"

    print(f"isa: default {isa.get('default', '?')}, native {isa.get('native', '?')}; runs: {args.runs}; "
          f"min_time {args.min_time} s")
    if context:
        print(f"host: {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs at "
              f"{context.get('mhz_per_cpu', '?')} MHz")
    print()
    print("| benchmark | ns/call | vs_baseline | vs_plain | native vs_baseline | native vs_plain | default / native speed |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    table = {}
    for k, modes in rows.items():
        d, n = modes.get("default", []), modes.get("native", [])
        ratio = None
        if d and n:
            field = "vs_plain" if "vs_plain" in d[0] else "vs_baseline"
            dv, nv = med(d, field), med(n, field)
            ratio = dv / nv if dv and nv else None
        entry = {"ns_per_call": med(d, "ns_per_call"), "vs_baseline": med(d, "vs_baseline"),
                 "vs_plain": med(d, "vs_plain"), "native_vs_baseline": med(n, "vs_baseline"),
                 "native_vs_plain": med(n, "vs_plain"), "default_over_native": ratio,
                 # The baseline's vector width in each run (AVX-512 CPUs: baseline.hpp's prefer_wide_stream).
                 "baseline_bits": [b["baseline_bits"] for b in d + n if "baseline_bits" in b]}
        table[k] = entry
        print(f"| {k} | {fmt_ns(entry['ns_per_call'])} | {fmt(entry['vs_baseline'])} | {fmt(entry['vs_plain'])} | "
              f"{fmt(entry['native_vs_baseline'])} | {fmt(entry['native_vs_plain'])} | {fmt(ratio)} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"isa": isa, "context": context, "rows": table}, f, indent=1)


if __name__ == "__main__":
    main()
