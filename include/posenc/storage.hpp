// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Element types the kernels load and store, as a customisation point: an engine passes its own 16-bit types
// (ggml's uint16_t fp16 and struct bf16, _Float16, std::bfloat16_t, a CUDA-side __half mirror) by declaring
// their format, without reinterpreting them as anybody else's type. posenc/eigen.hpp declares Eigen::half and
// Eigen::bfloat16 this way.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/math/half.hpp"

POSENC_BEGIN_NAMESPACE

/// The bit layout of a storage type.
enum class storage_format {
  none,  ///< not a storage type
  f32,   ///< IEEE binary32 (float)
  f64,   ///< IEEE binary64 (double)
  f16,   ///< IEEE binary16, 2 bytes
  bf16,  ///< bfloat16 (the high half of a binary32), 2 bytes
};
/// The spellings of storage_format (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<storage_format> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<storage_format> list[] = {{storage_format::none, "none"}, {storage_format::f32, "f32"},
                                                        {storage_format::f64, "f64"}, {storage_format::f16, "f16"},
                                                        {storage_format::bf16, "bf16"}};
};

/// Specialise for an engine's own element type; an f16/bf16 type must be 2 bytes holding the format's bits
/// (they are read and written with memcpy or vector loads, never through the type's operators).
///
/// **Example**
/// ```
/// typedef struct { uint16_t bits; } ggml_bf16_t;       // the engine's type
/// template <> struct posenc::storage_traits<ggml_bf16_t> {
///   static constexpr posenc::storage_format format = posenc::storage_format::bf16;
/// };
/// ```
template <class T, class = void>
struct storage_traits {
  /// none: T is not a storage type until a specialisation declares its format.
  static constexpr storage_format format = storage_format::none;
};
/// float is a storage type: IEEE binary32.
template <>
struct storage_traits<float> {
  /// f32: 4 bytes, loaded and stored without conversion.
  static constexpr storage_format format = storage_format::f32;
};
/// double is a storage type: IEEE binary64.
template <>
struct storage_traits<double> {
  /// f64: 8 bytes, loaded and stored without conversion; a double tensor is computed in double.
  static constexpr storage_format format = storage_format::f64;
};
// _Float16 in C++: Clang, GCC 13+, and GCC 12 on x86 (GCC 12 defines __FLT16_MAX__ on AArch64 for C only).
#if defined(__FLT16_MAX__) && !defined(__CUDACC__) && \
    (defined(__clang__) || (defined(__GNUC__) && (__GNUC__ >= 13 || defined(__x86_64__) || defined(__i386__))))
#define POSENC_HAS_FLOAT16 1
#else
#define POSENC_HAS_FLOAT16 0
#endif
#if POSENC_HAS_FLOAT16
template <>
struct storage_traits<_Float16> {
  static constexpr storage_format format = storage_format::f16;
};
#endif
#if defined(__STDCPP_BFLOAT16_T__) && defined(__cpp_lib_stdfloat)
template <>
struct storage_traits<decltype(0.0bf16)> {
  static constexpr storage_format format = storage_format::bf16;
};
#endif

namespace detail {

/// posenc's own 16-bit storage types, to which every f16 / bf16 type is mapped before the kernels (one
/// instantiation per format, detail/kernels/entries.hpp). Bytes, so that their copies may alias whatever type
/// the caller's memory holds; the kernels only copy them or load them with vector instructions.
struct f16_storage {
  unsigned char b[2];
};
struct bf16_storage {
  unsigned char b[2];
};

}  // namespace detail
template <>
struct storage_traits<detail::f16_storage> {
  static constexpr storage_format format = storage_format::f16;
};
template <>
struct storage_traits<detail::bf16_storage> {
  static constexpr storage_format format = storage_format::bf16;
};

namespace detail {

template <class T>
inline constexpr storage_format format_of_v = storage_traits<std::remove_cv_t<T>>::format;

template <class T>
inline constexpr bool is_f16_v = format_of_v<T> == storage_format::f16;
template <class T>
inline constexpr bool is_bf16_v = format_of_v<T> == storage_format::bf16;

/// Whether T is one of the storage types: float, double, or a declared 16-bit type.
template <class T>
inline constexpr bool is_storage_v = format_of_v<T> != storage_format::none;

/// The 16 bits of a 16-bit storage value, and back (through void*: Eigen::half is not trivially copyable in
/// every Eigen version, but its object representation is its bits).
template <class T>
POSENC_HOST_DEVICE inline std::uint16_t bits16(const T& v) {
  static_assert(sizeof(T) == 2, "posenc::storage_traits: 16-bit storage types are 2 bytes");
  std::uint16_t u = 0;
  std::memcpy(&u, static_cast<const void*>(&v), sizeof u);
  return u;
}
template <class T>
POSENC_HOST_DEVICE inline T from_bits16(std::uint16_t u) {
  static_assert(sizeof(T) == 2, "posenc::storage_traits: 16-bit storage types are 2 bytes");
  T v{};
  std::memcpy(static_cast<void*>(&v), &u, sizeof v);
  return v;
}

}  // namespace detail

POSENC_END_NAMESPACE
