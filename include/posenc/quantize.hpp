// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// RoPE fused with 8-bit quantisation: rotated q/k (and the KV-cache append, V included) written straight as
// int8 or fp8 codes, no float tensor in between. The rules, exactly (detail/math/quant.hpp; the golden
// reference tests/golden/gen_quant.py implements them independently):
//   int8 (symmetric): inv = 1.0f / scale, code = round-half-even(x * inv) saturated to [-128, 127], NaN -> 0;
//     the scale is per head (given) or per token and head (dynamic: absmax / 127.0f over the rotated head row,
//     written out; absmax 0 gives scale 0 and all codes 0), as vLLM's scaled_int8_quant.
//   fp8 E4M3 / E5M2 (OCP OFP8 2023): code = round-to-nearest-even of x * (1.0f / scale), saturating to +-max
//     (448 / 57344; infinities too, as CUDA's __NV_SATFINITE), NaN kept; the scale is given per head or per
//     tensor (vLLM's k_scale / v_scale).
// Each head row is rotated in float into a small stack buffer, then converted: no allocation.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/math/quant.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/kv_cache.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

/// The spellings of quant_format (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<quant_format> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<quant_format> list[] = {{quant_format::int8, "int8"},
                                                     {quant_format::fp8_e4m3, "fp8_e4m3"},
                                                     {quant_format::fp8_e5m2, "fp8_e5m2"}};
};

/// How values become codes: x ~= code * scale.
struct quant_spec {
  /// int8 (std::int8_t codes) or fp8_e4m3 / fp8_e5m2 (std::uint8_t codes).
  quant_format format = quant_format::int8;
  /// Per-head scales [H] at scales[h * scale_stride] (scale_stride 0: one scale for the tensor), finite and
  /// > 0. nullptr, int8 only: dynamic, one scale per token and head, written to the call's scales output.
  const float* scales = nullptr;
  /// Elements from head h's scale to head h+1's, >= 0; 0 gives every head scales[0] (one per tensor).
  index_t scale_stride = 1;
  /// True when scales is null: int8 with a scale per token and head, computed and written out.
  bool dynamic() const { return scales == nullptr; }
};

namespace detail {


template <class Code>
status check_quant(const char* fn, const char* name, const quant_spec& q, index_t heads, index_t head_dim) {
  constexpr bool is_i8 = std::is_same_v<Code, std::int8_t>;
  static_assert(is_i8 || std::is_same_v<Code, std::uint8_t>, "posenc: quantised codes are std::int8_t (int8) or std::uint8_t (fp8)");
  if ((q.format == quant_format::int8) != is_i8)
    return fail(fn, name, ": ", is_i8 ? "std::int8_t codes need quant_format::int8" : "std::uint8_t codes need an fp8 format");
  if (head_dim > quant_scratch) return fail(fn, name, " head dim ", head_dim, " exceeds ", quant_scratch);
  if (q.dynamic()) {
    if (q.format != quant_format::int8) return fail(fn, name, ": fp8 needs given scales (dynamic scales are int8 only)");
    return {};
  }
  if (q.scale_stride < 0) return fail(fn, name, " scale_stride=", q.scale_stride, " must be >= 0");
  for (index_t h = 0; h < heads; ++h) {
    const float s = q.scales[h * q.scale_stride];
    if (!(std::isfinite(s) && s > 0.0f)) return fail(fn, name, " scale[", h, "]=", s, " must be finite and > 0");
  }
  return {};
}

/// Dynamic scales go to a [dim0, dim1, H] view (the tokens' (n, l), or their cache slots through the map);
/// given scales need none (an empty view).
inline status check_scales_out(const char* fn, const char* name, const quant_spec& q, const strided_view<float, 3>& s,
                               index_t dim0, index_t dim1, index_t heads) {
  POSENC_TRY(check_view(fn, name, s, true));
  if (!q.dynamic()) {
    if (!s.empty()) return fail(fn, name, " must be empty with given scales");
    return {};
  }
  if (s.extent(0) != dim0 || s.extent(1) != dim1 || s.extent(2) != heads)
    return fail(fn, name, " shape (", s.extent(0), ", ", s.extent(1), ", ", s.extent(2), ") must be (", dim0, ", ", dim1,
                ", ", heads, ")");
  return {};
}

/// One tensor of a quantising call as the kernel takes it: codes as bytes (int8 codes are their bytes).
template <class In, class Code>
quant_leg<In> make_quant_leg(const strided_view<const In, 4>& in, const strided_view<Code, 4>& out, const quant_spec& q,
                             const strided_view<float, 3>& scales) {
  const strided_view<std::uint8_t, 4> bytes(reinterpret_cast<std::uint8_t*>(out.data()), out.extents(), out.strides());
  return {in, bytes,
          quant_params{q.format, q.scales, q.scale_stride, q.dynamic() ? scales.data() : nullptr,
                       {scales.stride(0), scales.stride(1), scales.stride(2)}}};
}

/// Every token of `first` rotated (K: freq not null) or widened (V) into float scratch rows, and of `second`
/// (V, unless empty) widened, each quantised into its output rows through `map`: one kernel call, one pass per
/// token (detail/kernels/quant-inl.hpp).
template <class F, class In>
void run_quantized(const F* freq, const quant_leg<In>& first, const quant_leg<In>& second, const positions& pos,
                   const token_map& map) {
  // The source is made canonical here: the kernel list's run_ forms map values, not what a pointer points to.
  using S = std::decay_t<decltype(canonical(source_of(*freq)))>;
  if (freq == nullptr) {
    run_rope_quant_rows(static_cast<const S*>(nullptr), pos, rope_style::half_split, 0, 0, first, second, map);
    return;
  }
  const S src = canonical(source_of(*freq));
  const rope_geometry g = geom_of(*freq);
  run_rope_quant_rows(&src, pos, g.style, g.rotary_offset, g.pairs(), first, second, map);
}

template <class I, class Code>
auto quant_target(const strided_view<const I, 4>& in, const strided_view<Code, 4>& out) {
  return rope_io<I, Code>{in, out, {}};
}

}  // namespace detail

