// Files a test writes: one folder per test process, removed when the process exits (pass or fail).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace posenc_test {

/// A folder of this test process's own in the temp directory (CTest runs tests in parallel processes), created
/// on first use and removed with everything in it when the process exits, whether its tests passed or failed:
/// tests write their files here and leave nothing behind.
inline const std::string& scratch_dir() {
  struct owned_dir {
    std::string path;
    owned_dir() : path(::testing::TempDir() + "posenc_test_" + std::to_string(::getpid())) {
      std::filesystem::create_directories(path);
    }
    ~owned_dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const owned_dir dir;
  return dir.path;
}
/// A file name inside scratch_dir().
inline std::string scratch_path(const std::string& name) { return scratch_dir() + "/" + name; }

}  // namespace posenc_test
