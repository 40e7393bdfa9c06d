// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The hardened GGUF reader behind gguf.hpp: header, metadata key/values and tensor directory, over a byte
// source (memory_source, so it can be fuzzed; file_source, a file read piece by piece, never whole). Every
// count and length is checked against the bytes left before anything is allocated for it.
//
// Format: ggml docs/gguf.md (github.com/ggml-org/ggml): the magic "GGUF", a uint32 version, uint64 tensor and
// metadata counts, the metadata (key: uint64 length + bytes; uint32 value type; value), the tensor infos (name;
// uint32 n_dims; n_dims uint64 extents, fastest first; uint32 ggml type; uint64 offset into the data section),
// padding to `general.alignment` (default 32), then the tensor data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/io/gguf_types.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gguf {

inline constexpr std::uint32_t max_dims = 4;            // GGML_MAX_DIMS: ggml rejects more
inline constexpr std::uint64_t min_kv_bytes = 8 + 4 + 1;  // key length, value type, a 1-byte value
inline constexpr std::uint64_t min_tensor_bytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

/// A file read piece by piece: model files are gigabytes, of which the metadata is the first few megabytes.
struct file_source {
  std::ifstream in;
  std::uint64_t size = 0;
  std::uint64_t at = 0;  // the stream's position, so sequential reads never seek (a seek drops the buffer)

  bool read(std::uint64_t pos, void* dst, std::size_t n) {
    if (pos != at) {
      in.seekg(static_cast<std::streamoff>(pos));
      if (!in) return false;
    }
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in) return false;
    at = pos + n;
    return true;
  }
};

struct memory_source {
  const unsigned char* data = nullptr;
  std::uint64_t size = 0;

  bool read(std::uint64_t pos, void* dst, std::size_t n) {
    std::memcpy(dst, data + pos, n);
    return true;
  }
};

/// Sequential reads with bounds checks; errors name the file and the entry being read.
template <class Source>
class reader {
 public:
  reader(Source& src, const char* fn, const std::string& what) : src_(src), fn_(fn), what_(what) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return src_.size - pos_; }

  /// What is being read, for messages: "metadata entry 3", with its key once known.
  void at(const char* kind, std::uint64_t index, const std::string* name = nullptr) {
    kind_ = kind;
    index_ = index;
    name_ = name;
  }

  template <class... Parts>
  status bad(const Parts&... parts) const {
    if (kind_ == nullptr) return fail_with(errc::invalid_file, fn_, what_, ": ", parts...);
    if (name_ == nullptr) return fail_with(errc::invalid_file, fn_, what_, ": ", kind_, " ", index_, ": ", parts...);
    return fail_with(errc::invalid_file, fn_, what_, ": ", kind_, " ", index_, " (\"", shown(*name_), "\"): ", parts...);
  }

  status bytes(void* dst, std::size_t n, const char* what) {
    if (n > remaining())
      return bad("truncated: ", what, " needs ", n, " bytes at offset ", pos_, ", the file has ", src_.size);
    if (n != 0 && !src_.read(pos_, dst, n))
      return fail_with(errc::io_error, fn_, what_, ": read of ", n, " bytes at offset ", pos_, " failed");
    pos_ += n;
    return {};
  }
  status u32(std::uint32_t& v, const char* what) {
    unsigned char b[4];
    POSENC_TRY(bytes(b, 4, what));
    v = static_cast<std::uint32_t>(load_le(b, 4));
    return {};
  }
  status u64(std::uint64_t& v, const char* what) {
    unsigned char b[8];
    POSENC_TRY(bytes(b, 8, what));
    v = load_le(b, 8);
    return {};
  }
  status str(std::string& s, const char* what) {
    std::uint64_t len = 0;
    POSENC_TRY(u64(len, what));
    if (len > remaining())
      return bad(what, ": string length ", len, " runs past the end of the file (", remaining(), " bytes left at offset ",
                 pos_, ")");
    s.resize(static_cast<std::size_t>(len));
    return bytes(s.data(), s.size(), what);
  }

  status value(gguf_value& v, std::uint32_t raw_type) {
    if (raw_type > 12) return bad("value type ", raw_type, " is not a GGUF type (0..12)");
    v.type = static_cast<gguf_type>(raw_type);
    if (v.type == gguf_type::string) return str(v.string, "the string value");
    if (v.type != gguf_type::array) {
      const std::size_t sz = scalar_size(v.type);
      unsigned char b[8];
      POSENC_TRY(bytes(b, sz, "the value"));
      v.bits = load_le(b, sz);
      if (v.type == gguf_type::boolean && v.bits > 1) return bad("bool value ", v.bits, " is neither 0 nor 1");
      return {};
    }
    std::uint32_t et = 0;
    POSENC_TRY(u32(et, "the array's element type"));
    if (et > 12) return bad("array element type ", et, " is not a GGUF type (0..12)");
    if (static_cast<gguf_type>(et) == gguf_type::array)
      return bad("arrays of arrays are not supported (ggml's reader rejects them too)");
    v.element_type = static_cast<gguf_type>(et);
    POSENC_TRY(u64(v.count, "the array's length"));
    if (v.element_type == gguf_type::string) {
      if (v.count > remaining() / 8)
        return bad("an array of ", v.count, " strings cannot fit in the ", remaining(), " bytes left (8 bytes each at least)");
      v.strings.resize(static_cast<std::size_t>(v.count));
      for (std::string& s : v.strings) POSENC_TRY(str(s, "an array element"));
      return {};
    }
    const std::size_t sz = scalar_size(v.element_type);
    if (v.count > remaining() / sz)
      return bad("an array of ", v.count, " ", gguf_type_name(v.element_type), " values (", sz,
                 " bytes each) runs past the end of the file (", remaining(), " bytes left)");
    v.bytes.resize(static_cast<std::size_t>(v.count * sz));
    POSENC_TRY(bytes(v.bytes.data(), v.bytes.size(), "the array"));
    if (v.element_type == gguf_type::boolean)
      for (std::size_t i = 0; i < v.bytes.size(); ++i)
        if (v.bytes[i] > 1) return bad("bool array element ", i, " is ", +v.bytes[i], ", neither 0 nor 1");
    return {};
  }

  /// A key or name for a message: printable ASCII kept, the rest escaped, long ones cut.
  static std::string shown(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < 80; ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
        out += static_cast<char>(c);
      } else {
        static constexpr char hex[] = "0123456789abcdef";
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
      }
    }
    if (s.size() > 80) out += "...";
    return out;
  }

 private:
  Source& src_;
  const char* fn_;
  const std::string& what_;
  std::uint64_t pos_ = 0;
  const char* kind_ = nullptr;
  std::uint64_t index_ = 0;
  const std::string* name_ = nullptr;
};

