// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// strided_view: a non-owning pointer + extents + strides over caller memory (the subset of std::mdspan with
// layout_stride that kernels need), and view_adapter, the customisation point through which other tensor types
// (Eigen::Tensor / TensorMap in posenc/eigen.hpp, an engine's own) are accepted wherever a view is.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// A view of `Rank` dimensions over memory the caller owns. Strides are in elements, not bytes, and may be
/// anything >= 0, so q and k inside one fused QKV buffer, a KV-cache slice or a column-major Eigen tensor are
/// all expressible without a copy.
///
/// **Example**
/// ```
/// // q and k of a fused [N, L, (Hq + 2*Hk) * D] buffer, in place:
/// const index_t row = (Hq + 2 * Hk) * D;
/// posenc::strided_view<float, 4> q(qkv, {N, L, Hq, D}, {L * row, row, D, 1});
/// posenc::strided_view<float, 4> k(qkv + Hq * D, {N, L, Hk, D}, {L * row, row, D, 1});
/// ```
template <class T, std::size_t Rank>
class strided_view {
 public:
  /// T; const T for a read-only view.
  using element_type = T;
  /// index_t (signed 64-bit): extents, strides and indices.
  using index_type = index_t;
  /// One index_t per dimension: the type of extents() and strides().
  using extents_type = std::array<index_t, Rank>;
  /// Rank, the number of dimensions.
  static constexpr std::size_t rank = Rank;

  strided_view() = default;

  /// Contiguous row-major (the last dimension is the fastest).
  strided_view(T* data, const extents_type& extents) : data_(data), extents_(extents) {
    index_t s = 1;
    for (std::size_t d = Rank; d-- > 0;) {
      strides_[d] = s;
      s *= extents[d];
    }
  }

  /// Explicit strides, in elements, not bytes: element (i_0, ..., i_{Rank-1}) is data[sum of i_d * strides[d]].
  /// Nothing is checked here; the public entries reject negative extents and strides.
  strided_view(T* data, const extents_type& extents, const extents_type& strides)
      : data_(data), extents_(extents), strides_(strides) {}

  /// Views of T convert to views of const T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  strided_view(const strided_view<U, Rank>& other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), extents_(other.extents()), strides_(other.strides()) {}

  /// The element at index (0, ..., 0).
  T* data() const { return data_; }
  /// The extent of every dimension.
  const extents_type& extents() const { return extents_; }
  /// The stride of every dimension, in elements.
  const extents_type& strides() const { return strides_; }
  /// The extent of dimension d (d < Rank, unchecked).
  index_t extent(std::size_t d) const { return extents_[d]; }
  /// The stride of dimension d, in elements (d < Rank, unchecked).
  index_t stride(std::size_t d) const { return strides_[d]; }

  /// Number of elements.
  index_t size() const {
    index_t n = 1;
    for (index_t e : extents_) n *= e;
    return n;
  }
  /// True when some extent is 0 (without forming the size, which may overflow for a view not yet checked).
  bool empty() const { return any_zero(std::make_index_sequence<Rank>{}); }

  /// Elements from data() to one past the last addressed element (std::mdspan's required_span_size).
  index_t required_span_size() const {
    if (empty()) return 0;
    return 1 + reach(std::make_index_sequence<Rank>{});
  }

  /// The elements [begin, begin + count) along dimension `dim`, same strides, no copy: a thread's share of a
  /// call (tokens along L, heads along H). Throws argument_error unless 0 <= begin <= begin + count <=
  /// extent(dim).
  ///
  /// **Example**
  /// ```
  /// auto mine = q.slice(1, l0, l1 - l0);   // tokens [l0, l1) of an (N, L, H, D) view
  /// ```
  strided_view slice(std::size_t dim, index_t begin, index_t count) const {
    strided_view v;
    detail::throw_if_error(try_slice(dim, begin, count, v));
    return v;
  }

