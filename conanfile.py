# Conan 2 recipe for posenc (header-only unless c_api). `conan create . -pr:a tests/package/conan/profiles/debian-system`
# builds the test package (tests/package/conan) against it; scripts/check_conan.sh runs that in CI. Eigen is required (posenc/eigen.hpp and the
# umbrella header; the core headers do not include it); nlohmann/json only with the hf_config option. The c_api
# option builds libposenc (the C API of posenc/c/posenc.h, the posenc::c target): the package is then a compiled
# library, its id depending on the settings.
import os

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load
import re


class PosencConan(ConanFile):
    name = "posenc"
    # The test package lives with the other consumer tests (tests/package/), not at the top level.
    test_package_folder = "tests/package/conan"
    description = ("Header-only C++17 transformer positional encodings: RoPE (every scaling), xPos, ALiBi, "
                   "sinusoidal, learned, with run-time dispatched SIMD kernels")
    license = "Apache-2.0"
    topics = ("transformer", "rope", "positional-encoding", "llm", "header-only", "simd")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"hf_config": [True, False], "c_api": [True, False], "shared": [True, False]}
    default_options = {"hf_config": False, "c_api": False, "shared": True}
    exports_sources = "include/*", "cmake/*", "src/*", "CMakeLists.txt", "LICENSE"
    no_copy_source = True

    def set_version(self):
        text = load(self, os.path.join(self.recipe_folder, "include", "posenc", "version.hpp"))
        self.version = re.search(r'#define POSENC_VERSION_STRING "([^"]+)"', text).group(1)

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        self.requires("eigen/3.4.0")
        if self.options.hf_config:
            self.requires("nlohmann_json/[>=3 <4]")

    def configure(self):
        # `shared` chooses libposenc.so or libposenc.a; without c_api there is no library to choose.
        if self.options.c_api:
            self.package_type = "library"
        else:
            self.options.rm_safe("shared")

    def validate(self):
        check_min_cppstd(self, 17)

    def package_id(self):
        if not self.info.options.c_api:
            self.info.clear()

    def generate(self):
        if self.options.c_api:
            tc = CMakeToolchain(self)
            tc.cache_variables.update({"POSENC_BUILD_C_API": True, "POSENC_BUILD_TESTS": False,
                                       "POSENC_BUILD_EXAMPLES": False, "POSENC_INSTALL": True})
            tc.generate()

    def build(self):
        if self.options.c_api:
            cmake = CMake(self)
            cmake.configure()
            cmake.build(target="posenc_c" if self.options.shared else "posenc_c_static")

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))
        if self.options.c_api:
            copy(self, "*.h", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))
            copy(self, "libposenc.so*" if self.options.shared else "libposenc.a", os.path.join(self.build_folder, "src", "c"),
                 os.path.join(self.package_folder, "lib"), keep_path=False)
        copy(self, "posenc-conan-system-deps.cmake", os.path.join(self.source_folder, "cmake"),
             os.path.join(self.package_folder, "lib", "cmake", "posenc"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = ["lib"] if self.options.c_api else []
        self.cpp_info.set_property("cmake_file_name", "posenc")
        self.cpp_info.set_property("pkg_config_name", "posenc")
        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "posenc::posenc")
        core.bindirs = []
        core.libdirs = []
        # A dependency taken from the system ([platform_requires], revision "platform") has no package for
        # CMakeDeps to name: a build module finds it with CMake instead (cmake/posenc-conan-system-deps.cmake).
        def from_system(name):
            try:
                return self.dependencies[name].ref.revision == "platform"
            except KeyError:
                return name == "eigen" or bool(self.options.hf_config)
        system = {name for name in ("eigen", "nlohmann_json") if from_system(name)}
        core.requires = [] if "eigen" in system else ["eigen::eigen"]
        if self.options.hf_config:
            hf = self.cpp_info.components["hf_config"]
            hf.set_property("cmake_target_name", "posenc::hf_config")
            hf.bindirs = []
            hf.libdirs = []
            hf.requires = ["core"] + ([] if "nlohmann_json" in system else ["nlohmann_json::nlohmann_json"])
        if self.options.c_api:
            c = self.cpp_info.components["c"]
            c.set_property("cmake_target_name", "posenc::c")
            c.set_property("pkg_config_name", "posenc-c")
            c.libs = ["posenc"]
            c.bindirs = []
            # A static libposenc needs the C++ runtime it was built with in a C program's link.
            static = not self.options.shared
            c.system_libs = ["stdc++", "m", "pthread"] if static and self.settings.os == "Linux" else []
        if system:
            self.cpp_info.set_property("cmake_build_modules", [os.path.join("lib", "cmake", "posenc",
                                                                            "posenc-conan-system-deps.cmake")])
