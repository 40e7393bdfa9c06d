// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The GGUF types of posenc's public API: a file's metadata as read (gguf_metadata: every key/value and the
// tensor directory) and the RoPE mapping's options and result (gguf_options, gguf_rope_info). They live apart
// from gguf.hpp, whose functions fill them, because the reader and the key mapping in detail/gguf/ need them
// too. Needs neither Eigen nor nlohmann/json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/rope_plan.hpp"

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
      std::int64_t v = 0;
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
    float f = 0;
    std::memcpy(&f, &b, sizeof f);
    return static_cast<double>(f);
  }
  if (t == gguf_type::float64) {
    double d = 0;
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
  gguf_type type = gguf_type::uint8;          ///< the value's type; array for an array (see element_type)
  gguf_type element_type = gguf_type::uint8;  ///< arrays: the elements' type (never array)
  std::uint64_t bits = 0;                     ///< scalars: the value's bits, zero-extended (floats: IEEE bits)
  std::string string;                         ///< type string
  std::uint64_t count = 0;                    ///< arrays: number of elements
  std::vector<unsigned char> bytes;           ///< numeric/bool arrays: count * element size bytes, little-endian
  std::vector<std::string> strings;           ///< string arrays

  /// type is array: `count` elements of element_type, in bytes or strings.
  bool is_array() const noexcept { return type == gguf_type::array; }
  /// An integer scalar (any width or sign).
  bool is_integer() const noexcept { return detail::gguf::is_integer_type(type); }
  /// An integer or floating-point scalar.
  bool is_number() const noexcept { return is_integer() || type == gguf_type::float32 || type == gguf_type::float64; }
  /// Integer scalars as int64 (nullopt for other types and for uint64 values past INT64_MAX).
  std::optional<std::int64_t> to_int() const noexcept { return detail::gguf::bits_to_int(type, bits); }
  /// Number scalars as double.
  std::optional<double> to_double() const noexcept { return detail::gguf::bits_to_double(type, bits); }
  /// Element i of an integer array as int64 (nullopt out of range, of another type, or a uint64 past INT64_MAX).
  std::optional<std::int64_t> int_at(std::uint64_t i) const noexcept {
    const std::size_t sz = detail::gguf::scalar_size(element_type);
    if (!is_array() || sz == 0 || i >= count) return std::nullopt;
    return detail::gguf::bits_to_int(element_type, detail::gguf::load_le(bytes.data() + i * sz, sz));
  }
  /// Element i of an integer or float array as double (nullopt out of range or of another type).
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

/// One metadata entry: a key and its value.
struct gguf_kv {
  std::string key;                 ///< e.g. `general.architecture`; unique in a file
  gguf_value value;                ///< as read, raw bits and bytes
};

/// One entry of the tensor directory.
struct gguf_tensor_info {
  std::string name;                ///< e.g. `blk.0.attn_q.weight`; unique in a file
  std::vector<std::int64_t> dims;  ///< ggml ne: the fastest-varying extent first (NumPy's shape reversed)
  std::uint32_t type = 0;          ///< ggml_type (0 F32, 1 F16, 8 Q8_0, 30 BF16, ...; see ggml_type_name)
  std::uint64_t offset = 0;        ///< from the start of the data section (a multiple of the alignment)
  std::uint64_t file_offset = 0;   ///< from the start of the file
  std::uint64_t nbytes = 0;        ///< size of the data; 0 when posenc does not know the type's block size

  /// The product of dims: the tensor's element count (1 for no dims).
  std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;  // cannot overflow: checked when read
    return n;
  }
};

/// Everything before the tensor data.
struct gguf_metadata {
  std::uint32_t version = 0;             ///< GGUF version: 2 or 3
  std::vector<gguf_kv> kv;               ///< in file order; keys are unique
  std::vector<gguf_tensor_info> tensors; ///< in file order; names are unique
  std::uint64_t alignment = 32;          ///< `general.alignment`, else 32
  std::uint64_t data_offset = 0;         ///< where the data section starts in the file
  std::uint64_t file_size = 0;           ///< bytes in the file or buffer parsed

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
POSENC_END_NAMESPACE