  /// slice without exceptions: `out` is set on success, untouched on error.
  status try_slice(std::size_t dim, index_t begin, index_t count, strided_view& out) const noexcept {
    if (dim >= Rank) return detail::fail("strided_view::slice", "dim=", dim, " is not below rank ", Rank);
    if (begin < 0 || count < 0 || begin > extents_[dim] - count)
      return detail::fail("strided_view::slice", "range [", begin, ", ", begin, " + ", count, ") is outside extent(", dim,
                          ")=", extents_[dim]);
    out = *this;
    if (count > 0) out.data_ = data_ + begin * strides_[dim];
    out.extents_[dim] = count;
    return {};
  }

  /// The element at (i_0, ..., i_{Rank-1}): data()[sum of i_d * stride(d)]. Exactly Rank indices; no bounds check.
  template <class... I>
  T& operator()(I... i) const {
    static_assert(sizeof...(I) == Rank, "posenc::strided_view: wrong number of indices");
    return data_[offset(std::make_index_sequence<Rank>{}, static_cast<index_t>(i)...)];
  }

 private:
  // A sum of scalar products: as a loop over an index array, GCC vectorises it into 64-bit vector multiplies
  // that AVX2 lacks (emulated, ~10% of a one-token RoPE call); the fold stays a few imuls.
  template <std::size_t... D, class... I>
  index_t offset(std::index_sequence<D...>, I... i) const {
    return ((i * strides_[D]) + ...);
  }
  template <std::size_t... D>
  bool any_zero(std::index_sequence<D...>) const {
    return ((extents_[D] == 0) || ...);
  }
  template <std::size_t... D>
  index_t reach(std::index_sequence<D...>) const {
    return (((extents_[D] - 1) * strides_[D]) + ...);
  }

  T* data_ = nullptr;
  extents_type extents_{};
  extents_type strides_{};
};

/// Layouts a tensor of rank 2..4 can have; kernels work on (N, L, H, D) and every other layout is a
/// permutation of strides (or a unit dimension), never a copy.
enum class layout {
  nlhd,  ///< (batch, sequence, heads, head dim): the default
  nhld,  ///< (batch, heads, sequence, head dim): PyTorch's transposed attention layout
  lhd,   ///< (sequence, heads, head dim)
  nld,   ///< (batch, sequence, dim): one head (torchscale's xPos input)
  ld,    ///< (sequence, dim)
};
/// The spellings of layout (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<layout> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<layout> list[] = {
      {layout::nlhd, "NLHD"}, {layout::nhld, "NHLD"}, {layout::lhd, "LHD"}, {layout::nld, "NLD"}, {layout::ld, "LD"}};
};

/// Specialise to accept another tensor type wherever a strided_view is: `static auto view(X& t)` returns the
/// strided_view of `t` (same memory, same index order; a const tensor gives a view of const elements).
/// posenc/eigen.hpp specialises it for Eigen::Tensor and Eigen::TensorMap.
template <class Tensor, class = void>
struct view_adapter {
  /// False: not a tensor type. A specialisation sets it true and provides `view`.
  static constexpr bool enabled = false;
};

namespace detail {
template <class X>
using adapter_of = view_adapter<std::remove_cv_t<std::remove_reference_t<X>>>;
template <class X>
inline constexpr bool has_view_adapter_v = adapter_of<X>::enabled;
}  // namespace detail

/// The strided view of a tensor type with a view_adapter (an Eigen tensor once posenc/eigen.hpp is included).
template <class Tensor, class = std::enable_if_t<detail::has_view_adapter_v<Tensor>>>
auto as_view(Tensor&& t) {
  return detail::adapter_of<Tensor>::view(t);
}

template <class T, std::size_t R>
strided_view<T, R> as_view(const strided_view<T, R>& v) {
  return v;
}

