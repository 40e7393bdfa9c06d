// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The .npy format's internals for posenc/io/npy.hpp: the hardened header parser, the header writer, the checks
// of a write's arguments and the byte order. Include posenc/io/npy.hpp, not this.
//
// Format reference: numpy/lib/format.py (NEP 1): the magic "\x93NUMPY", a major and a minor version byte, the
// header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0), then an ASCII (1.0, 2.0) or UTF-8
// (3.0) Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and a
// newline, then the raw data.
// IWYU pragma: private, include "posenc/io/npy.hpp"
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

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

}  // namespace detail

POSENC_END_NAMESPACE
