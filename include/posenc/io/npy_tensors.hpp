// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// An optional utility on top of posenc/io/npy.hpp (see there: not in the umbrella header, what it guarantees):
// .npy files to and from row-major Eigen tensors (npy_to_tensor, read_npy_tensor, write_npy of a tensor), and
// the tables of the learned modules (learned_position_embedding, t5_relative_bias) loaded from and saved to
// .npy files (load_npy_table, save_npy_table), e.g. GPT-2's `wpe.weight` or T5's `relative_attention_bias`.
// Values are converted once, with range checks (an int64 that does not fit int32 is rejected; a double past
// float's range becomes +-inf, as numpy's astype); a file of the wrong rank, shape or dtype kind is
// invalid_file. Writes go through write_npy's temporary file and single rename.
//
// Every function that can fail has a noexcept try_ form returning a posenc::status (io_error, invalid_file,
// invalid_argument, out_of_memory); the throwing form throws posenc::argument_error with the same message.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/math/half.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/eigen.hpp"
#include "posenc/io/detail/npy_header.hpp"
#include "posenc/io/npy.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail {

/// A status of a path-taking function whose file is a valid .npy but not what was asked for (rank, dtype kind,
/// shape, range): invalid_file, as a wrong type in any other file; other codes as they are.
inline status npy_file_status(status s) {
  if (s.code() != errc::invalid_argument) return s;
  return status(errc::invalid_file, s.message());
}

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

// Every function below that can fail has a try_ form: noexcept, returning a posenc::status with the message the
// throwing form's argument_error carries (posenc/status.hpp); its out-parameter (the last) is unchanged when it
// is not ok. Codes: io_error when a file cannot be opened, read, written or renamed; invalid_file for content
// that is not a supported .npy or not what was asked for; invalid_argument for bad arguments; out_of_memory
// when an allocation fails (std::bad_alloc from the throwing form).

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
/// posenc::sinusoidal_table({512}, pe);
/// if (posenc::status s = posenc::try_write_npy("pe.npy", pe); !s) return s;
/// ```
template <class S, int R, class Index>
status try_write_npy(const std::string& path, const Eigen::Tensor<S, R, Eigen::RowMajor, Index>& t,
                     int version = 0) noexcept {
  static_assert(detail::npy_dtype_of<S>() != nullptr, "posenc::write_npy: float, double, Eigen::half, int32 or int64 tensors");
  return detail::guard_alloc("write_npy", [&]() -> status {
    std::vector<index_t> shape(static_cast<std::size_t>(R));
    for (int d = 0; d < R; ++d) shape[static_cast<std::size_t>(d)] = static_cast<index_t>(t.dimension(d));
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
