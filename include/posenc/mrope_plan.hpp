// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Multimodal RoPE's plan (the axis of every pair) and positions (three per token), and the check of those
// positions, apart from the kernels, so posenc/mrope.hpp (CPU) and posenc/cuda/mrope.cuh (GPU) share them. The
// encoding is documented in posenc/mrope.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// How pairs map to the axes (t, h, w) given sections (T, H, W) with T + H + W = R/2.
enum class mrope_layout {
  chunked,      ///< Qwen2-VL: pair i takes t for i < T, h for T <= i < T+H, w after
  interleaved,  ///< Qwen3-VL: h if i % 3 == 1 and i < 3H, w if i % 3 == 2 and i < 3W, else t
};
/// The spellings of mrope_layout (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<mrope_layout> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<mrope_layout> list[] = {{mrope_layout::chunked, "chunked"},
                                                      {mrope_layout::interleaved, "interleaved"}};
};

/// A frequency plan plus the axis of every pair.
class mrope_plan {
 public:
  /// An empty plan (rejected by the apply functions), to be filled by try_create.
  mrope_plan() = default;

  /// Throws argument_error unless the plan is non-empty, the sections are >= 0 and sum to plan.pairs().
  mrope_plan(rope_plan plan, std::array<index_t, 3> sections, mrope_layout layout) {
    detail::throw_if_error(try_create(std::move(plan), sections, layout, *this));
  }

  /// The constructor without exceptions: `out` is replaced on success, untouched on error (an out_of_memory
  /// status when the axis table cannot be allocated).
  static status try_create(rope_plan plan, std::array<index_t, 3> sections, mrope_layout layout, mrope_plan& out) noexcept {
    constexpr const char* fn = "mrope_plan";
    POSENC_TRY(detail::check_source(fn, plan));
    for (std::size_t a = 0; a < 3; ++a)
      if (sections[a] < 0) return detail::fail(fn, "sections[", a, "]=", sections[a], " must be >= 0");
    const index_t p = plan.pairs();  // the sum is compared without forming it (no overflow on huge sections)
    if (sections[0] > p || sections[1] > p - sections[0] || sections[2] != p - sections[0] - sections[1])
      return detail::fail(fn, "sections ", sections[0], "+", sections[1], "+", sections[2], " must sum to rotary_dim/2=",
                          plan.pairs());
    return detail::guard_alloc(fn, [&]() -> status {
      std::vector<std::uint8_t> axis(static_cast<std::size_t>(plan.pairs()));
      const index_t t = sections[0], h = sections[1];
      for (index_t i = 0; i < plan.pairs(); ++i) {
        std::uint8_t a = 0;
        if (layout == mrope_layout::chunked) a = i < t ? 0 : (i < t + h ? 1 : 2);
        else if (i % 3 == 1 && i < 3 * sections[1]) a = 1;
        else if (i % 3 == 2 && i < 3 * sections[2]) a = 2;
        axis[static_cast<std::size_t>(i)] = a;
      }
      // Nothing below allocates or throws: `out` changes only once the whole plan exists.
      out.plan_ = std::move(plan);
      out.sections_ = sections;
      out.layout_ = layout;
      out.axis_ = std::move(axis);
      return {};
    });
  }

  /// The frequency plan: geometry, frequencies, magnitude.
  const rope_plan& plan() const { return plan_; }
  /// (T, H, W): the pairs of each axis, summing to plan().pairs().
  const std::array<index_t, 3>& sections() const { return sections_; }
  /// How the sections assign pairs to axes.
  mrope_layout layout() const { return layout_; }
  /// Axis (0 = t, 1 = h, 2 = w) of each pair.
  const std::vector<std::uint8_t>& axis() const { return axis_; }

 private:
  rope_plan plan_;
  std::array<index_t, 3> sections_{};
  mrope_layout layout_ = mrope_layout::chunked;
  std::vector<std::uint8_t> axis_;
};