/// The first duplicate among `names` (pointers into the metadata), or null.
inline const std::string* first_duplicate(std::vector<const std::string*> names) {
  std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  for (std::size_t i = 1; i < names.size(); ++i)
    if (*names[i] == *names[i - 1]) return names[i];
  return nullptr;
}

/// Header, metadata and tensor directory of the GGUF in `src`, into `out` (assigned only on success).
template <class Source>
status parse_metadata(Source& src, const char* fn, const std::string& what, gguf_metadata& out) {
  reader<Source> r(src, fn, what);
  gguf_metadata m;
  m.file_size = src.size;

  unsigned char magic[4];
  if (src.size < 4) return r.bad("truncated: ", src.size, " bytes; a GGUF file starts with the 4-byte magic \"GGUF\"");
  POSENC_TRY(r.bytes(magic, 4, "the magic"));
  if (std::memcmp(magic, "GGUF", 4) != 0)
    return r.bad("not a GGUF file: bad magic \"", reader<Source>::shown(std::string(reinterpret_cast<char*>(magic), 4)),
                 "\" (expected \"GGUF\")");
  POSENC_TRY(r.u32(m.version, "the version"));
  if (m.version != 2 && m.version != 3) {
    const std::uint32_t v = m.version;
    const std::uint32_t swapped = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
    if (swapped == 2 || swapped == 3)
      return r.bad("big-endian GGUF (version ", swapped, ", byte-swapped) is not supported");
    if (v == 1) return r.bad("GGUF version 1 (32-bit counts) is not supported; posenc reads versions 2 and 3");
    return r.bad("unsupported GGUF version ", v, " (posenc reads versions 2 and 3)");
  }
  std::uint64_t tensor_count = 0, kv_count = 0;
  POSENC_TRY(r.u64(tensor_count, "the tensor count"));
  POSENC_TRY(r.u64(kv_count, "the metadata count"));
  // Counts bounded by the bytes left before anything is sized from them.
  if (kv_count > r.remaining() / min_kv_bytes)
    return r.bad("metadata count ", kv_count, " cannot fit in the ", r.remaining(), " bytes after the header (",
                 min_kv_bytes, " bytes per entry at least)");
  if (tensor_count > r.remaining() / min_tensor_bytes)
    return r.bad("tensor count ", tensor_count, " cannot fit in the ", r.remaining(), " bytes after the header (",
                 min_tensor_bytes, " bytes per tensor at least)");
  if (kv_count * min_kv_bytes + tensor_count * min_tensor_bytes > r.remaining())
    return r.bad(kv_count, " metadata entries and ", tensor_count, " tensors cannot fit in the ", r.remaining(),
                 " bytes after the header");

  m.kv.resize(static_cast<std::size_t>(kv_count));
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    gguf_kv& e = m.kv[static_cast<std::size_t>(i)];
    r.at("metadata entry", i);
    POSENC_TRY(r.str(e.key, "the key"));
    r.at("metadata entry", i, &e.key);
    std::uint32_t type = 0;
    POSENC_TRY(r.u32(type, "the value type"));
    POSENC_TRY(r.value(e.value, type));
  }
  r.at(nullptr, 0);
  {
    std::vector<const std::string*> keys;
    keys.reserve(m.kv.size());
    for (const gguf_kv& e : m.kv) keys.push_back(&e.key);
    if (const std::string* d = first_duplicate(std::move(keys)))
      return r.bad("duplicate metadata key \"", reader<Source>::shown(*d), "\"");
  }
  if (const gguf_value* a = m.find("general.alignment")) {
    const auto n = a->to_int();
    if (!a->is_integer() || !n)
      return r.bad("general.alignment has type ", a->type_name(), ", expected an unsigned integer (uint32)");
    if (*n <= 0 || *n > (std::int64_t{1} << 30) || (*n & (*n - 1)) != 0)
      return r.bad("general.alignment=", *n, " must be a power of two (at most 2^30)");
    m.alignment = static_cast<std::uint64_t>(*n);
  }

  m.tensors.resize(static_cast<std::size_t>(tensor_count));
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    gguf_tensor_info& t = m.tensors[static_cast<std::size_t>(i)];
    r.at("tensor", i);
    POSENC_TRY(r.str(t.name, "the name"));
    r.at("tensor", i, &t.name);
    std::uint32_t n_dims = 0;
    POSENC_TRY(r.u32(n_dims, "the number of dimensions"));
    if (n_dims > max_dims) return r.bad(n_dims, " dimensions; ggml tensors have at most ", max_dims);
    t.dims.resize(n_dims);
    std::int64_t elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      std::uint64_t e = 0;
      POSENC_TRY(r.u64(e, "an extent"));
      if (e > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return r.bad("extent ", d, " = ", e, " exceeds INT64_MAX");
      t.dims[d] = static_cast<std::int64_t>(e);
      if (t.dims[d] != 0 && elements > std::numeric_limits<std::int64_t>::max() / t.dims[d])
        return r.bad("the element count overflows int64 at extent ", d, " = ", e);
      elements *= t.dims[d];
    }
    POSENC_TRY(r.u32(t.type, "the ggml type"));
    POSENC_TRY(r.u64(t.offset, "the data offset"));
    if (t.offset % m.alignment != 0)
      return r.bad("data offset ", t.offset, " is not a multiple of the alignment ", m.alignment);
    if (const ggml_traits* tr = ggml_type_traits(t.type)) {
      if (n_dims > 0 && t.dims[0] % tr->block != 0)
        return r.bad("extent 0 = ", t.dims[0], " is not a multiple of the ", tr->name, " block size ", tr->block);
      const auto blocks = static_cast<std::uint64_t>(elements) / tr->block;
      if (blocks > std::numeric_limits<std::uint64_t>::max() / tr->size) return r.bad("the byte size overflows");
      t.nbytes = blocks * tr->size;
    }
  }
  r.at(nullptr, 0);
  {
    std::vector<const std::string*> names;
    names.reserve(m.tensors.size());
    for (const gguf_tensor_info& t : m.tensors) names.push_back(&t.name);
    if (const std::string* d = first_duplicate(std::move(names)))
      return r.bad("duplicate tensor name \"", reader<Source>::shown(*d), "\"");
  }

  // The data section starts at the next multiple of the alignment; every tensor must lie inside the file.
  const std::uint64_t end_of_infos = r.pos();
  m.data_offset = (end_of_infos + m.alignment - 1) / m.alignment * m.alignment;
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    gguf_tensor_info& t = m.tensors[i];
    r.at("tensor", i, &t.name);
    if (m.data_offset > src.size || t.offset > src.size - m.data_offset)
      return r.bad("data offset ", t.offset, " (the data section starts at ", m.data_offset,
                   ") lies past the end of the file (", src.size, " bytes)");
    t.file_offset = m.data_offset + t.offset;
    if (t.nbytes > src.size - t.file_offset)
      return r.bad("its ", t.nbytes, " bytes of data at file offset ", t.file_offset, " run past the end of the file (",
                   src.size, " bytes)");
  }
  out = std::move(m);
  return {};
}

inline std::string path_what(const std::string& path) { return "path=\"" + path + "\""; }

/// Opens `path` for reading; io_error when it cannot be opened or measured.
inline status open_file(const std::string& path, const char* fn, const std::string& what, file_source& src) {
  src.in.open(path, std::ios::binary);
  if (!src.in) return fail_with(errc::io_error, fn, "cannot open ", what);
  src.in.seekg(0, std::ios::end);
  const std::streamoff end = src.in.tellg();
  src.in.seekg(0, std::ios::beg);
  if (!src.in || end < 0) return fail_with(errc::io_error, fn, "cannot determine the size of ", what);
  src.size = static_cast<std::uint64_t>(end);
  src.at = 0;
  return {};
}

}  // namespace detail::gguf
POSENC_END_NAMESPACE
