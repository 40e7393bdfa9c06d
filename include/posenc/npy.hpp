// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// A small, hardened reader and writer of NumPy .npy files (format versions 1.0, 2.0 and 3.0; dtypes '<f2',
// '<f4', '<f8', '<i4', '<i8'; C order), typed helpers for Eigen tensors, and table load/save for the learned
// modules. Optional: not part of the umbrella header posenc.hpp.
//
// Format reference: numpy/lib/format.py (NEP 1): the magic "\x93NUMPY", a major and a minor version byte, the
// header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0), then an ASCII (1.0, 2.0) or UTF-8
// (3.0) Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and a
// newline, then the raw data.
//
// Every function that can fail has a noexcept try_ form returning a posenc::status (io_error, invalid_file,
// invalid_argument, out_of_memory); the throwing form throws posenc::argument_error with the same message.
//
// Hardening: every reject is an invalid_file status naming the file and the problem, returned before any
// allocation that the file's size does not bound: bad magic, unsupported versions, header lengths past the
// end of the file, malformed or truncated headers (unknown, duplicate or missing keys, bad literals),
// Fortran order, big-endian, object, structured and other dtypes, negative or oversized dimensions, shapes
// whose byte size overflows, data shorter or longer than the shape says.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/eigen.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

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
  std::string dtype;
  std::vector<index_t> shape;
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

