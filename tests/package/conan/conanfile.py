# Conan's test package: builds tests/package/consumer.cpp (and, with hf_config, consumer_hf.cpp; with c_api, the C
# program c_consumer.c against libposenc) against the created posenc package and runs them.
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout


class PosencTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps", "CMakeToolchain"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def build(self):
        cmake = CMake(self)
        options = self.dependencies["posenc"].options
        cmake.configure(variables={"POSENC_HF_CONFIG": bool(options.hf_config), "POSENC_C_API": bool(options.c_api)})
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "consumer"), env="conanrun")
            if self.dependencies["posenc"].options.hf_config:
                self.run(os.path.join(self.cpp.build.bindir, "consumer_hf"), env="conanrun")
            if self.dependencies["posenc"].options.c_api:
                self.run(os.path.join(self.cpp.build.bindir, "c_consumer"), env="conanrun")
