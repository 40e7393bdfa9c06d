#!/usr/bin/env python3
"""Before/after: runs two posenc_bench binaries (two commits, same flags) alternately, pinned to one core, and
prints each row's vs_plain (or vs_baseline where a row has no plain loop) for both and their ratio, after / before.

Both ratios are paired in their own process against a plain loop and a memory baseline compiled into the same
binary, so the comparison does not depend on how fast the shared machine was during either run; the median of
--runs alternating runs damps the rest. A ratio below 1 is a row that got slower.

Usage: /usr/bin/python3 bench/compare.py BEFORE_BIN AFTER_BIN [--runs 3] [--min-time 0.2] [--filter REGEX]
"""
import argparse
import json
import shutil
import statistics
import subprocess


def run(binary, min_time, bench_filter, core):
    cmd = [binary, "--benchmark_format=json", f"--benchmark_min_time={min_time}"]
    if bench_filter:
        cmd.append(f"--benchmark_filter={bench_filter}")
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", str(core)] + cmd
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["benchmarks"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--filter", default="")
    ap.add_argument("--core", type=int, default=1)
    args = ap.parse_args()
    rows = {}  # name -> side -> [ratio]
    for _ in range(args.runs):
        for side, binary in (("before", args.before), ("after", args.after)):
            for b in run(binary, args.min_time, args.filter, args.core):
                field = "vs_plain" if "vs_plain" in b else "vs_baseline"
                if field in b:
                    rows.setdefault(b["name"].replace("/manual_time", ""), {}).setdefault(side, []).append(
                        (field, b[field]))
    print("| benchmark | ratio | before | after | after / before |")
    print("| --- | --- | ---: | ---: | ---: |")
    changes = []
    for name, sides in rows.items():
        if "before" not in sides or "after" not in sides:
            continue
        field = sides["after"][0][0]
        b = statistics.median(v for _, v in sides["before"])
        a = statistics.median(v for _, v in sides["after"])
        changes.append(a / b)
        print(f"| {name} | {field} | {b:.3f} | {a:.3f} | {a / b:.3f} |")
    if changes:
        print(f"\n{len(changes)} rows; after / before: median {statistics.median(changes):.3f}, "
              f"min {min(changes):.3f}, max {max(changes):.3f}")


if __name__ == "__main__":
    main()