namespace detail {
/// as_nlhd's body: the view, or an empty one and ok = false when the layout does not fit the rank.
template <class X>
auto nlhd_of(X&& x, layout from, bool& ok) {
  auto v = as_view(x);
  using V = decltype(v);
  using T = typename V::element_type;
  constexpr std::size_t R = V::rank;
  static_assert(R >= 2 && R <= 4, "posenc::as_nlhd: tensors of rank 2, 3 or 4");
  const auto& e = v.extents();
  const auto& s = v.strides();
  using A = std::array<index_t, 4>;
  ok = true;
  if constexpr (R == 4) {
    if (from == layout::nlhd) return v;
    if (from == layout::nhld) return strided_view<T, 4>(v.data(), A{e[0], e[2], e[1], e[3]}, A{s[0], s[2], s[1], s[3]});
  } else if constexpr (R == 3) {
    if (from == layout::lhd) return strided_view<T, 4>(v.data(), A{1, e[0], e[1], e[2]}, A{0, s[0], s[1], s[2]});
    if (from == layout::nld) return strided_view<T, 4>(v.data(), A{e[0], e[1], 1, e[2]}, A{s[0], s[1], 0, s[2]});
  } else {
    if (from == layout::ld) return strided_view<T, 4>(v.data(), A{1, e[0], 1, e[1]}, A{0, s[0], 0, s[1]});
  }
  ok = false;
  return strided_view<T, 4>();
}
}  // namespace detail

/// The (N, L, H, D) view of a rank-2..4 view or Eigen tensor in the given layout; no copy. Rank 4 defaults
/// to NLHD and rank 2 to LD; rank 3 is ambiguous (LHD or NLD) and must be named. Throws argument_error when
/// the layout does not fit the rank (try_as_nlhd: a status instead).
template <class X>
auto as_nlhd(X&& x, layout from) {
  bool ok = false;
  auto v = detail::nlhd_of(std::forward<X>(x), from, ok);
  if (!ok)
    detail::throw_invalid_argument("as_nlhd", "layout=", to_string(from), " does not fit a tensor of rank ",
                                   std::remove_reference_t<decltype(as_view(x))>::rank);
  return v;
}

/// as_nlhd without exceptions: `out` is the (N, L, H, D) view on success, unchanged on an invalid_argument status
/// (a layout that does not fit the tensor's rank).
template <class X, class T>
status try_as_nlhd(X&& x, layout from, strided_view<T, 4>& out) noexcept {
  bool ok = false;
  auto v = detail::nlhd_of(std::forward<X>(x), from, ok);
  if (!ok)
    return detail::fail("as_nlhd", "layout=", to_string(from), " does not fit a tensor of rank ",
                        std::remove_reference_t<decltype(as_view(x))>::rank);
  out = v;
  return {};
}

namespace detail {
template <class X>
struct is_strided_view : std::false_type {};
template <class T, std::size_t R>
struct is_strided_view<strided_view<T, R>> : std::true_type {};

/// as_view(x) without a copy where x is a view already (a const reference to it; an adapted tensor's view by
/// value, which `const auto&` keeps alive). The entries read their views' fields straight from the caller's
/// object: a copy on the stack read back at another offset was a store-forwarding stall per view.
template <class X>
POSENC_ALWAYS_INLINE decltype(auto) view_ref(X&& x) {
  if constexpr (is_strided_view<std::remove_cv_t<std::remove_reference_t<X>>>::value) {
    return static_cast<const std::remove_reference_t<X>&>(x);
  } else {
    return as_view(x);
  }
}

/// as_nlhd(x) decided at compile time: a rank-4 view as it is (NLHD; view_ref), a rank-2 one as (1, L, 1, D).
/// The entries build their views through it, inline, without the runtime layout switch.
template <class X>
POSENC_ALWAYS_INLINE decltype(auto) nlhd_default(X&& x) {
  using V = std::remove_cv_t<std::remove_reference_t<decltype(as_view(x))>>;
  static_assert(V::rank != 3, "posenc::as_nlhd: a rank-3 tensor needs its layout (layout::lhd or layout::nld)");
  static_assert(V::rank == 2 || V::rank == 4, "posenc::as_nlhd: tensors of rank 2, 3 or 4");
  if constexpr (V::rank == 4) {
    return view_ref(std::forward<X>(x));
  } else {
    const auto v = as_view(x);
    using A = std::array<index_t, 4>;
    return strided_view<typename V::element_type, 4>(v.data(), A{1, v.extent(0), 1, v.extent(1)},
                                                     A{0, v.stride(0), 0, v.stride(1)});
  }
}
}  // namespace detail

template <class X>
auto as_nlhd(X&& x) {
  using V = decltype(as_view(x));
  return strided_view<typename V::element_type, 4>(detail::nlhd_default(std::forward<X>(x)));
}

POSENC_END_NAMESPACE
