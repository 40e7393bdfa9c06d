// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// GGUF metadata -> RoPE configuration. A small, hardened reader of GGUF files (versions 2 and 3, little-endian):
// the header, every metadata key/value (all value types, arrays included), the tensor directory, and no tensor
// data except the small RoPE factor tensors llama.cpp's converter writes (`rope_freqs.weight`, Phi-3's
// `rope_factors_long.weight` / `rope_factors_short.weight`). llama.cpp's keys are then mapped through the
// rope_params mapping shared with hf_config.hpp. Optional: not part of the umbrella posenc.hpp; needs neither
// Eigen nor nlohmann/json.
//
// Format: ggml docs/gguf.md (github.com/ggml-org/ggml): the magic "GGUF", a uint32 version, uint64 tensor and
// metadata counts, the metadata (key: uint64 length + bytes; uint32 value type; value), the tensor infos (name;
// uint32 n_dims; n_dims uint64 extents, fastest first; uint32 ggml type; uint64 offset into the data section),
// padding to `general.alignment` (default 32), then the tensor data. Key names: llama.cpp src/llama-arch.cpp
// (LLM_KV_NAMES); their use: src/llama-model.cpp (llama_model::load_hparams) and src/llama-context.cpp.
//
// Hardening: the parser runs over a byte source (a memory buffer, so it can be fuzzed, or a file read piece by
// piece, never whole). Every count and length is checked against the bytes left before anything is allocated
// for it, so a file can make the reader allocate only a small multiple of its own size. A bad file gives
// errc::invalid_file with a message naming the file, the entry and what is wrong (bad magic, unsupported or
// big-endian version, truncation, counts or lengths past the end, unknown value types, arrays of arrays,
// booleans other than 0/1, duplicate keys or tensor names, a bad alignment, more than 4 dimensions, extents
// whose product overflows, misaligned offsets, tensor data past the end, a known key of the wrong type, RoPE
// factor tensors of the wrong type or shape); an unreadable file gives errc::io_error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/rope_params.hpp"
#include "posenc/rope_scaling.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE

/// GGUF metadata value types (ggml gguf.h `enum gguf_type`).
enum class gguf_type : std::uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};

/// "uint8", ..., "float64"; "?" for a value outside the enum.
inline const char* gguf_type_name(gguf_type t) noexcept {
  static constexpr const char* names[] = {"uint8",   "int8", "uint16", "int16", "uint32", "int32",  "float32",
                                          "bool",    "string", "array", "uint64", "int64", "float64"};
  const auto i = static_cast<std::uint32_t>(t);
  return i < 13 ? names[i] : "?";
}

namespace detail::gguf {

/// Bytes of one scalar of type t in the file; 0 for string, array and unknown types.
inline std::size_t scalar_size(gguf_type t) noexcept {
  switch (t) {
    case gguf_type::uint8: case gguf_type::int8: case gguf_type::boolean: return 1;
    case gguf_type::uint16: case gguf_type::int16: return 2;
    case gguf_type::uint32: case gguf_type::int32: case gguf_type::float32: return 4;
    case gguf_type::uint64: case gguf_type::int64: case gguf_type::float64: return 8;
    default: return 0;
  }
}

/// n little-endian bytes as an unsigned integer (the file's byte order, whatever the host's).
inline std::uint64_t load_le(const unsigned char* p, std::size_t n) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

inline bool is_integer_type(gguf_type t) noexcept {
  switch (t) {
    case gguf_type::uint8: case gguf_type::int8: case gguf_type::uint16: case gguf_type::int16:
    case gguf_type::uint32: case gguf_type::int32: case gguf_type::uint64: case gguf_type::int64: return true;
    default: return false;
  }
}

/// The scalar whose raw bits are `bits` (zero-extended) as int64; nullopt for non-integers and uint64 values
/// past INT64_MAX.
inline std::optional<std::int64_t> bits_to_int(gguf_type t, std::uint64_t bits) noexcept {
  switch (t) {
    case gguf_type::uint8: case gguf_type::uint16: case gguf_type::uint32: return static_cast<std::int64_t>(bits);
    case gguf_type::int8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(bits));
    case gguf_type::int16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(bits));
    case gguf_type::int32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
    case gguf_type::uint64:
      if (bits > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return static_cast<std::int64_t>(bits);
    case gguf_type::int64: {
      std::int64_t v;
      std::memcpy(&v, &bits, sizeof v);  // two's complement reinterpretation, defined for memcpy
      return v;
    }
    default: return std::nullopt;
  }
}

/// The scalar as double: integers (exact up to 2^53) and floats; nullopt for bool, string, array.
inline std::optional<double> bits_to_double(gguf_type t, std::uint64_t bits) noexcept {
  if (t == gguf_type::float32) {
    const auto b = static_cast<std::uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, sizeof f);
    return static_cast<double>(f);
  }
  if (t == gguf_type::float64) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  if (t == gguf_type::uint64) return static_cast<double>(bits);
  if (const auto i = bits_to_int(t, bits)) return static_cast<double>(*i);
  return std::nullopt;
}

}  // namespace detail::gguf

