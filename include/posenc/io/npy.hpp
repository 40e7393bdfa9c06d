// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// An optional utility header: the umbrella header posenc/posenc.hpp does not include it, and no header outside
// posenc/io/ needs it; include it yourself. It reads and writes NumPy .npy files (numpy/lib/format.py, NEP 1:
// format versions 1.0, 2.0 and 3.0; dtypes '<f2', '<f4', '<f8', '<i4', '<i8'; C order) as raw bytes plus dtype
// and shape (npy_array): parse_npy / serialize_npy for images in memory, read_npy / write_npy for files. For the
// posenc command-line tool (examples/cli), the tests, and engines that load tables (learned embeddings, T5
// bias, positions, inv_freq) from NumPy files; posenc/io/npy_tensors.hpp adds Eigen tensors and the learned
// modules' tables on top. This header needs no Eigen.
//
// What it guarantees:
// - A hardened parser: every reject is an invalid_file status naming the file and the problem, returned before
//   any allocation that the file's size does not bound: bad magic, unsupported versions, header lengths past
//   the end of the file, malformed or truncated headers (unknown, duplicate or missing keys, bad literals),
//   Fortran order, big-endian, object, structured and other dtypes, negative or oversized dimensions, shapes
//   whose byte size overflows, data shorter or longer than the shape says. It is fuzzed in CI
//   (tests/fuzz/npy_fuzz.cpp, scripts/fuzz.sh npy).
// - Replacing in one step: write_npy writes a temporary file next to the target and renames it onto the target
//   (POSIX rename, atomic; Windows MoveFileExA with MOVEFILE_REPLACE_EXISTING, never delete-then-rename), so a
//   failure leaves no partial file and an existing target untouched.
// - numpy's own output: serialize_npy writes numpy's header, padded so the data start at a multiple of 64.
//
// Every function that can fail has a noexcept try_ form returning a posenc::status (io_error, invalid_file,
// invalid_argument, out_of_memory); the throwing form throws posenc::argument_error with the same message.

#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/io/detail/npy_header.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

#if defined(_WIN32)
// kernel32's MoveFileExA, declared here instead of including <windows.h> (whose min/max and other macros would
// leak into every includer); the types are windows.h's BOOL, LPCSTR and DWORD, so both declarations agree.
namespace posenc_win32_detail {
extern "C" __declspec(dllimport) int __stdcall MoveFileExA(const char* existing, const char* replacement,
                                                             unsigned long flags);
}  // namespace posenc_win32_detail
#endif

POSENC_BEGIN_NAMESPACE

/// The contents of one .npy file: dtype (one of "<f2", "<f4", "<f8", "<i4", "<i8"), shape (C order; empty
/// for a scalar) and the raw little-endian bytes, exactly size() * itemsize() of them.
struct npy_array {
  /// NumPy dtype string: "<f2", "<f4", "<f8", "<i4" or "<i8" (little-endian).
  std::string dtype;
  /// Extents in C order (the last varies fastest); empty for a scalar.
  std::vector<index_t> shape;
  /// The elements as stored, little-endian: size() * itemsize() bytes.
  std::vector<unsigned char> data;

  /// Number of elements (1 for a scalar).
  index_t size() const {
    index_t n = 1;
    for (index_t d : shape) n *= d;
    return n;
  }
  /// Bytes per element (2, 4 or 8).
  index_t itemsize() const { return static_cast<index_t>(dtype.empty() ? 0 : dtype.back() - '0'); }
};

// Every function below that can fail has a try_ form: noexcept, returning a posenc::status with the message the
// throwing form's argument_error carries (posenc/status.hpp); its out-parameter (the last) is unchanged when it
// is not ok. Codes: io_error when a file cannot be opened, read, written or renamed; invalid_file for content
// that is not a supported .npy or not what was asked for; invalid_argument for bad arguments; out_of_memory
// when an allocation fails (std::bad_alloc from the throwing form).

/// Parses a .npy image held in memory (`n` bytes at `bytes`), copying its data, into `out`. Versions 1.0, 2.0,
/// 3.0; dtypes '<f2', '<f4', '<f8', '<i4', '<i8'; C order only. Data are returned little-endian as stored.
/// Returns invalid_file on anything else (the list at the top of this header), invalid_argument if `bytes` is
/// null with n > 0; nothing is allocated before the data size is checked against `n`.
///
/// **Example**
/// ```
/// posenc::npy_array a;
/// if (posenc::status s = posenc::try_parse_npy(buf.data(), buf.size(), a); !s) return s;
/// ```
inline status try_parse_npy(const void* bytes, std::size_t n, npy_array& out) noexcept {
  constexpr const char* fn = "parse_npy";
  return detail::guard_alloc(fn, [&]() -> status {
    if (bytes == nullptr && n > 0) return detail::fail(fn, "bytes is null");
    const std::string what = "buffer";
    const auto* p = static_cast<const unsigned char*>(bytes);
    static const unsigned char empty[1] = {0};
    detail::npy_header h;
    POSENC_TRY(detail::npy_parse_header(fn, what, p ? p : empty, n, n, h));
    npy_array a;
    a.dtype = std::move(h.dtype);
    a.shape = std::move(h.shape);
    a.data.assign(p + h.data_offset, p + h.data_offset + h.data_bytes);
    out = std::move(a);
    return {};
  });
}