/// RoPE then 8-bit quantisation of q or k: codes[n, l, h, :] = Q(RoPE(in[n, l, h, :]) at pos(n, l)), the
/// rotation as apply_rope's (float arithmetic; double for double input), the codes by `spec` (see the top of
/// this header). `codes`: (N, L, H, D) view of std::int8_t (int8) or std::uint8_t (fp8). `scales`: [N, L, H]
/// floats receiving the dynamic int8 scales, or an empty view with given scales. Fails with invalid_argument,
/// writing nothing, on shape mismatches, a format/code type mismatch, a given scale not finite and > 0, D >
/// 4096, or bad positions.
///
/// **Example**
/// ```
/// std::vector<std::int8_t> kq(N * L * H * D);
/// std::vector<float> ks(N * L * H);                               // per token and head
/// posenc::apply_rope_quantized(plan, k, posenc::strided_view<std::int8_t, 4>(kq.data(), {N, L, H, D}),
///                              posenc::strided_view<float, 3>(ks.data(), {N, L, H}), pos, posenc::quant_spec{});
/// ```
template <class F, class X, class Code, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_apply_rope_quantized(const F& freq, X&& in, const strided_view<Code, 4>& codes,
                                const strided_view<float, 3>& scales, const positions& pos, const quant_spec& spec) noexcept {
  constexpr const char* fn = "apply_rope_quantized";
  auto vi = as_nlhd(in);
  using I = std::remove_const_t<typename decltype(vi)::element_type>;
  const strided_view<const I, 4> cin(vi);
  POSENC_TRY(detail::check_source(fn, freq));
  index_t max_pos = -1;
  POSENC_TRY(detail::check_rope_call(fn, detail::geom_of(freq), pos,
                                     std::array<detail::rope_io<I, Code>, 1>{detail::quant_target(cin, codes)}, {"in", "codes"},
                                     max_pos));
  POSENC_TRY(detail::check_max_position(fn, freq, max_pos));
  POSENC_TRY(detail::check_quant<Code>(fn, "codes", spec, cin.extent(2), cin.extent(3)));
  POSENC_TRY(detail::check_scales_out(fn, "scales", spec, scales, cin.extent(0), cin.extent(1), cin.extent(2)));
  if (detail::spans_overlap(cin, scales)) return detail::fail(fn, "scales overlaps in");
  if (detail::spans_overlap(codes, scales)) return detail::fail(fn, "scales overlaps codes");
  if (max_pos < 0) return {};
  detail::run_quantized(&freq, detail::make_quant_leg(cin, codes, spec, scales), detail::quant_leg<I>{}, pos,
                        detail::token_map{});
  return {};
}
template <class F, class X, class Code, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void apply_rope_quantized(const F& freq, X&& in, const strided_view<Code, 4>& codes, const strided_view<float, 3>& scales,
                          const positions& pos, const quant_spec& spec) {
  detail::throw_if_error(try_apply_rope_quantized<F, X&, Code, void>(freq, in, codes, scales, pos, spec));
}