/// One metadata value. Scalars keep their raw bits; numeric and boolean arrays keep the file's little-endian
/// bytes (so a file costs about its own size in memory); string arrays are strings.
struct gguf_value {
  gguf_type type = gguf_type::uint8;
  gguf_type element_type = gguf_type::uint8;  ///< arrays: the elements' type (never array)
  std::uint64_t bits = 0;                     ///< scalars: the value's bits, zero-extended (floats: IEEE bits)
  std::string string;                         ///< type string
  std::uint64_t count = 0;                    ///< arrays: number of elements
  std::vector<unsigned char> bytes;           ///< numeric/bool arrays: count * element size bytes, little-endian
  std::vector<std::string> strings;           ///< string arrays

  bool is_array() const noexcept { return type == gguf_type::array; }
  /// An integer scalar (any width or sign).
  bool is_integer() const noexcept { return detail::gguf::is_integer_type(type); }
  /// An integer or floating-point scalar.
  bool is_number() const noexcept { return is_integer() || type == gguf_type::float32 || type == gguf_type::float64; }
  /// Integer scalars as int64 (nullopt for other types and for uint64 values past INT64_MAX).
  std::optional<std::int64_t> to_int() const noexcept { return detail::gguf::bits_to_int(type, bits); }
  /// Number scalars as double.
  std::optional<double> to_double() const noexcept { return detail::gguf::bits_to_double(type, bits); }
  /// Element i of a numeric array as int64 / as double (nullopt out of range or of the wrong type).
  std::optional<std::int64_t> int_at(std::uint64_t i) const noexcept {
    const std::size_t sz = detail::gguf::scalar_size(element_type);
    if (!is_array() || sz == 0 || i >= count) return std::nullopt;
    return detail::gguf::bits_to_int(element_type, detail::gguf::load_le(bytes.data() + i * sz, sz));
  }
  std::optional<double> number_at(std::uint64_t i) const noexcept {
    const std::size_t sz = detail::gguf::scalar_size(element_type);
    if (!is_array() || sz == 0 || i >= count) return std::nullopt;
    return detail::gguf::bits_to_double(element_type, detail::gguf::load_le(bytes.data() + i * sz, sz));
  }
  /// "uint32", "string", "array of float32", ...
  std::string type_name() const {
    return is_array() ? std::string("array of ") + gguf_type_name(element_type) : gguf_type_name(type);
  }
};

struct gguf_kv {
  std::string key;
  gguf_value value;
};

/// One entry of the tensor directory.
struct gguf_tensor_info {
  std::string name;
  std::vector<std::int64_t> dims;  ///< ggml ne: the fastest-varying extent first (NumPy's shape reversed)
  std::uint32_t type = 0;          ///< ggml_type (0 F32, 1 F16, 8 Q8_0, 30 BF16, ...; see ggml_type_name)
  std::uint64_t offset = 0;        ///< from the start of the data section (a multiple of the alignment)
  std::uint64_t file_offset = 0;   ///< from the start of the file
  std::uint64_t nbytes = 0;        ///< size of the data; 0 when posenc does not know the type's block size

  std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;  // cannot overflow: checked when read
    return n;
  }
};

/// Everything before the tensor data.
struct gguf_metadata {
  std::uint32_t version = 0;
  std::vector<gguf_kv> kv;               ///< in file order; keys are unique
  std::vector<gguf_tensor_info> tensors; ///< in file order; names are unique
  std::uint64_t alignment = 32;          ///< `general.alignment`, else 32
  std::uint64_t data_offset = 0;         ///< where the data section starts in the file
  std::uint64_t file_size = 0;