/// Frequencies that restart in every section: pair j of a section of `size` pairs gets base^(-j/size), i.e.
/// each section is an independent RoPE of rotary dim 2*size (Qwen2-VL VisionRotaryEmbedding(head_dim/2):
/// sections {0, D/4, D/4} with the chunked layout give its 2D (h, w) RoPE), into `out`. Fails with
/// invalid_argument, leaving `out` unchanged, on a bad head_dim/base or sections that do not fit the head
/// (make_sectioned_rope_plan throws argument_error); out_of_memory if the frequencies cannot be allocated.
inline status try_make_sectioned_rope_plan(index_t head_dim, double base, std::array<index_t, 3> sections,
                                           rope_style style, rope_plan& out) noexcept {
  constexpr const char* fn = "make_sectioned_rope_plan";
  POSENC_TRY(detail::check_base(fn, base));
  // The sum saturates at INT64_MAX/2 (reported as such): huge sections fail the head_dim check without overflow.
  constexpr index_t cap = std::numeric_limits<index_t>::max() / 2;
  index_t pairs = 0;
  for (std::size_t a = 0; a < 3; ++a) {
    if (sections[a] < 0) return detail::fail(fn, "sections[", a, "]=", sections[a], " must be >= 0");
    pairs = sections[a] > cap - pairs ? cap : pairs + sections[a];
  }
  if (pairs == 0 || pairs > head_dim / 2)  // 2*pairs > head_dim
    return detail::fail(fn, "2*sum(sections)=", 2 * pairs, " must be in [2, head_dim=", head_dim, "]");
  if (static_cast<std::size_t>(pairs) > std::vector<double>().max_size())
    return detail::fail(fn, "sum(sections)=", pairs, " frequencies exceed the largest vector");
  return detail::guard_alloc(fn, [&]() -> status {
    std::vector<double> w;
    w.reserve(static_cast<std::size_t>(pairs));
    for (index_t size : sections)
      for (index_t j = 0; j < size; ++j) w.push_back(detail::math::inv_freq(base, j, 2 * size));
    return rope_plan::try_create(head_dim, std::move(w), style, 0, 1.0, 1.0, out);
  });
}
/// try_make_sectioned_rope_plan with half-split pairs.
inline status try_make_sectioned_rope_plan(index_t head_dim, double base, std::array<index_t, 3> sections,
                                           rope_plan& out) noexcept {
  return try_make_sectioned_rope_plan(head_dim, base, sections, rope_style::half_split, out);
}

/// The plan of try_make_sectioned_rope_plan; throws argument_error where that fails.
inline rope_plan make_sectioned_rope_plan(index_t head_dim, double base, std::array<index_t, 3> sections,
                                          rope_style style = rope_style::half_split) {
  rope_plan p;
  detail::throw_if_error(try_make_sectioned_rope_plan(head_dim, base, sections, style, p));
  return p;
}

namespace detail {

/// Checks MRoPE positions against an (N, L) tensor. With `values_readable` false (ids in device memory) only
/// the shape and pointer are checked; the values are never read here.
inline status validate_mrope_positions(const char* fn, const mrope_positions& p, index_t n, index_t l,
                                       bool values_readable = true) {
  if (n == 0 || l == 0) return {};
  if (p.data() == nullptr) return fail(fn, "mrope positions are null");
  if (p.length() != l) return fail(fn, "mrope positions length=", p.length(), " does not match L=", l);
  if (p.batch() >= 0 && p.batch() != n) return fail(fn, "mrope positions batch=", p.batch(), " does not match N=", n);
  if (!values_readable) return {};
  const index_t rows = p.batch() >= 0 ? n : 1;
  for (index_t b = 0; b < rows; ++b)
    for (index_t i = 0; i < l; ++i) {
      const auto v = p.at(b, i);
      for (std::size_t a = 0; a < 3; ++a)
        if (v[a] < 0) return fail(fn, "mrope position[", b, ", ", a, ", ", i, "]=", v[a], " must be >= 0");
    }
  return {};
}

}  // namespace detail
POSENC_END_NAMESPACE
