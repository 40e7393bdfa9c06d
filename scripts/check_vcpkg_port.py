#!/usr/bin/env python3
"""Checks the vcpkg overlay port (cmake/packaging/vcpkg/posenc) without the vcpkg tool, which cannot be downloaded here.

1. vcpkg.json against the manifest rules of vcpkg's documentation (learn.microsoft.com/vcpkg/reference/
   vcpkg-json): known top-level fields only, a lowercase port name, exactly one version field equal to
   include/posenc/version.hpp's, an SPDX license, dependencies as names or objects of known fields, features
   with a description.
2. portfile.cmake follows the header-only conventions (vcpkg_cmake_configure / _install / _config_fixup,
   vcpkg_install_copyright, release-only build), every -D option it passes exists in CMakeLists.txt, and every
   feature it maps to an option (vcpkg_check_features) is a feature of vcpkg.json and an option of CMakeLists.txt.
3. The CMake install it drives: configure with exactly those options, install into a scratch prefix, and find
   the files the fixup and the usage text expect (share/cmake/posenc/posencConfig.cmake, share/pkgconfig/
   posenc.pc, the headers, the license) and nothing in lib/ or bin/.
Usage: check_vcpkg_port.py <work-dir>
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = os.path.join(ROOT, "cmake", "packaging", "vcpkg", "posenc")
TOP_FIELDS = {"name", "version", "version-semver", "version-date", "version-string", "port-version", "description",
              "maintainers", "homepage", "documentation", "license", "supports", "dependencies", "features",
              "default-features", "builtin-baseline", "overrides", "$schema"}
DEP_FIELDS = {"name", "host", "features", "default-features", "platform", "version>="}
FEATURE_FIELDS = {"description", "dependencies", "supports", "license"}
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)


def check_manifest():
    with open(os.path.join(PORT, "vcpkg.json")) as f:
        m = json.load(f)
    check(set(m) <= TOP_FIELDS, f"unknown top-level fields: {sorted(set(m) - TOP_FIELDS)}")
    check(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", m.get("name", "")) is not None, "name must be lowercase a-z0-9-")
    versions = [k for k in ("version", "version-semver", "version-date", "version-string") if k in m]
    check(len(versions) == 1, f"exactly one version field, got {versions}")
    with open(os.path.join(ROOT, "include", "posenc", "version.hpp")) as f:
        want = re.search(r'POSENC_VERSION_STRING "([^"]+)"', f.read()).group(1)
    check(m.get("version") == want, f"version {m.get('version')} != version.hpp {want}")
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        project = re.search(r"project\(posenc VERSION (\S+)", f.read()).group(1)
    check(project == want, f"CMakeLists.txt project VERSION {project} != version.hpp {want}")
    check(re.fullmatch(r"[A-Za-z0-9.\-+]+( (AND|OR|WITH) [A-Za-z0-9.\-+]+)*", m.get("license", "")) is not None,
          "license must be an SPDX expression")
    check(isinstance(m.get("description"), (str, list)), "description is a string or an array of strings")

    def check_deps(deps, where):
        for d in deps:
            if isinstance(d, str):
                continue
            check(isinstance(d, dict) and "name" in d, f"{where}: a dependency is a name or an object with name")
            check(set(d) <= DEP_FIELDS, f"{where}: unknown dependency fields {sorted(set(d) - DEP_FIELDS)}")
    deps = m.get("dependencies", [])
    check_deps(deps, "dependencies")
    names = {d if isinstance(d, str) else d["name"] for d in deps}
    check({"vcpkg-cmake", "vcpkg-cmake-config"} <= names, "header-only CMake ports depend on vcpkg-cmake(-config)")
    check("eigen3" in names, "eigen3 is a dependency")
    for fname, feat in m.get("features", {}).items():
        check(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fname) is not None, f"feature name {fname}")
        check(set(feat) <= FEATURE_FIELDS, f"feature {fname}: unknown fields {sorted(set(feat) - FEATURE_FIELDS)}")
        check(isinstance(feat.get("description"), (str, list)), f"feature {fname} needs a description")
        check_deps(feat.get("dependencies", []), f"feature {fname}")


def portfile_options():
    with open(os.path.join(PORT, "portfile.cmake")) as f:
        text = f.read()
    for call in ("vcpkg_cmake_configure(", "vcpkg_cmake_install()", "vcpkg_cmake_config_fixup(",
                 "vcpkg_install_copyright(", "set(VCPKG_BUILD_TYPE release)"):
        check(call in text, f"portfile.cmake lacks {call}")
    check(os.path.isfile(os.path.join(PORT, "usage")), "the port has a usage file")
    opts = re.findall(r"-D(POSENC_[A-Z_]+)=(\w+)", text)
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cmake = f.read()
    for name, _ in opts:
        check(f"option({name} " in cmake, f"portfile option {name} is not an option of CMakeLists.txt")
    mapped = re.search(r"vcpkg_check_features\(OUT_FEATURE_OPTIONS (\w+) FEATURES ([^)]*)\)", text)
    if mapped:
        with open(os.path.join(PORT, "vcpkg.json")) as f:
            features = set(json.load(f).get("features", {}))
        pairs = mapped.group(2).split()
        check(len(pairs) % 2 == 0, "vcpkg_check_features FEATURES takes feature / option pairs")
        for feature, option in zip(pairs[::2], pairs[1::2]):
            check(feature in features, f"portfile feature {feature} is not a feature of vcpkg.json")
            check(f"option({option} " in cmake, f"portfile feature option {option} is not an option of CMakeLists.txt")
        check("${" + mapped.group(1) + "}" in text, f"the portfile does not pass ${{{mapped.group(1)}}} to the configure")
    fixup = re.search(r"CONFIG_PATH (\S+)\)", text)
    return opts, fixup.group(1) if fixup else None


def check_install(work, opts, config_path):
    shutil.rmtree(work, ignore_errors=True)
    build, prefix = os.path.join(work, "build"), os.path.join(work, "prefix")
    subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"] +
                   [f"-D{n}={v}" for n, v in opts], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
    for rel in (f"{config_path}/posencConfig.cmake", f"{config_path}/posencConfigVersion.cmake",
                f"{config_path}/posencTargets.cmake", "share/pkgconfig/posenc.pc", "include/posenc/rope.hpp",
                "include/posenc/src.hpp"):
        check(os.path.isfile(os.path.join(prefix, rel)), f"the install lacks {rel}")
    for d in ("lib", "bin"):
        check(not os.path.exists(os.path.join(prefix, d)), f"a header-only install put files in {d}/")
    check(os.path.isfile(os.path.join(ROOT, "LICENSE")), "LICENSE (vcpkg_install_copyright) exists")


def main():
    work = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "vcpkg-port"))
    check_manifest()
    opts, config_path = portfile_options()
    check(config_path is not None, "vcpkg_cmake_config_fixup names CONFIG_PATH")
    if not errors:
        check_install(work, opts, config_path)
    for e in errors:
        print("check_vcpkg_port:", e)
    print("check_vcpkg_port:", "FAILED" if errors else "ok (manifest fields, portfile conventions, the CMake install)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