  /// The value of `key`, or null.
  const gguf_value* find(const std::string& key) const noexcept {
    for (const gguf_kv& e : kv)
      if (e.key == key) return &e.value;
    return nullptr;
  }
  /// The tensor named `name`, or null.
  const gguf_tensor_info* find_tensor(const std::string& name) const noexcept {
    for (const gguf_tensor_info& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
};

namespace detail::gguf {

struct ggml_traits {
  const char* name;
  std::uint32_t block;  // elements per block
  std::uint32_t size;   // bytes per block
};

/// ggml type sizes (ggml.c type_traits; the same as gguf-py GGML_QUANT_SIZES). Ids that were removed, or
/// whose size posenc does not rely on, have no entry: their tensors are listed without a byte size.
inline const ggml_traits* ggml_type_traits(std::uint32_t type) noexcept {
  static constexpr ggml_traits table[] = {
      {"F32", 1, 4},        {"F16", 1, 2},         {"Q4_0", 32, 18},      {"Q4_1", 32, 20},    {nullptr, 0, 0},
      {nullptr, 0, 0},      {"Q5_0", 32, 22},      {"Q5_1", 32, 24},      {"Q8_0", 32, 34},    {nullptr, 0, 0},
      {"Q2_K", 256, 84},    {"Q3_K", 256, 110},    {"Q4_K", 256, 144},    {"Q5_K", 256, 176},  {"Q6_K", 256, 210},
      {"Q8_K", 256, 292},   {"IQ2_XXS", 256, 66},  {"IQ2_XS", 256, 74},   {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
      {"IQ4_NL", 32, 18},   {"IQ3_S", 256, 110},   {"IQ2_S", 256, 82},    {"IQ4_XS", 256, 136}, {"I8", 1, 1},
      {"I16", 1, 2},        {"I32", 1, 4},         {"I64", 1, 8},         {"F64", 1, 8},       {"IQ1_M", 256, 56},
      {"BF16", 1, 2},       {nullptr, 0, 0},       {nullptr, 0, 0},       {nullptr, 0, 0},     {"TQ1_0", 256, 54},
      {"TQ2_0", 256, 66},   {nullptr, 0, 0},       {nullptr, 0, 0},       {nullptr, 0, 0},     {"MXFP4", 32, 17},
  };
  if (type >= sizeof table / sizeof table[0] || table[type].name == nullptr) return nullptr;
  return &table[type];
}

}  // namespace detail::gguf

/// The ggml type's name ("F32", "Q4_K", ...), or "type <id>" for ids posenc does not list.
inline std::string ggml_type_name(std::uint32_t type) {
  const detail::gguf::ggml_traits* t = detail::gguf::ggml_type_traits(type);
  return t != nullptr ? std::string(t->name) : "type " + std::to_string(type);
}

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

// ------------------------------------------------------------------------------------- architecture table

/// How an architecture pairs the rotated features in llama.cpp: llama_model_rope_type() in src/llama-model.cpp
/// (ggml-org/llama.cpp at commit 00342301d01a, 2025), names from LLM_ARCH_NAMES in src/llama-arch.cpp.
/// LLAMA_ROPE_TYPE_NORM ("normal", consecutive pairs (x[2i], x[2i+1])) is used where llama.cpp's converter
/// permutes the q/k weights of a half-split checkpoint (LlamaModel.permute in convert_hf_to_gguf.py) or where
/// the original model pairs that way; LLAMA_ROPE_TYPE_NEOX pairs (x[i], x[i+R/2]); LLAMA_ROPE_TYPE_MROPE
/// (Qwen2-VL) is NEOX pairs with sections.
enum class arch_rope { none, norm, neox, mrope, unknown };

inline arch_rope arch_rope_type(const std::string& arch) {
  static constexpr const char* norm[] = {
      "llama",    "llada",     "llama4",  "deci",      "baichuan",   "starcoder",     "internlm2", "minicpm",
      "xverse",   "command-r", "cohere2", "olmo",      "arctic",     "deepseek",      "deepseek2", "plm",
      "chatglm",  "glm4",      "granite", "granitemoe", "granitehybrid", "chameleon", "bailingmoe", "neo-bert",
      "smollm3",  "arcee",     "ernie4_5", "ernie4_5-moe"};
  static constexpr const char* neox[] = {
      "falcon",   "falcon-h1", "grok",     "dbrx",       "bert",      "jina-bert-v3", "nomic-bert", "nomic-bert-moe",
      "stablelm", "bitnet",    "qwen",     "qwen2",      "dream",     "qwen2moe",     "qwen3",      "qwen3moe",
      "qwen3next", "llada-moe", "olmo2",   "olmoe",      "phi2",      "phi3",         "phimoe",     "plamo",
      "plamo2",   "gemma",     "gemma2",   "gemma3",     "gemma3n",   "gemma-embedding", "starcoder2", "openelm",
      "gptneox",  "codeshell", "orion",    "nemotron",   "exaone",    "exaone4",      "minicpm3",   "bailingmoe2",
      "dots1",    "hunyuan-moe", "gpt-oss", "hunyuan-dense", "lfm2",  "lfm2moe",      "smallthinker", "glm4moe",
      "seed_oss", "grovemoe",  "apertus"};
  // LLAMA_ROPE_TYPE_NONE in the same function (gptj, listed there too, is left out: GPT-J does use RoPE, its
  // graph is just not implemented in llama.cpp).
  static constexpr const char* none[] = {"clip",  "gpt2",  "mpt",    "refact",    "bloom",      "mamba",
                                         "mamba2", "jamba", "jina-bert-v2", "t5", "t5encoder",  "jais",
                                         "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "wavtokenizer-dec", "nemotron_h"};
  for (const char* a : norm)
    if (arch == a) return arch_rope::norm;
  for (const char* a : neox)
    if (arch == a) return arch_rope::neox;
  if (arch == "qwen2vl") return arch_rope::mrope;
  for (const char* a : none)
    if (arch == a) return arch_rope::none;
  return arch_rope::unknown;
}

}  // namespace detail::gguf

/// Choices a GGUF file does not make.
struct gguf_options {
  /// Pair layout; unset: from the architecture (see gguf_rope_info::rope_type). Set it for an architecture
  /// posenc's table does not list.
  std::optional<rope_style> style;
  /// LongRoPE: when the long factors apply. llama.cpp switches on the context size (n_ctx_per_seq >
  /// original_context_length); posenc's default is Hugging Face's (sequence length > M).
  longrope_policy long_policy = longrope_policy::per_length;
};

/// What try_read_gguf_rope read: the RoPE configuration and the raw facts worth printing next to it.
struct gguf_rope_info {
  /// head_dim: `<arch>.attention.key_length`, else `<arch>.embedding_length / <arch>.attention.head_count`;
  ///   for deepseek2 (MLA) the rotary part is its own head: `<arch>.rope.dimension_count`.
  /// rotary_dim: `<arch>.rope.dimension_count`, else head_dim. base: `<arch>.rope.freq_base`, else 10000.
  /// style: gguf_options::style, else the architecture's (rope_type). scaling and freq_factors: see
  /// try_read_gguf_rope.
  rope_config config;
  std::uint32_t version = 0;            ///< GGUF version (2 or 3)
  std::string architecture;             ///< `general.architecture`
  std::string name;                     ///< `general.name` ("" when absent)
  /// llama.cpp's RoPE type of the architecture: "norm" (interleaved), "neox" (half-split), "mrope" (half-split
  /// with sections), or "override" when gguf_options::style decided.
  std::string rope_type;
  std::string file_scaling_type;        ///< `<arch>.rope.scaling.type` as written ("" when absent)
  std::string scaling_type;             ///< the mapped scaling, Hugging Face's name: default, linear, yarn, longrope
  index_t context_length = 0;           ///< `<arch>.context_length` (0 when absent)
  index_t original_context_length = 0;  ///< `<arch>.rope.scaling.original_context_length` (0 when absent)
  index_t embedding_length = 0;         ///< `<arch>.embedding_length` (0 when absent)
  index_t head_count = 0;               ///< `<arch>.attention.head_count` (the first layer's if per layer)
  index_t head_count_kv = 0;            ///< `<arch>.attention.head_count_kv`, else head_count
  /// `<arch>.rope.dimension_sections` as written (llama.cpp pads Qwen2-VL's [t, h, w] with a zero to 4);
  /// empty when absent. The first three are the mrope_plan sections when the fourth is 0.
  std::vector<index_t> mrope_sections;
  std::string freq_factors_tensor;      ///< "rope_freqs.weight" when config.freq_factors came from it, else ""
};

namespace detail::gguf {

/// Typed access to the metadata for the RoPE mapping: a key of the wrong type is an invalid_file naming it.
class rope_keys {
 public:
  rope_keys(const gguf_metadata& m, const char* fn, const std::string& what) : m_(m), fn_(fn), what_(what) {}

  template <class... Parts>
  status bad(const Parts&... parts) const {
    return fail_with(errc::invalid_file, fn_, what_, ": ", parts...);
  }
  status wrong_type(const std::string& key, const gguf_value& v, const char* expected) const {
    return bad(key, " has type ", v.type_name(), ", expected ", expected);
  }

  status string(const std::string& key, std::optional<std::string>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (v->type != gguf_type::string) return wrong_type(key, *v, "string");
    out = v->string;
    return {};
  }
  /// A count or length: an integer >= 0. llama.cpp writes uint32; any integer type is accepted.
  status count(const std::string& key, std::optional<index_t>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (!v->is_integer()) return wrong_type(key, *v, "an unsigned integer (uint32)");
    const auto i = v->to_int();
    if (!i) return bad(key, "=", v->bits, " is too large");
    if (*i < 0) return bad(key, "=", *i, " must be >= 0");
    out = *i;
    return {};
  }
  /// A count that llama.cpp also accepts per layer (get_key_or_arr): a scalar, or an array whose first non-zero
  /// entry is taken (hybrid models list 0 heads for their recurrent layers).
  status count_or_array(const std::string& key, std::optional<index_t>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr || !v->is_array()) return count(key, out);
    if (!is_integer_type(v->element_type)) return wrong_type(key, *v, "an unsigned integer or an array of them");
    for (std::uint64_t i = 0; i < v->count; ++i) {
      const auto e = v->int_at(i);
      if (!e || *e < 0) return bad(key, "[", i, "] must be an integer >= 0");
      if (*e != 0) {
        out = *e;
        return {};
      }
    }
    out = 0;
    return {};
  }
  /// A number: llama.cpp writes float32; any integer or float type is accepted.
  status number(const std::string& key, std::optional<double>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (!v->is_number()) return wrong_type(key, *v, "a number (float32)");
    out = v->to_double();
    return {};
  }
  status integers(const std::string& key, std::vector<index_t>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (!v->is_array() || !is_integer_type(v->element_type)) return wrong_type(key, *v, "an array of integers (int32)");
    out.clear();
    for (std::uint64_t i = 0; i < v->count; ++i) {
      const auto e = v->int_at(i);
      if (!e || *e < 0) return bad(key, "[", i, "] must be an integer >= 0");
      out.push_back(*e);
    }
    return {};
  }

 private:
  const gguf_metadata& m_;
  const char* fn_;
  const std::string& what_;
};

/// Reads a small F32 tensor of `pairs` elements (shape [pairs], trailing extents of 1 allowed) from the source.
template <class Source>
status read_factor_tensor(Source& src, const gguf_tensor_info& t, index_t pairs, const rope_keys& k,
                          const char* fn, const std::string& what, std::vector<double>& out) {
  if (t.type != 0) return k.bad("tensor \"", t.name, "\" has ggml type ", ggml_type_name(t.type), ", expected F32");
  bool shape_ok = !t.dims.empty() && t.dims[0] == pairs;
  for (std::size_t d = 1; d < t.dims.size(); ++d) shape_ok = shape_ok && t.dims[d] == 1;
  if (!shape_ok) {
    std::string dims;
    for (std::size_t d = 0; d < t.dims.size(); ++d) dims += (d ? ", " : "") + std::to_string(t.dims[d]);
    return k.bad("tensor \"", t.name, "\" has extents [", dims, "], expected [", pairs, "] (rotary_dim/2 per-pair factors)");
  }
  // Bounds were checked with the directory (nbytes of an F32 tensor is known); pairs is small.
  std::vector<unsigned char> raw(static_cast<std::size_t>(pairs) * 4);
  if (!src.read(t.file_offset, raw.data(), raw.size()))
    return fail_with(errc::io_error, fn, what, ": read of tensor \"", t.name, "\" at offset ", t.file_offset, " failed");
  out.resize(static_cast<std::size_t>(pairs));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto bits = static_cast<std::uint32_t>(load_le(raw.data() + 4 * i, 4));
    float f;
    std::memcpy(&f, &bits, sizeof f);
    out[i] = static_cast<double>(f);
  }
  return {};
}

/// llama.cpp's keys -> rope_params -> rope_config (the shared mapping), into `out` (assigned only on success).
template <class Source>
status rope_from_metadata(const gguf_metadata& m, Source& src, const gguf_options& opt, const char* fn,
                          const std::string& what, gguf_rope_info& out) {
  const rope_keys k(m, fn, what);
  gguf_rope_info info;
  info.version = m.version;

  std::optional<std::string> arch, name;
  POSENC_TRY(k.string("general.architecture", arch));
  if (!arch) return k.bad("general.architecture is missing");
  POSENC_TRY(k.string("general.name", name));
  info.architecture = *arch;
  info.name = name.value_or("");
  const std::string a = *arch + ".";

  // Style: llama.cpp's table, unless the caller decides.
  const arch_rope kind = arch_rope_type(*arch);
  rope_params p;
  if (opt.style) {
    p.style = *opt.style;
    info.rope_type = "override";
  } else if (kind == arch_rope::norm || kind == arch_rope::neox || kind == arch_rope::mrope) {
    p.style = kind == arch_rope::norm ? rope_style::interleaved : rope_style::half_split;
    info.rope_type = kind == arch_rope::norm ? "norm" : kind == arch_rope::neox ? "neox" : "mrope";
  } else if (kind == arch_rope::none) {
    return fail(fn, what, ": architecture \"", *arch, "\" uses no RoPE (llama.cpp llama_model_rope_type: LLAMA_ROPE_TYPE_NONE)");
  } else {
    return fail(fn, what, ": architecture \"", *arch,
                "\" is not in posenc's table of llama.cpp pair styles: set gguf_options::style (interleaved for "
                "LLAMA_ROPE_TYPE_NORM, half_split for LLAMA_ROPE_TYPE_NEOX)");
  }

  // Head and rotary dims (llama_model::load_hparams).
  std::optional<index_t> ctx, emb, heads, heads_kv, key_len, rot, orig;
  POSENC_TRY(k.count(a + "context_length", ctx));
  POSENC_TRY(k.count(a + "embedding_length", emb));
  POSENC_TRY(k.count_or_array(a + "attention.head_count", heads));
  POSENC_TRY(k.count_or_array(a + "attention.head_count_kv", heads_kv));
  POSENC_TRY(k.count(a + "attention.key_length", key_len));
  POSENC_TRY(k.count(a + "rope.dimension_count", rot));
  POSENC_TRY(k.count(a + "rope.scaling.original_context_length", orig));
  info.context_length = ctx.value_or(0);
  info.embedding_length = emb.value_or(0);
  info.head_count = heads.value_or(0);
  info.head_count_kv = heads_kv.value_or(info.head_count);
  info.original_context_length = orig.value_or(0);
  if (*arch == "deepseek2") {
    // MLA: q/k = [nope | rope]; the rope part (qk_rope_head_dim) is its own head, as hf_config.hpp reads it.
    if (!rot) return k.bad(a, "rope.dimension_count is missing (the rotary head of deepseek2's MLA)");
    p.head_dim = *rot;
  } else if (key_len) {
    p.head_dim = *key_len;
  } else {
    if (!emb) return k.bad(a, "embedding_length is missing (needed for the head dim: no ", a, "attention.key_length)");
    if (!heads || *heads == 0)
      return k.bad(a, "attention.head_count is ", heads ? "0" : "missing", " (needed for the head dim: no ", a,
                   "attention.key_length)");
    p.head_dim = *emb / *heads;
  }
  p.rotary_dim = rot.value_or(p.head_dim);
  if (p.head_dim <= 0) return k.bad("the head dim is 0");
  if (p.rotary_dim <= 0) return k.bad(a, "rope.dimension_count is 0");
  const index_t pairs = p.rotary_dim / 2;

  std::optional<double> base;
  POSENC_TRY(k.number(a + "rope.freq_base", base));
  p.base = base.value_or(10000.0);

  // Scaling (load_hparams): the type defaults to "linear" with factor 0 meaning 1, i.e. none.
  std::optional<std::string> type;
  POSENC_TRY(k.string(a + "rope.scaling.type", type));
  info.file_scaling_type = type.value_or("");
  std::optional<double> factor, scale_linear, attn, yarn_attn, ext, beta_fast, beta_slow, log_mul;
  POSENC_TRY(k.number(a + "rope.scaling.factor", factor));
  POSENC_TRY(k.number(a + "rope.scale_linear", scale_linear));  // the key's old name
  POSENC_TRY(k.number(a + "rope.scaling.attn_factor", attn));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_attn_factor", yarn_attn));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_ext_factor", ext));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_beta_fast", beta_fast));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_beta_slow", beta_slow));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_log_multiplier", log_mul));
  const std::string factor_key = a + (factor ? "rope.scaling.factor" : "rope.scale_linear");
  if (!factor) factor = scale_linear;
  if (factor && *factor == 0.0) factor.reset();  // llama.cpp: 0 means no scaling

  rope_param_names n;
  n.function = fn;
  n.context = what + ": ";
  n.head_dim = a + (*arch == "deepseek2" ? "rope.dimension_count"
                                         : key_len ? "attention.key_length" : "embedding_length/head_count");
  n.rotary_dim = a + "rope.dimension_count";
  n.scaling_type = n.scaling_label = a + "rope.scaling.type";
  n.factor = factor_key;
  n.original_max_positions = a + "rope.scaling.original_context_length";
  n.max_position_embeddings = a + "context_length";
  n.beta_fast = a + "rope.scaling.yarn_beta_fast";
  n.beta_slow = a + "rope.scaling.yarn_beta_slow";
  n.ext_factor = a + "rope.scaling.yarn_ext_factor";
  n.attention_factor = a + "rope.scaling.yarn_attn_factor";
  n.attn_factor = a + "rope.scaling.attn_factor";
  n.mscale_all_dim = a + "rope.scaling.yarn_log_multiplier";
  n.short_factor = "rope_factors_short.weight";
  n.long_factor = "rope_factors_long.weight";
  n.freq_factors = "rope_freqs.weight";
  n.mrope_section = a + "rope.dimension_sections";

  p.max_position_embeddings = info.context_length;
  p.original_max_positions = info.original_context_length;
  p.factor = factor;
  p.long_policy = opt.long_policy;

  const gguf_tensor_info* freqs = m.find_tensor("rope_freqs.weight");
  const gguf_tensor_info* longf = m.find_tensor("rope_factors_long.weight");
  const gguf_tensor_info* shortf = m.find_tensor("rope_factors_short.weight");
  const std::string t = type.value_or(factor ? "linear" : "none");
  p.scaling_type = t;
  if (longf != nullptr || shortf != nullptr || t == "longrope") {
    // Phi-3 LongRoPE: the per-pair factors are tensors; older converters write no scaling type. llama.cpp
    // scales cos/sin by rope.scaling.attn_factor alone (1 when absent), which the converter sets to HF's
    // attention factor sqrt(1 + ln F / ln M).
    if (t != "none" && t != "longrope")
      return k.bad("rope_factors_long/short.weight are present with ", n.scaling_type, "=\"", t, "\"");
    if (longf == nullptr || shortf == nullptr)
      return k.bad(longf == nullptr ? "rope_factors_long.weight" : "rope_factors_short.weight",
                   " is missing (LongRoPE needs both factor tensors)");
    if (factor && *factor != 1.0)
      return k.bad(factor_key, "=", *factor, " with LongRoPE factors is not supported (llama.cpp would add linear scaling)");
    p.scaling_type = "longrope";
    // HF's factor (context_length / M) only sets the default magnitude, which attn_factor replaces below.
    p.factor.reset();
    if (info.context_length == 0) p.factor = 1.0;
    POSENC_TRY(read_factor_tensor(src, *longf, pairs, k, fn, what, p.long_factor));
    POSENC_TRY(read_factor_tensor(src, *shortf, pairs, k, fn, what, p.short_factor));
    p.attention_factor = attn.value_or(1.0);
    n.attention_factor = n.attn_factor;
  } else if (freqs != nullptr) {
    // Llama 3 and others: ggml divides each frequency by its factor (rope_freqs.weight, [R/2] F32).
    POSENC_TRY(read_factor_tensor(src, *freqs, pairs, k, fn, what, p.freq_factors));
    info.freq_factors_tensor = freqs->name;
  }
  // llama.cpp reads an absent factor as 1 (freq_scale 1): linear is then no scaling, YaRN a factor of 1
  // (Hugging Face would derive context_length / M instead; the file is llama.cpp's).
  if (p.scaling_type == "linear" && !p.factor) p.scaling_type = "none";
  if (p.scaling_type == "yarn" && !p.factor) p.factor = 1.0;
  if (p.scaling_type == "yarn") {
    p.beta_fast = beta_fast;
    p.beta_slow = beta_slow;
    p.ext_factor = ext;
    // The converter writes HF's attention_factor here (convert_hf_to_gguf.py). llama.cpp itself has read it
    // in two ways (times 0.1 ln F + 1 before llama.cpp PR 17945, ignored for YaRN after it): posenc keeps HF's.
    p.attention_factor = yarn_attn;
    p.attn_factor = attn;
    if (log_mul && *log_mul != 0.0) {
      // DeepSeek-V2/V3: the converter writes 0.1 * mscale_all_dim; llama.cpp (llama-context.cpp) takes
      // mscale = mscale_all_dim for DeepSeek-V2 configs and 1 otherwise, which for every DeepSeek config gives
      // a magnitude of 1 and the softmax scale mscale(F, mscale_all_dim)^2: deepseek_yarn with both equal.
      if (*arch != "deepseek2")
        return fail(fn, what, ": ", n.mscale_all_dim, "=", *log_mul,
                    " is only understood for deepseek2 (its scale differs between converters of other architectures)");
      p.yarn_variant = rope_yarn_variant::deepseek;
      // In float32, as llama.cpp's hparams hold it: 0.1f / 0.1f is exactly 1.
      p.mscale_all_dim = static_cast<double>(static_cast<float>(*log_mul) / 0.1f);
      p.mscale = p.mscale_all_dim;
    }
  } else if (p.scaling_type != "longrope") {
    p.attn_factor = attn;
    p.ext_factor = ext;
  }

  // MRoPE sections: llama.cpp pads [t, h, w] to 4 entries with zeros.
  POSENC_TRY(k.integers(a + "rope.dimension_sections", info.mrope_sections));
  if (!info.mrope_sections.empty()) {
    std::vector<index_t> s = info.mrope_sections;
    while (s.size() > 3 && s.back() == 0) s.pop_back();
    p.mrope_section = std::move(s);
  }

  std::string canonical;
  const status st = rope_params_to_config(p, n, info.config, &canonical);
  // A value the mapping rejects is the file's fault here: report it as such, with the mapping's message.
  if (!st.ok()) return status(st.code() == errc::invalid_argument ? errc::invalid_file : st.code(), st.message());
  info.scaling_type = canonical;
  out = std::move(info);
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