namespace detail {

inline bool npy_supported_dtype(const std::string& d) {
  return d == "<f2" || d == "<f4" || d == "<f8" || d == "<i4" || d == "<i8";
}

inline bool host_little_endian() {
  const std::uint16_t one = 1;
  unsigned char b = 0;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

/// .npy data is little-endian: a no-op on little-endian hosts, a byte swap per element elsewhere.
inline void npy_to_host_order(unsigned char* p, std::size_t bytes, std::size_t itemsize) {
  if (host_little_endian() || itemsize < 2) return;
  for (std::size_t i = 0; i + itemsize <= bytes; i += itemsize)
    for (std::size_t a = 0, b = itemsize - 1; a < b; ++a, --b) std::swap(p[i + a], p[i + b]);
}

/// A parsed header: where the data starts and what it holds.
struct npy_header {
  std::string dtype;
  std::vector<index_t> shape;
  std::size_t data_offset = 0;
  std::size_t data_bytes = 0;
};

/// Parser of the header dict literal. Accepts what numpy writes (and any equivalent spacing, quoting and
/// key order), nothing else. Every reject is an invalid_file status naming the file.
class npy_header_parser {
 public:
  npy_header_parser(const char* fn, const std::string& what, const char* text, std::size_t len)
      : fn_(fn), what_(what), s_(text), n_(len) {}

  status parse(npy_header& h) {
    bool have_descr = false;
    bool have_fortran = false;
    bool have_shape = false;
    bool fortran = false;
    char c = 0;
    skip_ws();
    POSENC_TRY(expect('{'));
    skip_ws();
    for (;;) {
      POSENC_TRY(peek(c));
      if (c == '}') break;
      std::string key;
      POSENC_TRY(parse_string("a key", key));
      skip_ws();
      POSENC_TRY(expect(':'));
      skip_ws();
      if (key == "descr") {
        if (have_descr) return fail("duplicate key 'descr'");
        have_descr = true;
        POSENC_TRY(peek(c));
        if (c == '[') return fail("structured dtypes (a descr list) are not supported");
        POSENC_TRY(parse_string("the descr value", h.dtype));
      } else if (key == "fortran_order") {
        if (have_fortran) return fail("duplicate key 'fortran_order'");
        have_fortran = true;
        POSENC_TRY(parse_bool(fortran));
      } else if (key == "shape") {
        if (have_shape) return fail("duplicate key 'shape'");
        have_shape = true;
        POSENC_TRY(parse_shape(h.shape));
      } else {
        return fail("unknown key '" + key + "'");
      }
      skip_ws();
      POSENC_TRY(peek(c));
      if (c == ',') {
        ++i_;
        skip_ws();
      } else if (c != '}') {
        return fail("expected ',' or '}'");
      }
    }
    ++i_;
    while (i_ < n_ && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\0')) ++i_;
    if (i_ != n_) return fail("unexpected text after the header dict");
    if (!have_descr || !have_fortran || !have_shape)
      return fail(std::string("missing key '") + (!have_descr ? "descr" : (!have_fortran ? "fortran_order" : "shape")) + "'");
    if (fortran) return fail("Fortran-order (column-major) arrays are not supported; save a C-contiguous array");
    return check_dtype(h.dtype);
  }

 private:
  template <class... Parts>
  status reject(const Parts&... parts) const {
    return fail_with(errc::invalid_file, fn_, what_, ": ", parts...);
  }
  status fail(const std::string& why) const { return reject("malformed .npy header: ", why); }

  status check_dtype(const std::string& d) const {
    if (npy_supported_dtype(d)) return {};
    if (!d.empty() && d[0] == '>') return reject("big-endian dtype '", d, "' is not supported (only little-endian)");
    if (d.find('O') != std::string::npos) return reject("object dtype '", d, "' is not supported (pickled data)");
    return reject("dtype '", d, "' is not supported (only <f2, <f4, <f8, <i4, <i8)");
  }

  status peek(char& c) const {
    if (i_ >= n_) return fail("truncated");
    c = s_[i_];
    return {};
  }
  status expect(char want) {
    char c = 0;
    POSENC_TRY(peek(c));
    if (c != want) return fail(std::string("expected '") + want + "'");
    ++i_;
    return {};
  }
  void skip_ws() {
    while (i_ < n_ && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  status parse_string(const char* what, std::string& out) {
    char q = 0;
    POSENC_TRY(peek(q));
    if (q != '\'' && q != '"') return fail(std::string("expected a quoted string for ") + what);
    ++i_;
    out.clear();
    for (;;) {
      char c = 0;
      POSENC_TRY(peek(c));
      if (c == q) break;
      ++i_;
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
        return fail("unsupported character in a string");
      if (out.size() > 64) return fail("string too long");
      out += c;
    }
    ++i_;
    return {};
  }

  status parse_bool(bool& v) {
    if (n_ - i_ >= 4 && std::memcmp(s_ + i_, "True", 4) == 0) {
      i_ += 4;
      v = true;
      return {};
    }
    if (n_ - i_ >= 5 && std::memcmp(s_ + i_, "False", 5) == 0) {
      i_ += 5;
      v = false;
      return {};
    }
    return fail("fortran_order is not True or False");
  }

  status parse_shape(std::vector<index_t>& shape) {
    POSENC_TRY(expect('('));
    skip_ws();
    char c = 0;
    for (;;) {
      POSENC_TRY(peek(c));
      if (c == ')') break;
      if (c == '-') return reject("negative dimension in the shape");
      if (c < '0' || c > '9') return fail("expected a dimension (a non-negative integer)");
      index_t v = 0;
      for (;;) {
        POSENC_TRY(peek(c));
        if (c < '0' || c > '9') break;
        const index_t digit = c - '0';
        ++i_;
        if (v > (std::numeric_limits<index_t>::max() - digit) / 10) return reject("dimension too large for int64");
        v = v * 10 + digit;
      }
      if (c == 'L') ++i_;  // Python 2 long literal, as old numpy wrote
      if (shape.size() >= 64) return fail("more than 64 dimensions");
      shape.push_back(v);
      skip_ws();
      POSENC_TRY(peek(c));
      if (c == ',') {
        ++i_;
        skip_ws();
      } else if (c != ')') {
        return fail("expected ',' or ')' in the shape");
      }
    }
    ++i_;
    return {};
  }

  const char* fn_;
  const std::string& what_;
  const char* s_;
  std::size_t n_;
  std::size_t i_ = 0;
};

/// Parses the prelude and header of a .npy image of `total` bytes of which the first `avail` are at `p`
/// (avail >= the prelude and header, or as much of them as the file has), into `h`. Checks the data size
/// against `total`; allocates nothing that the header could size. Every reject is invalid_file.
inline status npy_parse_header(const char* fn, const std::string& what, const unsigned char* p, std::size_t avail,
                               std::size_t total, npy_header& h) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  const errc bad = errc::invalid_file;
  if (total < 10 || avail < 10)
    return fail_with(bad, fn, what, ": truncated (", total, " bytes; a .npy file has at least 10)");
  if (std::memcmp(p, magic, 6) != 0) return fail_with(bad, fn, what, ": not a .npy file (bad magic string)");
  const int major = p[6];
  const int minor = p[7];
  if (major < 1 || major > 3 || minor != 0)
    return fail_with(bad, fn, what, ": unsupported .npy format version ", major, ".", minor, " (1.0, 2.0, 3.0)");
  std::size_t prelude = 10;
  std::size_t hlen = static_cast<std::size_t>(p[8]) | (static_cast<std::size_t>(p[9]) << 8);
  if (major >= 2) {
    if (total < 12 || avail < 12) return fail_with(bad, fn, what, ": truncated in the header length");
    prelude = 12;
    hlen |= (static_cast<std::size_t>(p[10]) << 16) | (static_cast<std::size_t>(p[11]) << 24);
  }
  if (hlen > total - prelude)
    return fail_with(bad, fn, what, ": header length ", hlen, " runs past the end of the file (", total, " bytes)");
  if (avail < prelude + hlen) return fail_with(bad, fn, what, ": truncated header");
  npy_header r;
  POSENC_TRY(npy_header_parser(fn, what, reinterpret_cast<const char*>(p + prelude), hlen).parse(r));
  r.data_offset = prelude + hlen;
  const auto item = static_cast<std::size_t>(r.dtype.back() - '0');
  std::size_t bytes = item;
  for (index_t d : r.shape) {
    const auto ud = static_cast<std::size_t>(d);
    if (ud != 0 && bytes > std::numeric_limits<std::size_t>::max() / ud)
      return fail_with(bad, fn, what, ": the byte size of the shape overflows");
    bytes *= ud;
  }
  // Every element count times 8 bytes stays below 2^63, so size() never overflows int64 either.
  if (bytes > static_cast<std::size_t>(std::numeric_limits<index_t>::max()))
    return fail_with(bad, fn, what, ": the byte size of the shape overflows");
  const std::size_t have = total - r.data_offset;
  if (bytes > have)
    return fail_with(bad, fn, what, ": data truncated: the shape needs ", bytes, " bytes, the file has ", have);
  if (bytes < have) return fail_with(bad, fn, what, ": ", have - bytes, " bytes past the data the shape describes");
  r.data_bytes = bytes;
  h = std::move(r);
  return {};
}

inline std::string npy_header_text(const std::string& dtype, const std::vector<index_t>& shape, std::size_t prelude) {
  std::string h = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    h += std::to_string(shape[i]);
    if (i + 1 < shape.size() || shape.size() == 1) h += shape.size() == 1 ? "," : ", ";
  }
  h += "), }";
  // Pad with spaces and a final newline so that the data starts at a multiple of 64 bytes (numpy >= 1.14).
  const std::size_t total = prelude + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  return h;
}

inline status check_npy_write(const char* fn, const std::string& dtype, const std::vector<index_t>& shape,
                              const void* data, int version, std::size_t& bytes) {
  if (!npy_supported_dtype(dtype)) return fail(fn, "dtype '", dtype, "' is not supported (<f2, <f4, <f8, <i4, <i8)");
  if (version < 0 || version > 3) return fail(fn, "version=", version, " must be 0 (automatic), 1, 2 or 3");
  if (shape.size() > 64) return fail(fn, "shape has ", shape.size(), " dimensions (at most 64)");
  std::size_t b = static_cast<std::size_t>(dtype.back() - '0');
  for (index_t d : shape) {
    if (d < 0) return fail(fn, "shape dimension ", d, " must be >= 0");
    if (d != 0 && b > static_cast<std::size_t>(std::numeric_limits<index_t>::max()) / static_cast<std::size_t>(d))
      return fail(fn, "the byte size of the shape overflows");
    b *= static_cast<std::size_t>(d);
  }
  if (b > 0 && data == nullptr) return fail(fn, "data is null");
  bytes = b;
  return {};
}

/// A status of a path-taking function whose file is a valid .npy but not what was asked for (rank, dtype kind,
/// shape, range): invalid_file, as a wrong type in any other file; other codes as they are.
inline status npy_file_status(status s) {
  if (s.code() != errc::invalid_argument) return s;
  return status(errc::invalid_file, s.message());
}

}  // namespace detail

// Every function below that can fail has a try_ form: noexcept, returning a posenc::status with the message the
// throwing form's argument_error carries (posenc/status.hpp); its out-parameter (the last) is unchanged when it
// is not ok. Codes: io_error when a file cannot be opened, read, written or renamed; invalid_file for content
// that is not a supported .npy or not what was asked for; invalid_argument for bad arguments; out_of_memory
// when an allocation fails (std::bad_alloc from the throwing form).

/// Parses a .npy image held in memory (`n` bytes at `bytes`), copying its data, into `out`. Versions 1.0, 2.0,
/// 3.0; dtypes '<f2', '<f4', '<f8', '<i4', '<i8'; C order only. Data are returned little-endian as stored.
/// Returns invalid_file on anything else (see the list at the top of npy.hpp), invalid_argument if `bytes` is
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

namespace detail {

template <class S>
constexpr const char* npy_dtype_of() {
  if constexpr (std::is_same_v<S, float>) return "<f4";
  else if constexpr (std::is_same_v<S, double>) return "<f8";
  else if constexpr (std::is_same_v<S, Eigen::half>) return "<f2";
  else if constexpr (std::is_same_v<S, std::int32_t>) return "<i4";
  else if constexpr (std::is_same_v<S, std::int64_t>) return "<i8";
  else return nullptr;
}

using math::half_bits_to_float;

inline std::string npy_shape_text(const std::vector<index_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

template <class U>
U npy_load(const unsigned char* p) {
  U v;
  std::memcpy(&v, p, sizeof(U));
  if (!host_little_endian()) {
    unsigned char b[sizeof(U)];
    std::memcpy(b, &v, sizeof(U));
    for (std::size_t a = 0, z = sizeof(U) - 1; a < z; ++a, --z) std::swap(b[a], b[z]);
    std::memcpy(&v, b, sizeof(U));
  }
  return v;
}

/// Element i of `a` converted to S: floats from f2/f4/f8 (S floating), integers from i4/i8 (S integral; i8
/// to int32 checked by the caller). The dtype was validated by the caller.
template <class S>
S npy_element(const npy_array& a, std::size_t i) {
  const unsigned char* p = a.data.data() + i * static_cast<std::size_t>(a.itemsize());
  const char kind = a.dtype[1];
  const char size = a.dtype[2];
  if (kind == 'f') {
    double v = 0;
    if (size == '2') v = static_cast<double>(half_bits_to_float(npy_load<std::uint16_t>(p)));
    else if (size == '4') v = static_cast<double>(npy_load<float>(p));
    else v = npy_load<double>(p);
    if constexpr (std::is_same_v<S, float> || std::is_same_v<S, Eigen::half> || std::is_same_v<S, Eigen::bfloat16>) {
      // A double past float's range becomes +-inf (numpy's astype); converting it directly is undefined
      // behaviour in C++. 2^128 - 2^104 is the midpoint between FLT_MAX and 2^128, which rounds to even: inf.
      const float f = std::fabs(v) >= 0x1.ffffffp127 ? (v < 0 ? -std::numeric_limits<float>::infinity()
                                                              : std::numeric_limits<float>::infinity())
                                                     : static_cast<float>(v);
      if constexpr (std::is_same_v<S, float>) return f;
      else return S(f);
    } else {
      return static_cast<S>(v);
    }
  }
  const std::int64_t v = size == '4' ? npy_load<std::int32_t>(p) : npy_load<std::int64_t>(p);
  return static_cast<S>(v);
}

template <class S>
status check_npy_convertible(const char* fn, const npy_array& a) {
  if (!npy_supported_dtype(a.dtype)) return fail(fn, "dtype '", a.dtype, "' is not supported");
  if (a.data.size() != static_cast<std::size_t>(a.size() * a.itemsize()))
    return fail(fn, "data holds ", a.data.size(), " bytes, the shape needs ", a.size() * a.itemsize());
  constexpr bool floating = std::is_floating_point_v<S> || std::is_same_v<S, Eigen::half> || std::is_same_v<S, Eigen::bfloat16>;
  if (floating && a.dtype[1] != 'f') return fail(fn, "dtype '", a.dtype, "' is not a float dtype (<f2, <f4, <f8)");
  if (!floating && a.dtype[1] != 'i') return fail(fn, "dtype '", a.dtype, "' is not an integer dtype (<i4, <i8)");
  if constexpr (std::is_same_v<S, std::int32_t>) {
    if (a.dtype == "<i8")
      for (std::size_t i = 0; i < static_cast<std::size_t>(a.size()); ++i) {
        const auto v = npy_element<std::int64_t>(a, i);
        if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
          return fail(fn, "element ", i, "=", v, " does not fit int32");
      }
  }
  return {};
}

}  // namespace detail

/// Converts a parsed array into `out`, an Eigen::Tensor<S, R, RowMajor>: S float, double, Eigen::half or
/// Eigen::bfloat16 from '<f2', '<f4' or '<f8' (rounded once to S); S int32 or int64 from '<i4' or '<i8'.
/// Returns invalid_argument if the rank is not R, the dtype kind does not match S, an int64 value does not
/// fit int32, or the data size does not match the shape.
///
/// **Example**
/// ```
/// Eigen::Tensor<float, 3, Eigen::RowMajor> x;
/// if (posenc::status s = posenc::try_npy_to_tensor(array, x); !s) return s;   // (N, L, D)
/// ```
template <class S, int R, class Index>
status try_npy_to_tensor(const npy_array& a, Eigen::Tensor<S, R, Eigen::RowMajor, Index>& out) noexcept {
  constexpr const char* fn = "npy_to_tensor";
  static_assert(R >= 0, "posenc::npy_to_tensor: rank >= 0");
  return detail::guard_alloc(fn, [&]() -> status {
    if (a.shape.size() != static_cast<std::size_t>(R))
      return detail::fail(fn, "the array has rank ", a.shape.size(), ", expected ", R);
    POSENC_TRY(detail::check_npy_convertible<S>(fn, a));
    Eigen::Tensor<S, R, Eigen::RowMajor, Index> t;
    if constexpr (R > 0) {
      Eigen::array<Index, static_cast<std::size_t>(R)> dims;
      for (int d = 0; d < R; ++d) dims[static_cast<std::size_t>(d)] = static_cast<Index>(a.shape[static_cast<std::size_t>(d)]);
      t.resize(dims);
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(a.size()); ++i) t.data()[i] = detail::npy_element<S>(a, i);
    out = std::move(t);
    return {};
  });
}

/// The throwing form of try_npy_to_tensor: argument_error with the same message.
///
/// **Example**
/// ```
/// auto x = posenc::npy_to_tensor<float, 3>(posenc::read_npy("x.npy"));   // (N, L, D)
/// ```
template <class S, int R>
Eigen::Tensor<S, R, Eigen::RowMajor> npy_to_tensor(const npy_array& a) {
  Eigen::Tensor<S, R, Eigen::RowMajor> t;
  detail::throw_if_error(try_npy_to_tensor(a, t));
  return t;
}

/// try_read_npy then try_npy_to_tensor, into `out`: io_error or invalid_file as try_read_npy; invalid_file,
/// with try_npy_to_tensor's message, for a file whose rank, dtype kind or values do not fit the tensor.
///
/// **Example**
/// ```
/// Eigen::Tensor<std::int64_t, 2, Eigen::RowMajor> pos;
/// if (posenc::status s = posenc::try_read_npy_tensor("positions.npy", pos); !s) return s;   // [N, L]
/// ```
template <class S, int R, class Index>
status try_read_npy_tensor(const std::string& path, Eigen::Tensor<S, R, Eigen::RowMajor, Index>& out) noexcept {
  return detail::guard_alloc("read_npy_tensor", [&]() -> status {
    npy_array a;
    POSENC_TRY(try_read_npy(path, a));
    return detail::npy_file_status(try_npy_to_tensor(a, out));
  });
}

/// The throwing form of try_read_npy_tensor: argument_error with the same message.
///
/// **Example**
/// ```
/// auto pos = posenc::read_npy_tensor<std::int64_t, 2>("positions.npy");   // [N, L], from <i4 or <i8
/// ```
template <class S, int R>
Eigen::Tensor<S, R, Eigen::RowMajor> read_npy_tensor(const std::string& path) {
  Eigen::Tensor<S, R, Eigen::RowMajor> t;
  detail::throw_if_error(try_read_npy_tensor(path, t));
  return t;
}

/// Writes a row-major Eigen tensor of float ('<f4'), double ('<f8'), Eigen::half ('<f2'), int32 ('<i4') or
/// int64 ('<i8') as .npy (see try_write_npy: temporary file, then rename). Returns as try_write_npy.
///
/// **Example**
/// ```
/// Eigen::Tensor<float, 2, Eigen::RowMajor> pe(1024, 512);
/// posenc::sinusoidal_table(pe, {512});
/// if (posenc::status s = posenc::try_write_npy("pe.npy", pe); !s) return s;
/// ```
template <class S, int R, class Index>
status try_write_npy(const std::string& path, const Eigen::Tensor<S, R, Eigen::RowMajor, Index>& t,
                     int version = 0) noexcept {
  static_assert(detail::npy_dtype_of<S>() != nullptr, "posenc::write_npy: float, double, Eigen::half, int32 or int64 tensors");
  return detail::guard_alloc("write_npy", [&]() -> status {
    std::vector<index_t> shape;
    for (int d = 0; d < R; ++d) shape.push_back(static_cast<index_t>(t.dimension(d)));
    return try_write_npy(path, detail::npy_dtype_of<S>(), shape, t.data(), version);
  });
}

/// The throwing form of the tensor try_write_npy: argument_error with the same message.
///
/// **Example**
/// ```
/// posenc::write_npy("pe.npy", pe);
/// ```
template <class S, int R, class Index>
void write_npy(const std::string& path, const Eigen::Tensor<S, R, Eigen::RowMajor, Index>& t, int version = 0) {
  detail::throw_if_error(try_write_npy(path, t, version));
}

/// Loads a [rows, cols] table from a .npy file ('<f2', '<f4' or '<f8', rounded once to the table's type) into
/// a module whose table() is a writable strided_view<C, 2>: learned_position_embedding (the whole
/// [max_positions + position_offset, D] table, e.g. GPT-2's `wpe.weight` or OPT's `embed_positions.weight`) or
/// t5_relative_bias ([num_buckets, H], T5's `relative_attention_bias.weight`). The file must match the shape
/// exactly. Returns, leaving the table unchanged: io_error or invalid_file as try_read_npy; invalid_file for a
/// file of another shape or an integer dtype.
///
/// **Example**
/// ```
/// posenc::learned_position_embedding<> wpe(cfg);
/// if (posenc::status s = posenc::try_load_npy_table("gpt2_wpe.npy", wpe); !s) return s;
/// ```
template <class Module>
status try_load_npy_table(const std::string& path, Module& m) noexcept {
  constexpr const char* fn = "load_npy_table";
  return detail::guard_alloc(fn, [&]() -> status {
    auto v = m.table();
    using C = typename decltype(v)::element_type;
    npy_array a;
    POSENC_TRY(try_read_npy(path, a));
    if (a.shape.size() != 2 || a.shape[0] != v.extent(0) || a.shape[1] != v.extent(1))
      return detail::fail_with(errc::invalid_file, fn, "'", path, "' has shape ", detail::npy_shape_text(a.shape),
                               ", the table is (", v.extent(0), ", ", v.extent(1), ")");
    POSENC_TRY(detail::npy_file_status(detail::check_npy_convertible<C>(fn, a)));
    std::size_t i = 0;
    for (index_t r = 0; r < v.extent(0); ++r)
      for (index_t c = 0; c < v.extent(1); ++c) v(r, c) = detail::npy_element<C>(a, i++);
    return {};
  });
}

/// The throwing form of try_load_npy_table: argument_error with the same message, the table unchanged.
///
/// **Example**
/// ```
/// posenc::load_npy_table("gpt2_wpe.npy", wpe);
/// ```
template <class Module>
void load_npy_table(const std::string& path, Module& m) {
  detail::throw_if_error(try_load_npy_table(path, m));
}

/// Saves a module's table (see try_load_npy_table) as .npy: '<f4' for a float table, '<f8' for double, written
/// to a temporary file and renamed (try_write_npy). Returns io_error if the file cannot be written.
///
/// **Example**
/// ```
/// if (posenc::status s = posenc::try_save_npy_table("wpe.npy", wpe); !s) return s;   // shape (1024, 768)
/// ```
template <class Module>
status try_save_npy_table(const std::string& path, const Module& m, int version = 0) noexcept {
  return detail::guard_alloc("save_npy_table", [&]() -> status {
    const auto v = m.table();
    using C = std::remove_const_t<typename decltype(v)::element_type>;
    std::vector<C> buf(static_cast<std::size_t>(v.size()));
    std::size_t i = 0;
    for (index_t r = 0; r < v.extent(0); ++r)
      for (index_t c = 0; c < v.extent(1); ++c) buf[i++] = v(r, c);
    return try_write_npy(path, detail::npy_dtype_of<C>(), {v.extent(0), v.extent(1)}, buf.data(), version);
  });
}

/// The throwing form of try_save_npy_table: argument_error with the same message.
///
/// **Example**
/// ```
/// posenc::save_npy_table("wpe.npy", wpe);   // np.load("wpe.npy").shape == (1024, 768)
/// ```
template <class Module>
void save_npy_table(const std::string& path, const Module& m, int version = 0) {
  detail::throw_if_error(try_save_npy_table(path, m, version));
}

POSENC_END_NAMESPACE