/// rope_append_kv into an 8-bit KV cache: K rotated then quantised by `k_spec` into k_cache's slots, V
/// quantised by `v_spec` into v_cache's (vLLM's fp8 KV cache with k_scale / v_scale, or int8 with dynamic
/// per-token-per-head scales stored next to the cache). Caches: [dim0, dim1, Hk, D] of std::int8_t or
/// std::uint8_t as the formats say; k_scales / v_scales: [dim0, dim1, Hk] floats for dynamic scales, else empty.
/// Everything is checked before anything is written.
template <class F, class K, class V, class KCode, class VCode, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_rope_append_kv_quantized(const F& freq, K&& k, V&& v, const strided_view<KCode, 4>& k_cache,
                                    const strided_view<VCode, 4>& v_cache, const positions& pos, const kv_slots& slots,
                                    const quant_spec& k_spec, const quant_spec& v_spec,
                                    const strided_view<float, 3>& k_scales = {},
                                    const strided_view<float, 3>& v_scales = {}) noexcept {
  constexpr const char* fn = "rope_append_kv_quantized";
  const auto tk = detail::make_cache_target<true>(k, k_cache);
  const auto tv = detail::make_cache_target<true>(v, v_cache);
  detail::token_map map;
  index_t max_pos = -1;
  POSENC_TRY(detail::check_append(fn, freq, tk, tv, pos, slots, map, max_pos));
  POSENC_TRY(detail::check_quant<KCode>(fn, "k_cache", k_spec, tk.in.extent(2), tk.in.extent(3)));
  POSENC_TRY(detail::check_quant<VCode>(fn, "v_cache", v_spec, tv.in.extent(2), tv.in.extent(3)));
  const index_t d0 = tk.out.extent(0), d1 = tk.out.extent(1);
  POSENC_TRY(detail::check_scales_out(fn, "k_scales", k_spec, k_scales, d0, d1, tk.in.extent(2)));
  POSENC_TRY(detail::check_scales_out(fn, "v_scales", v_spec, v_scales, d0, d1, tv.in.extent(2)));
  if (detail::spans_overlap(k_scales, v_scales) || detail::spans_overlap(k_scales, tk.out) ||
      detail::spans_overlap(k_scales, tv.out) || detail::spans_overlap(v_scales, tk.out) ||
      detail::spans_overlap(v_scales, tv.out) || detail::spans_overlap(k_scales, tk.in) || detail::spans_overlap(v_scales, tv.in))
    return detail::fail(fn, "a scales output overlaps a cache or an input");
  if (max_pos < 0) return {};
  const auto kl = detail::make_quant_leg(tk.in, tk.out, k_spec, k_scales);
  const auto vl = detail::make_quant_leg(tv.in, tv.out, v_spec, v_scales);
  using KI = std::remove_const_t<typename decltype(tk.in)::element_type>;
  using VI = std::remove_const_t<typename decltype(tv.in)::element_type>;
  if constexpr (std::is_same_v<detail::canonical_of_t<KI>, detail::canonical_of_t<VI>>) {
    // K and V of a token in one pass (they sit side by side in a fused QKV buffer).
    detail::run_quantized(&freq, detail::canonical(kl), detail::canonical(vl), pos, map);
  } else {
    detail::run_quantized(&freq, kl, detail::quant_leg<KI>{}, pos, map);
    detail::run_quantized<F>(nullptr, vl, detail::quant_leg<VI>{}, pos, map);
  }
  return {};
}
template <class F, class K, class V, class KCode, class VCode, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void rope_append_kv_quantized(const F& freq, K&& k, V&& v, const strided_view<KCode, 4>& k_cache,
                              const strided_view<VCode, 4>& v_cache, const positions& pos, const kv_slots& slots,
                              const quant_spec& k_spec, const quant_spec& v_spec, const strided_view<float, 3>& k_scales = {},
                              const strided_view<float, 3>& v_scales = {}) {
  detail::throw_if_error(try_rope_append_kv_quantized<F, K&, V&, KCode, VCode, void>(
      freq, k, v, k_cache, v_cache, pos, slots, k_spec, v_spec, k_scales, v_scales));
}

POSENC_END_NAMESPACE