inline constexpr const char* metadata_fn = "read_gguf_metadata";
inline constexpr const char* rope_fn = "read_gguf_rope";

}  // namespace detail::gguf

/// Parses the header, metadata and tensor directory of a GGUF image in memory (versions 2 and 3,
/// little-endian; format: ggml docs/gguf.md), into `out`. `name` stands for the buffer in messages. Reads no
/// tensor data; checks that every tensor of a known ggml type lies inside the buffer.
/// Returns ok, or (out unchanged) invalid_file naming what is wrong (see the header comment for the list),
/// out_of_memory if an allocation fails.
inline status try_parse_gguf_metadata(const void* data, std::size_t size, gguf_metadata& out,
                                      const std::string& name = "buffer") noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(metadata_fn, [&] {
    memory_source src{static_cast<const unsigned char*>(data), size};
    return parse_metadata(src, metadata_fn, name, out);
  });
}

/// try_parse_gguf_metadata of the file at `path`, read piece by piece (never whole). io_error when the file
/// cannot be opened or read.
///
/// **Example**
/// ```
/// posenc::gguf_metadata meta;
/// if (posenc::status s = posenc::try_read_gguf_metadata("model.gguf", meta); !s) return s;
/// if (const posenc::gguf_value* v = meta.find("general.architecture")) std::puts(v->string.c_str());
/// ```
inline status try_read_gguf_metadata(const std::string& path, gguf_metadata& out) noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(metadata_fn, [&]() -> status {
    const std::string what = path_what(path);
    file_source src;
    POSENC_TRY(open_file(path, metadata_fn, what, src));
    return parse_metadata(src, metadata_fn, what, out);
  });
}

