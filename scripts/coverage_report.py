#!/usr/bin/env python3
"""Line coverage of include/posenc/ from gcov's JSON files (gcov -j), as scripts/coverage.sh makes them.

A header line counts as executable if any translation unit's instantiations hold code for it, and as covered if
any of them executed it (templates are instantiated per translation unit, so the union is the honest measure).
Usage: coverage_report.py GCOV_JSON_DIR INCLUDE_POSENC_DIR
"""
import glob, gzip, json, os, sys
cov_dir, inc = sys.argv[1], os.path.realpath(sys.argv[2])
lines = {}
for p in glob.glob(os.path.join(cov_dir, "*.gcov.json.gz")):
    d = json.load(gzip.open(p))
    for f in d.get("files", []):
        path = os.path.realpath(os.path.join(d.get("current_working_directory", ""), f["file"]))
        if not path.startswith(inc + "/"):
            continue
        m = lines.setdefault(path[len(inc) + 1:], {})
        for l in f["lines"]:
            m[l["line_number"]] = m.get(l["line_number"], 0) + l["count"]
tot = sum(len(m) for m in lines.values()); hit = sum(sum(1 for c in m.values() if c > 0) for m in lines.values())
print(f"include/posenc/: {hit} of {tot} executable lines run by the tests ({100.0 * hit / max(tot, 1):.1f}%), {len(lines)} headers")
groups = {}
for f, m in lines.items():
    g = f.split("/")[0] if "/" in f else "(top level)"
    if f.startswith("detail/"):
        g = "/".join(f.split("/")[:2]) if f.count("/") > 1 else "detail"
    h, t = groups.get(g, (0, 0))
    groups[g] = (h + sum(1 for c in m.values() if c > 0), t + len(m))
for g, (h, t) in sorted(groups.items()):
    print(f"  {g:24s} {h:6d} / {t:6d}  {100.0 * h / max(t, 1):5.1f}%")
print("least covered headers (>= 20 executable lines):")
rows = sorted(((sum(1 for c in m.values() if c > 0) / len(m), f, len(m)) for f, m in lines.items() if len(m) >= 20))
for r, f, n in rows[:15]:
    print(f"  {f:48s} {100 * r:5.1f}% of {n}")
seen = set(lines)
allh = [os.path.relpath(p, inc) for p in glob.glob(inc + "/**/*.hpp", recursive=True) + glob.glob(inc + "/**/*.cuh", recursive=True)]
print("headers with no line run or not compiled into these binaries:", " ".join(sorted(h for h in allh if h not in seen)))