/// The throwing form of try_parse_npy: argument_error with the same message.
///
/// **Example**
/// ```
/// posenc::npy_array a = posenc::parse_npy(buf.data(), buf.size());
/// ```
inline npy_array parse_npy(const void* bytes, std::size_t n) {
  npy_array a;
  detail::throw_if_error(try_parse_npy(bytes, n, a));
  return a;
}

/// Reads a .npy file (see try_parse_npy) into `out`. Only the prelude and header are read before the data size
/// is checked against the file's size; the data are then read straight into the result.
/// Returns io_error if the file cannot be opened or read, invalid_file on any reject of try_parse_npy.
///
/// **Example**
/// ```
/// posenc::npy_array a;
/// if (posenc::status s = posenc::try_read_npy("wpe.npy", a); !s) return s;   // a.dtype "<f4", a.shape {1024, 768}
/// ```
inline status try_read_npy(const std::string& path, npy_array& out) noexcept {
  constexpr const char* fn = "read_npy";
  return detail::guard_alloc(fn, [&]() -> status {
    const errc io = errc::io_error;
    std::ifstream in(path, std::ios::binary);
    if (!in) return detail::fail_with(io, fn, "cannot open '", path, "'");
    in.seekg(0, std::ios::end);
    const std::streamoff end = in.tellg();
    if (end < 0) return detail::fail_with(io, fn, "cannot determine the size of '", path, "'");
    const auto total = static_cast<std::size_t>(end);
    in.seekg(0, std::ios::beg);
    const std::string what = "'" + path + "'";
    unsigned char pre[12] = {};
    const std::size_t pre_n = total < 12 ? total : 12;
    if (!in.read(reinterpret_cast<char*>(pre), static_cast<std::streamsize>(pre_n)))
      return detail::fail_with(io, fn, "cannot read ", what);
    // The header length, bounded by the file size before anything is allocated for it.
    std::size_t hlen = 0;
    std::size_t prelude = pre_n >= 7 && pre[6] >= 2 ? 12 : 10;
    if (pre_n >= prelude) {
      hlen = static_cast<std::size_t>(pre[8]) | (static_cast<std::size_t>(pre[9]) << 8);
      if (prelude == 12) hlen |= (static_cast<std::size_t>(pre[10]) << 16) | (static_cast<std::size_t>(pre[11]) << 24);
    }
    std::vector<unsigned char> head(pre, pre + pre_n);
    if (pre_n >= prelude && hlen <= total - prelude) {
      head.resize(prelude + hlen);
      if (prelude + hlen > pre_n &&
          !in.read(reinterpret_cast<char*>(head.data() + pre_n), static_cast<std::streamsize>(prelude + hlen - pre_n)))
        return detail::fail_with(io, fn, "cannot read ", what);
    }
    detail::npy_header h;
    POSENC_TRY(detail::npy_parse_header(fn, what, head.data(), head.size(), total, h));
    npy_array a;
    a.dtype = std::move(h.dtype);
    a.shape = std::move(h.shape);
    a.data.resize(h.data_bytes);
    in.seekg(static_cast<std::streamoff>(h.data_offset), std::ios::beg);
    if (h.data_bytes > 0 && !in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(h.data_bytes)))
      return detail::fail_with(io, fn, "cannot read the data of ", what);
    out = std::move(a);
    return {};
  });
}

/// The throwing form of try_read_npy: argument_error with the same message.
///
/// **Example**
/// ```
/// posenc::npy_array a = posenc::read_npy("wpe.npy");   // a.dtype "<f4", a.shape {1024, 768}
/// ```
inline npy_array read_npy(const std::string& path) {
  npy_array a;
  detail::throw_if_error(try_read_npy(path, a));
  return a;
}