/// The throwing form of try_read_gguf_metadata: argument_error with the same message.
inline gguf_metadata read_gguf_metadata(const std::string& path) {
  gguf_metadata m;
  detail::throw_if_error(try_read_gguf_metadata(path, m));
  return m;
}

/// The RoPE configuration of a GGUF model image in memory; see try_read_gguf_rope.
inline status try_parse_gguf_rope(const void* data, std::size_t size, gguf_rope_info& out, const gguf_options& options = {},
                                  const std::string& name = "buffer") noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(rope_fn, [&]() -> status {
    memory_source src{static_cast<const unsigned char*>(data), size};
    gguf_metadata m;
    POSENC_TRY(parse_metadata(src, rope_fn, name, m));
    return rope_from_metadata(m, src, options, rope_fn, name, out);
  });
}

/// Reads the RoPE configuration of the GGUF model at `path`, into `out`: the metadata (try_read_gguf_metadata)
/// mapped as llama.cpp's llama_model::load_hparams and llama_context read it, through the rope_params mapping
/// shared with hf_config.hpp (try_rope_config_from_params documents its rules). `<arch>` = general.architecture.
/// - Geometry: see gguf_rope_info::config. Pair style: gguf_options::style, else llama.cpp's
///   llama_model_rope_type of the architecture (NORM -> interleaved: Llama family, whose q/k weights the
///   converter permutes; NEOX and MROPE -> half_split: Qwen2, GPT-NeoX, Phi-3, Falcon, Gemma, ...).
/// - `<arch>.rope.scaling.type`: absent means "linear" when `rope.scaling.factor` (or the old
///   `rope.scale_linear`) is given and not 0, else none. "linear": w_i / factor (none without a factor, as
///   llama.cpp reads it). "yarn": factor (1 when absent, as llama.cpp),
///   original_context_length (default context_length), yarn_beta_fast/slow (default 32/1), yarn_ext_factor
///   (must be 1), yarn_attn_factor (HF attention_factor), rope.scaling.attn_factor (multiplies the magnitude);
///   for deepseek2 yarn_log_multiplier = 0.1 * mscale_all_dim gives rope_scaling::deepseek_yarn.
///   "longrope" (or no type with the tensors present): Phi-3's `rope_factors_short.weight` and
///   `rope_factors_long.weight` (F32, [R/2]), M = original_context_length, magnitude rope.scaling.attn_factor.
/// - `rope_freqs.weight` (F32, [R/2]; Llama 3's converter bakes its wavelength bands into it): freq_factors,
///   w_i / f_i, as ggml_rope_ext divides by them.
/// - `<arch>.rope.dimension_sections` (MRoPE): reported in gguf_rope_info::mrope_sections, checked against R/2.
/// Returns ok, or (out unchanged): io_error (cannot open or read); invalid_file naming the file and the key or
/// tensor (everything try_read_gguf_metadata rejects; general.architecture missing; a known key of the wrong
/// type; missing head dims; factor tensors of a type other than F32 or a shape other than [R/2]; values the
/// mapping rejects, such as base <= 1, a yarn_ext_factor other than 1 or an attn_factor without YaRN or
/// LongRoPE); invalid_argument for an architecture without RoPE or not in the table (set gguf_options::style)
/// and for a yarn_log_multiplier outside deepseek2 (converters of other architectures disagree on its scale).
///
/// **Example**
/// ```
/// posenc::gguf_rope_info info;
/// if (posenc::status s = posenc::try_read_gguf_rope("Llama-3.1-8B-Q4_K_M.gguf", info); !s) return s;
/// const posenc::rope_plan plan = posenc::make_rope_plan(info.config, seq_len);   // interleaved, rope_freqs
/// ```
inline status try_read_gguf_rope(const std::string& path, gguf_rope_info& out, const gguf_options& options = {}) noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(rope_fn, [&]() -> status {
    const std::string what = path_what(path);
    file_source src;
    POSENC_TRY(open_file(path, rope_fn, what, src));
    gguf_metadata m;
    POSENC_TRY(parse_metadata(src, rope_fn, what, m));
    return rope_from_metadata(m, src, options, rope_fn, what, out);
  });
}

/// The throwing form of try_read_gguf_rope: argument_error with the same message.
///
/// **Example**
/// ```
/// const posenc::gguf_rope_info info = posenc::read_gguf_rope("qwen2.5-7b-instruct-q4_k_m.gguf");
/// const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
/// ```
inline gguf_rope_info read_gguf_rope(const std::string& path, const gguf_options& options = {}) {
  gguf_rope_info info;
  detail::throw_if_error(try_read_gguf_rope(path, info, options));
  return info;
}

POSENC_END_NAMESPACE
