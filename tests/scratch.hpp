// Files a test writes: one folder per test process, removed when the process exits (pass or fail).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

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

// ---- the file helpers every reader test uses (npy, GGUF, Hugging Face config) --------------------------------

using bytes_t = std::vector<unsigned char>;

/// The whole file (empty if it cannot be opened).
inline bytes_t read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return bytes_t(std::istreambuf_iterator<char>(in), {});
}
/// Writes `b` as the whole file.
inline void write_bytes(const std::string& path, const bytes_t& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
/// Writes `text` as the whole file.
inline void write_text(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}
inline bool file_exists(const std::string& path) { return static_cast<bool>(std::ifstream(path, std::ios::binary)); }

}  // namespace posenc_test