/// The bytes of a .npy file holding `shape` elements of `dtype` from `data` (C order, host byte order; written
/// little-endian), into `out`. `version`: 0 picks 1.0, or 2.0 when the header needs more than 65535 bytes; 1, 2,
/// 3 force it (3.0 differs from 2.0 only in allowing UTF-8 in the header, which posenc never writes). The
/// header is numpy's: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, padded so the data start at
/// a multiple of 64 bytes.
/// Returns invalid_argument on an unsupported dtype or version, a negative dimension, an overflowing size, or
/// null data with a non-empty shape.
///
/// **Example**
/// ```
/// const float v[6] = {0, 1, 2, 3, 4, 5};
/// std::vector<unsigned char> bytes;
/// if (posenc::status s = posenc::try_serialize_npy("<f4", {2, 3}, v, 0, bytes); !s) return s;
/// ```
inline status try_serialize_npy(const std::string& dtype, const std::vector<index_t>& shape, const void* data,
                                int version, std::vector<unsigned char>& out) noexcept {
  constexpr const char* fn = "serialize_npy";
  return detail::guard_alloc(fn, [&]() -> status {
    std::size_t bytes = 0;
    POSENC_TRY(detail::check_npy_write(fn, dtype, shape, data, version, bytes));
    std::string h = detail::npy_header_text(dtype, shape, 10);
    int v = version;
    if (v == 0) v = h.size() > 65535 ? 2 : 1;
    if (v >= 2) h = detail::npy_header_text(dtype, shape, 12);
    if (v == 1 && h.size() > 65535) return detail::fail(fn, "a header of ", h.size(), " bytes does not fit format 1.0");
    std::vector<unsigned char> img;
    img.reserve((v == 1 ? 10 : 12) + h.size() + bytes);
    const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(v), 0};
    img.insert(img.end(), magic, magic + 8);
    const std::size_t hl = h.size();
    img.push_back(static_cast<unsigned char>(hl & 0xff));
    img.push_back(static_cast<unsigned char>((hl >> 8) & 0xff));
    if (v >= 2) {
      img.push_back(static_cast<unsigned char>((hl >> 16) & 0xff));
      img.push_back(static_cast<unsigned char>((hl >> 24) & 0xff));
    }
    img.insert(img.end(), h.begin(), h.end());
    const std::size_t at = img.size();
    if (bytes > 0) {
      const auto* d = static_cast<const unsigned char*>(data);
      img.insert(img.end(), d, d + bytes);
      detail::npy_to_host_order(img.data() + at, bytes, static_cast<std::size_t>(dtype.back() - '0'));
    }
    out = std::move(img);
    return {};
  });
}

/// The throwing form of try_serialize_npy: argument_error with the same message.
///
/// **Example**
/// ```
/// const float v[6] = {0, 1, 2, 3, 4, 5};
/// auto bytes = posenc::serialize_npy("<f4", {2, 3}, v);   // == np.save of np.arange(6, dtype='<f4').reshape(2, 3)
/// ```
inline std::vector<unsigned char> serialize_npy(const std::string& dtype, const std::vector<index_t>& shape,
                                                const void* data, int version = 0) {
  std::vector<unsigned char> out;
  detail::throw_if_error(try_serialize_npy(dtype, shape, data, version, out));
  return out;
}

namespace detail {

/// Moves `from` onto `to`, replacing an existing `to` in one step, or fails leaving both as they were. POSIX
/// rename() does exactly this; Windows' rename() refuses an existing target, so there it is MoveFileExA with
/// MOVEFILE_REPLACE_EXISTING (never a delete followed by a rename, which loses the old file when the second
/// step fails).
inline bool replace_file(const char* from, const char* to) noexcept {
#if defined(_WIN32)
  return ::posenc_win32_detail::MoveFileExA(from, to, 0x1 /* MOVEFILE_REPLACE_EXISTING */ | 0x8 /* MOVEFILE_WRITE_THROUGH */) != 0;
#else
  return std::rename(from, to) == 0;
#endif
}

}  // namespace detail

/// Writes a .npy file (the bytes of try_serialize_npy) to `path` + a temporary suffix, then renames it onto
/// `path`: a failure leaves no partial file and an existing `path` untouched.
/// Returns invalid_argument as try_serialize_npy (with its message), io_error if the file cannot be created,
/// written or renamed.
///
/// **Example**
/// ```
/// if (posenc::status s = posenc::try_write_npy("pe.npy", "<f4", {1024, 512}, table.data()); !s) return s;
/// ```
inline status try_write_npy(const std::string& path, const std::string& dtype, const std::vector<index_t>& shape,
                            const void* data, int version = 0) noexcept {
  constexpr const char* fn = "write_npy";
  return detail::guard_alloc(fn, [&]() -> status {
    const errc io = errc::io_error;
    std::vector<unsigned char> bytes;
    POSENC_TRY(try_serialize_npy(dtype, shape, data, version, bytes));
    // A name unique to this call: the address of a local and a process-wide counter.
    static std::atomic<std::uint64_t> counter{0};
    const std::uint64_t id = ++counter;
    const std::string tmp = path + ".tmp-" + std::to_string(reinterpret_cast<std::uintptr_t>(&bytes)) + "-" + std::to_string(id);
    {
      std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
      if (!o) return detail::fail_with(io, fn, "cannot create '", tmp, "'");
      o.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      o.flush();
      if (!o) {
        o.close();
        std::remove(tmp.c_str());
        return detail::fail_with(io, fn, "cannot write '", tmp, "'");
      }
    }
    if (!detail::replace_file(tmp.c_str(), path.c_str())) {
      std::remove(tmp.c_str());
      return detail::fail_with(io, fn, "cannot rename '", tmp, "' to '", path, "'");
    }
    return {};
  });
}

/// The throwing form of try_write_npy: argument_error with the same message.
///
/// **Example**
/// ```
/// posenc::write_npy("pe.npy", "<f4", {1024, 512}, table.data());
/// ```
inline void write_npy(const std::string& path, const std::string& dtype, const std::vector<index_t>& shape,
                      const void* data, int version = 0) {
  detail::throw_if_error(try_write_npy(path, dtype, shape, data, version));
}

POSENC_END_NAMESPACE
