#!/usr/bin/env python3
"""Fails a CTest run that skipped a test for a reason not on the documented list.

CTest counts a skipped test (GTEST_SKIP, or an example's SKIP_RETURN_CODE) as passed, so a test that silently
stops testing would pass forever. Every skip must carry one of the reasons below, which are the only ones
posenc accepts (README, "What CI verifies"):

  - an instruction set this CPU lacks: GTEST_SKIP "the CPU lacks <isa>" (tests/test_util.hpp);
  - no CUDA device: the device suites and the CUDA example ("no CUDA device (...)");
  - the one CUDA test that needs a machine without a device (the launch-failure path);
  - (pytest, checked by scripts/check_python.sh) the Python package's PyTorch test where PyTorch is not installed.

Usage: check_skips.py CTEST_JUNIT.xml [JOB-NAME]   (ctest --output-junit writes the file)
"""
import re
import sys
import xml.etree.ElementTree as ET

ALLOWED = [
    ("an ISA this CPU lacks", re.compile(r"the CPU lacks (avx2|avx512|neon)\b")),
    ("no CUDA device", re.compile(r"no CUDA device")),
    ("needs a machine without a CUDA device", re.compile(r"needs a machine without a CUDA device")),
]


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    job = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
    root = ET.parse(sys.argv[1]).getroot()
    counts = {name: 0 for name, _ in ALLOWED}
    bad = []
    for case in root.iter("testcase"):
        if case.find("skipped") is None:
            continue
        out = "".join(e.text or "" for e in case.iter("system-out"))
        for name, pattern in ALLOWED:
            if pattern.search(out):
                counts[name] += 1
                break
        else:
            bad.append((case.get("name"), out.strip().splitlines()[-3:] if out.strip() else ["(no output)"]))
    summary = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
    if bad:
        print(f"check_skips.py: {job}: {len(bad)} test(s) skipped for a reason not on the documented list:",
              file=sys.stderr)
        for name, tail in bad:
            print(f"  {name}: {' | '.join(tail)}", file=sys.stderr)
        return 1
    print(f"check_skips.py: {job}: every skip has a documented reason ({summary or 'no skips'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
