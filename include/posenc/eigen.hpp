// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The Eigen adapter: Eigen::Tensor and Eigen::TensorMap (row- or column-major, any rank) are accepted wherever
// a posenc::strided_view is, and Eigen::half / Eigen::bfloat16 are storage types (IEEE binary16 and bfloat16
// bits; the kernels never call their operators). The core headers need no Eigen; posenc/posenc.hpp includes
// this one, so code written against Eigen tensors keeps compiling.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include "posenc/config.hpp"
#include "posenc/storage.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

/// Eigen::half is a storage type: its 2 bytes are IEEE binary16 bits.
template <>
struct storage_traits<Eigen::half> {
  /// f16: widened to float exactly on load, rounded to nearest even once on store (never Eigen's operators).
  static constexpr storage_format format = storage_format::f16;
};
/// Eigen::bfloat16 is a storage type: its 2 bytes are the high half of an IEEE binary32.
template <>
struct storage_traits<Eigen::bfloat16> {
  /// bf16: widened to float exactly on load, rounded to nearest even once on store (never Eigen's operators).
  static constexpr storage_format format = storage_format::bf16;
};

namespace detail {

template <class T>
struct eigen_tensor_traits : std::false_type {};
template <class Scalar, int Rank, int Options, class Index>
struct eigen_tensor_traits<Eigen::Tensor<Scalar, Rank, Options, Index>> : std::true_type {
  static constexpr int rank = Rank;
  static constexpr bool row_major = (Options & Eigen::RowMajor) != 0;
};
template <class Plain, int MapOptions, template <class> class MakePointer>
struct eigen_tensor_traits<Eigen::TensorMap<Plain, MapOptions, MakePointer>>
    : eigen_tensor_traits<std::remove_const_t<Plain>> {};

template <class T>
inline constexpr bool is_eigen_tensor_v = eigen_tensor_traits<std::remove_cv_t<std::remove_reference_t<T>>>::value;

}  // namespace detail

/// Eigen::Tensor / Eigen::TensorMap as a strided view: same memory, same index order (strides from the storage
/// order). A const Tensor, or a TensorMap of a const Tensor, gives a view of const elements.
template <class Tensor>
struct view_adapter<Tensor, std::enable_if_t<detail::is_eigen_tensor_v<Tensor>>> {
  static constexpr bool enabled = true;
  template <class X>
  static auto view(X& t) {
    using traits = detail::eigen_tensor_traits<Tensor>;
    using elem = std::remove_pointer_t<decltype(t.data())>;
    constexpr std::size_t rank = static_cast<std::size_t>(traits::rank);
    std::array<index_t, rank> ext{};
    std::array<index_t, rank> str{};
    index_t s = 1;
    for (std::size_t k = 0; k < rank; ++k) {
      const std::size_t d = traits::row_major ? rank - 1 - k : k;
      ext[d] = static_cast<index_t>(t.dimension(static_cast<Eigen::Index>(d)));
      str[d] = s;
      s *= ext[d];
    }
    return strided_view<elem, rank>(t.data(), ext, str);
  }
};

POSENC_END_NAMESPACE
