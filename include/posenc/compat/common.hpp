// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// What the Python-API counterparts share (posenc/compat/zeta.hpp and its two module headers,
// posenc/compat/tiny_llm.hpp): the row-major tensor type and the helpers in posenc::compat::detail.
// Like the rest of compat/, not part of the umbrella header posenc/posenc.hpp; include posenc/compat/<api>.hpp.
//
// Inside posenc::compat, `detail::` names posenc::compat::detail; the library's own internals are spelled
// `posenc::detail::` there.
#pragma once

#include "posenc/config.hpp"
#include "posenc/eigen.hpp"

POSENC_BEGIN_NAMESPACE

namespace compat {

namespace detail {

/// Row-major like torch and MLX, so element (i, j, ...) sits where the Python has it.
template <class T, int Rank>
using row_major_tensor = Eigen::Tensor<T, Rank, Eigen::RowMajor>;

/// What a default-constructed compat object says when used before a try_create filled it.
inline constexpr const char* empty_message = "the object is empty (default-constructed, not filled by try_create)";

}  // namespace detail

namespace zeta {

/// Row-major Eigen tensor: the layout of a contiguous torch tensor. Declared here, not in a zeta header,
/// because both zeta module headers use it and an alias template cannot be declared twice.
template <class T, int Rank>
using tensor = detail::row_major_tensor<T, Rank>;

}  // namespace zeta

}  // namespace compat

POSENC_END_NAMESPACE
