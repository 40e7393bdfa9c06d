// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// RoPE fused with the KV-cache append: K is rotated straight into its cache slots (and V copied next to it) in
// one pass over the new tokens, no temporary, converting to the cache's storage type with one rounding. Two
// cache shapes: contiguous [B, max_len, Hk, D] written after each sequence's cached length, and vLLM's paged
// cache [num_blocks, block_size, Hk, D] addressed by a slot per token (vLLM reshape_and_cache_flash's
// slot_mapping; a negative slot, vLLM's padding, is skipped). Other cache layouts, e.g. [num_blocks, Hk,
// block_size, D], are the same views with permuted strides.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

/// Where the N x L new tokens of a call go in a KV cache view [dim0, dim1, Hk, D]. Non-owning.
///
/// **Example**
/// ```
/// // paged: token (n, l) at slot_mapping[n * L + l]; block = slot / block_size, row = slot % block_size
/// const auto slots = posenc::kv_slots::paged(slot_mapping, N, L);
/// // contiguous: sequence n has seq_lens[n] tokens cached, the new ones follow
/// const auto rows = posenc::kv_slots::contiguous(seq_lens, N);
/// ```
class kv_slots {
 public:
  /// Contiguous cache [B, max_len, Hk, D]: token (n, l) goes to row start[n] + l of batch row n.
  static kv_slots contiguous(const std::int64_t* start, index_t batch) noexcept {
    kv_slots s;
    s.start_ = start;
    s.batch_ = batch;
    return s;
  }
  /// Paged cache [num_blocks, block_size, Hk, D]: token (n, l) goes to slot slot_mapping[n * row_stride + l]
  /// (row_stride L when 0), i.e. row slot % block_size of block slot / block_size; slot -1 skips the token.
  static kv_slots paged(const std::int64_t* slot_mapping, index_t batch, index_t length, index_t row_stride = 0) noexcept {
    kv_slots s;
    s.slots_ = slot_mapping;
    s.batch_ = batch;
    s.length_ = length;
    s.stride_ = row_stride ? row_stride : length;
    return s;
  }

  /// True for paged slots (a slot per token), false for contiguous ones (a cached length per sequence).
  bool is_paged() const noexcept { return slots_ != nullptr || (start_ == nullptr && length_ >= 0); }
  /// Contiguous: the cached length of each of the N sequences (its new tokens follow); null when paged.
  const std::int64_t* start() const noexcept { return start_; }
  /// Paged: the slot of token (n, l) at [n * row_stride() + l], -1 to skip it; null when contiguous.
  const std::int64_t* slot_mapping() const noexcept { return slots_; }
  /// N, the number of sequences the slots describe.
  index_t batch() const noexcept { return batch_; }
  /// Paged: L, the new tokens per sequence; -1 when contiguous.
  index_t length() const noexcept { return length_; }
  /// Paged: elements from sequence n's slots to sequence n + 1's (L unless given); 0 when contiguous.
  index_t row_stride() const noexcept { return stride_; }

 private:
  const std::int64_t* start_ = nullptr;
  const std::int64_t* slots_ = nullptr;
  index_t batch_ = 0;
  index_t length_ = -1;  ///< -1 for contiguous
  index_t stride_ = 0;
};

namespace detail {

/// The (N, L, H, D) view of new tokens and the rank-4 view of a cache, each of its own storage type (with
/// Codes, the cache may hold 8-bit codes: posenc/quantize.hpp).
template <bool Codes = false, class In, class Cache>
auto make_cache_target(In&& in, Cache&& cache) {
  const auto& vc = view_ref(std::forward<Cache>(cache));
  const auto& vi = nlhd_default(std::forward<In>(in));
  using O = typename std::decay_t<decltype(vc)>::element_type;
  using I = std::remove_const_t<typename std::decay_t<decltype(vi)>::element_type>;
  static_assert(std::decay_t<decltype(vc)>::rank == 4, "posenc: a KV cache is a rank-4 view [dim0, dim1, heads, head dim]");
  static_assert(!std::is_const_v<O>, "posenc: the KV cache must be writable");
  static_assert(simd::is_storage_v<I> && (simd::is_storage_v<O> || Codes),
                "posenc: tensors of float, double or a 16-bit storage type (posenc/storage.hpp)");
  return canonical_io(vi, vc);
}

/// Checks the slots against the new tokens (N, L) and the cache's first two extents; returns the map.
inline status check_kv_slots(const char* fn, const kv_slots& s, index_t n, index_t l, index_t dim0, index_t dim1,
                             token_map& map) {
  if (s.batch() != n) return fail(fn, "slots batch=", s.batch(), " does not match N=", n);
  if (!s.is_paged()) {
    if (n > dim0) return fail(fn, "N=", n, " sequences exceed the cache's batch of ", dim0);
    if (n > 0 && s.start() == nullptr) return fail(fn, "slots start lengths are null");
    for (index_t i = 0; i < n; ++i) {
      const std::int64_t v = s.start()[i];
      if (v < 0) return fail(fn, "cached length[", i, "]=", v, " must be >= 0");
      if (v > dim1 - l) return fail(fn, "cached length[", i, "]=", v, " + L=", l, " exceeds the cache's max_len=", dim1);
    }
    map = token_map{s.start(), nullptr, 0, 1, -1};
    return {};
  }
  if (s.length() != l) return fail(fn, "slot_mapping length=", s.length(), " does not match L=", l);
  if (s.row_stride() < l) return fail(fn, "slot_mapping row_stride=", s.row_stride(), " is less than L=", l);
  if (n > 0 && l > 0 && s.slot_mapping() == nullptr) return fail(fn, "slot_mapping is null");
  if (dim1 <= 0 && n > 0 && l > 0) return fail(fn, "the cache's block_size (extent 1)=", dim1, " must be > 0");
  index_t slots = 0;
  if (dim1 <= 0 || mul_overflows(dim0, dim1, slots)) slots = dim1 > 0 ? std::numeric_limits<index_t>::max() : 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < l; ++j) {
      const std::int64_t v = s.slot_mapping()[i * s.row_stride() + j];
      if (v < -1 || v >= slots)
        return fail(fn, "slot_mapping[", i, ", ", j, "]=", v, " is outside [-1, ", slots, ") (num_blocks * block_size)");
    }
  map = token_map::paged(s.slot_mapping(), s.row_stride(), dim1 > 0 ? dim1 : 1);
  return {};
}

template <class I, class O>
status check_cache_pair(const char* fn, const char* in_name, const char* cache_name, const strided_view<const I, 4>& in,
                        const strided_view<O, 4>& cache) {
  POSENC_TRY(check_view(fn, in_name, in, false));
  POSENC_TRY(check_view(fn, cache_name, cache, true));
  if (cache.extent(2) != in.extent(2) || cache.extent(3) != in.extent(3))
    return fail(fn, cache_name, " (heads, head dim)=(", cache.extent(2), ", ", cache.extent(3), ") does not match ", in_name,
                " (", in.extent(2), ", ", in.extent(3), ")");
  if (spans_overlap(in, cache)) return fail(fn, cache_name, " overlaps ", in_name);
  return {};
}

/// Whether `pos` is an offset whose N x L tokens (n, l) lie inside the source's positions; sets max_pos (-1 for
/// no token). Decided inline without forming a status (validate_positions and check_max_position were ~110
/// instructions of a one-token append); false only sends the call through those rule-by-rule checks.
template <class F>
POSENC_ALWAYS_INLINE bool quick_offset(const F& freq, const positions& pos, index_t n, index_t l, index_t& max_pos) {
  if (pos.kind() != positions::form::offset) return false;
  const index_t start = pos.start();  // at() was compiled as a call here
  const index_t last = l > 0 ? l - 1 : 0;
  if (start < 0 || start > std::numeric_limits<index_t>::max() - last) return false;
  max_pos = n > 0 && l > 0 ? start + last : -1;
  return max_pos < max_positions_of(freq);
}

/// Whether paged slots pass check_kv_slots for (n, l) new tokens and a cache of extents (dim0, dim1), decided
/// inline as quick_offset (check_kv_slots was ~100 instructions of a one-token append); sets the map. False
/// (contiguous slots, no tokens, a bad slot) only sends the call through check_kv_slots.
POSENC_ALWAYS_INLINE bool quick_paged_slots(const kv_slots& s, index_t n, index_t l, index_t dim0, index_t dim1,
                                            token_map& map) {
  index_t slots = 0;
  if (s.slot_mapping() == nullptr || s.batch() != n || s.length() != l || s.row_stride() < l || n <= 0 || l <= 0 ||
      dim1 <= 0 || mul_overflows(dim0, dim1, slots))
    return false;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < l; ++j) {
      const std::int64_t v = s.slot_mapping()[i * s.row_stride() + j];
      if (v < -1 || v >= slots) return false;
    }
  map = token_map::paged(s.slot_mapping(), s.row_stride(), dim1);
  return true;
}

/// Whether check_append's rules before the slots hold (decided without forming a status, for the one-token
/// decode call): the positions an offset, every view valid, the caches shaped as k and v, q (when not null)
/// in place with k's tokens, no overlaps, the positions inside the source. False only sends the call through
/// the rule-by-rule checks.
template <class F, class Q, class KIn, class KOut, class VIn, class VOut>
bool quick_append(const F& freq, const rope_io<Q, Q>* q, const rope_io<KIn, KOut>& tk, const rope_io<VIn, VOut>& tv,
                  const positions& pos, index_t& max_pos) {
  if (!check_source("", freq).ok()) return false;
  const index_t n = tk.in.extent(0), l = tk.in.extent(1);
  // Each view's range once; the five overlap rules are comparisons of those ranges.
  const view_probe ki = probe_view(tk.in, false), ko = probe_view(tk.out, true);
  const view_probe vi = probe_view(tv.in, false), vo = probe_view(tv.out, true);
  const bool shapes = ki.ok && ko.ok && vi.ok && vo.ok && tk.out.extent(2) == tk.in.extent(2) &&
                      tk.out.extent(3) == tk.in.extent(3) && tv.out.extent(2) == tv.in.extent(2) &&
                      tv.out.extent(3) == tv.in.extent(3) && tk.in.extent(3) == geom_of(freq).head_dim &&
                      tv.in.extent(0) == n && tv.in.extent(1) == l && tv.in.extent(2) == tk.in.extent(2) &&
                      tv.out.extent(0) == tk.out.extent(0) && tv.out.extent(1) == tk.out.extent(1);
  if (!shapes || ki.overlaps(ko) || vi.overlaps(vo) || ko.overlaps(vo) || ki.overlaps(vo) || vi.overlaps(ko)) return false;
  if (q != nullptr) {
    const view_probe qo = probe_view(q->out, true);
    if (!qo.ok || !same_view(q->in, q->out) || q->in.extent(3) != tk.in.extent(3) || q->in.extent(0) != n ||
        q->in.extent(1) != l || qo.overlaps(ko) || qo.overlaps(vo) || qo.lo == ki.lo || qo.lo == vi.lo)
      return false;
  }
  return quick_offset(freq, pos, n, l, max_pos);
}

/// check_append's rules on the views: the source, q (when not null: rotated in place, rope_qk_append_kv), k
/// and v against their caches and each other. Everything but the positions and the slots (check_append_step).
template <class F, class Q, class KIn, class KOut, class VIn, class VOut>
status check_append_views(const char* fn, const F& freq, const rope_io<Q, Q>* q, const rope_io<KIn, KOut>& tk,
                          const rope_io<VIn, VOut>& tv) {
  POSENC_TRY(check_source(fn, freq));
  const rope_geometry g = geom_of(freq);
  POSENC_TRY(check_cache_pair(fn, "k", "k_cache", tk.in, tk.out));
  POSENC_TRY(check_cache_pair(fn, "v", "v_cache", tv.in, tv.out));
  if (tk.in.extent(3) != g.head_dim)
    return fail(fn, "k head dim (extent 3)=", tk.in.extent(3), " does not match the plan's head_dim=", g.head_dim);
  POSENC_TRY(check_same_tokens(fn, "v", tv.in.extent(0), tv.in.extent(1), "k", tk.in.extent(0), tk.in.extent(1)));
  if (tv.in.extent(2) != tk.in.extent(2))
    return fail(fn, "v heads (extent 2)=", tv.in.extent(2), " does not match k's ", tk.in.extent(2));
  if (tv.out.extent(0) != tk.out.extent(0) || tv.out.extent(1) != tk.out.extent(1))
    return fail(fn, "v_cache (extent 0, extent 1)=(", tv.out.extent(0), ", ", tv.out.extent(1), ") does not match k_cache (",
                tk.out.extent(0), ", ", tk.out.extent(1), ")");
  if (spans_overlap(tk.out, tv.out)) return fail(fn, "v_cache overlaps k_cache");
  if (spans_overlap(tk.in, tv.out)) return fail(fn, "v_cache overlaps k");
  if (spans_overlap(tv.in, tk.out)) return fail(fn, "k_cache overlaps v");
  if (q != nullptr) {
    // q and k (or v) of a fused QKV buffer interleave token by token, so their spans overlap; only their
    // elements must not (not checked: check_targets' rule for several targets, distinct starts, holds).
    POSENC_TRY(check_targets(fn, g.head_dim, std::array<rope_io<Q, Q>, 1>{*q}, {"q", "q"}));
    POSENC_TRY(check_same_tokens(fn, "q", q->in.extent(0), q->in.extent(1), "k", tk.in.extent(0), tk.in.extent(1)));
    if (spans_overlap(q->out, tk.out) || spans_overlap(q->out, tv.out)) return fail(fn, "q overlaps a cache");
    if (static_cast<const void*>(q->out.data()) == static_cast<const void*>(tk.in.data()) ||
        static_cast<const void*>(q->out.data()) == static_cast<const void*>(tv.in.data()))
      return fail(fn, "q and k or v start at one element");
  }
  return {};
}

/// check_append's rules on one step of checked views: the positions of the (n, l) new tokens inside the
/// source, the slots inside the cache of extents (dim0, dim1); sets the token map and the largest position.
template <class F>
status check_append_step_rules(const char* fn, const F& freq, const positions& pos, const kv_slots& slots, index_t n,
                               index_t l, index_t dim0, index_t dim1, token_map& map, index_t& max_pos) {
  POSENC_TRY(validate_positions(fn, pos, n, l, max_pos));
  POSENC_TRY(check_max_position(fn, freq, max_pos));
  return check_kv_slots(fn, slots, n, l, dim0, dim1, map);
}
/// (The quick verdict inline, the rules out of line: a bound decode step's checks were ~10% of its time.)
template <class F>
POSENC_ALWAYS_INLINE status check_append_step(const char* fn, const F& freq, const positions& pos, const kv_slots& slots,
                                              index_t n, index_t l, index_t dim0, index_t dim1, token_map& map,
                                              index_t& max_pos) {
  if (quick_offset(freq, pos, n, l, max_pos) && quick_paged_slots(slots, n, l, dim0, dim1, map)) return {};
  return check_append_step_rules(fn, freq, pos, slots, n, l, dim0, dim1, map, max_pos);
}

/// Checks a KV-cache append (check_append_views, then check_append_step); sets the token map and the largest
/// position.
template <class F, class Q, class KIn, class KOut, class VIn, class VOut>
status check_append(const char* fn, const F& freq, const rope_io<Q, Q>* q, const rope_io<KIn, KOut>& tk,
                    const rope_io<VIn, VOut>& tv, const positions& pos, const kv_slots& slots, token_map& map,
                    index_t& max_pos) {
  if (quick_append(freq, q, tk, tv, pos, max_pos)) {
    const index_t n = tk.in.extent(0), l = tk.in.extent(1), dim0 = tk.out.extent(0), dim1 = tk.out.extent(1);
    if (quick_paged_slots(slots, n, l, dim0, dim1, map)) return {};
    return check_kv_slots(fn, slots, n, l, dim0, dim1, map);
  }
  POSENC_TRY(check_append_views(fn, freq, q, tk, tv));
  return check_append_step(fn, freq, pos, slots, tk.in.extent(0), tk.in.extent(1), tk.out.extent(0), tk.out.extent(1),
                           map, max_pos);
}

/// check_append without q (rope_append_kv and its quantised form).
template <class F, class KIn, class KOut, class VIn, class VOut>
status check_append(const char* fn, const F& freq, const rope_io<KIn, KOut>& tk, const rope_io<VIn, VOut>& tv,
                    const positions& pos, const kv_slots& slots, token_map& map, index_t& max_pos) {
  using KI = std::remove_const_t<KIn>;
  return check_append(fn, freq, static_cast<const rope_io<KI, KI>*>(nullptr), tk, tv, pos, slots, map, max_pos);
}

/// Rotates q in place (when not null), k into its cache slots and v into theirs (checked by check_append; both
/// through k.map, set from it: v.map is not read, and copying the map into it, just stored field by field, cost
/// a failed store-to-load forward per bound decode step): one fused pass per token when q, k and v share a
/// storage type and so do the two caches (a fused QKV buffer into one cache type) and q and k rotate in one
/// arithmetic type, else a pass each. Everything by reference down to the kernel: copies of the views were ~15% of a one-token append.
template <class F, class Q, class KIn, class KOut, class VIn, class VOut>
void run_append(const F& freq, const rope_io<Q, Q>* q, const rope_io<KIn, KOut>& k, const rope_io<VIn, VOut>& v,
                const positions& pos) {
  using I = canonical_of_t<KIn>;
  using O = canonical_of_t<KOut>;
  using S = decltype(source_of(freq));
  if constexpr (std::is_same_v<I, canonical_of_t<Q>> && std::is_same_v<I, canonical_of_t<VIn>> &&
                std::is_same_v<O, canonical_of_t<VOut>> && std::is_same_v<rope_acc_t<S, I, O>, rope_acc_t<S, I, I>>) {
    const rope_geometry g = geom_of(freq);
    // No q: an empty one, zeroed once (not per call: a zeroed rope_io on the stack is a `rep stos`).
    static const rope_io<Q, Q> none{};
    run_append_rows(source_of(freq), pos, g.style, g.rotary_offset, g.pairs(), q != nullptr ? *q : none, k, v);
  } else {
    if (q != nullptr) run_rope(freq, pos, 1.0, std::array<rope_io<Q, Q>, 1>{*q});
    run_rope(freq, pos, 1.0, std::array<rope_io<KIn, KOut>, 1>{k});
    rope_io<VIn, VOut> vm = v;  // v's rows go where k's go
    vm.map = k.map;
    run_copy_tokens(vm);
  }
}

}  // namespace detail

/// RoPE on K fused with the KV-cache append: k_cache[slot(n, l), h, :] = RoPE(k[n, l, h, :]) at position
/// pos(n, l), v_cache[slot(n, l), h, :] = v[n, l, h, :], each converted to the cache's storage type with one
/// rounding (the rotation as apply_rope's out-of-place form; vLLM's rotary_embedding + reshape_and_cache in
/// one pass). `k`, `v`: (N, L, Hk, D) and (N, L, Hk, Dv) views (often into a fused QKV buffer); caches:
/// [B, max_len, Hk, D] with kv_slots::contiguous, or [num_blocks, block_size, Hk, D] with kv_slots::paged.
/// Fails with invalid_argument, writing nothing, on a shape mismatch, a slot outside the cache, a cached length
/// past max_len, overlapping inputs and caches, or bad positions. Token slots must be distinct (not checked).
///
/// **Example**
/// ```
/// // decode: one token per sequence, into a paged fp16 cache
/// posenc::rope_append_kv(cache, k, v, k_cache, v_cache, posenc::positions::per_sequence(seq_lens, N),
///                        posenc::kv_slots::paged(slot_mapping, N, 1));
/// ```
template <class F, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_rope_append_kv(const F& freq, K&& k, V&& v, KC&& k_cache, VC&& v_cache, const positions& pos,
                          const kv_slots& slots) noexcept {
  auto tk = detail::make_cache_target(k, k_cache);
  auto tv = detail::make_cache_target(v, v_cache);
  index_t max_pos = -1;
  POSENC_TRY(detail::check_append("rope_append_kv", freq, tk, tv, pos, slots, tk.map, max_pos));
  using KI = std::remove_const_t<typename decltype(tk.in)::element_type>;
  if (max_pos >= 0) detail::run_append(freq, static_cast<const detail::rope_io<KI, KI>*>(nullptr), tk, tv, pos);
  return {};
}
template <class F, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void rope_append_kv(const F& freq, K&& k, V&& v, KC&& k_cache, VC&& v_cache, const positions& pos, const kv_slots& slots) {
  detail::throw_if_error(try_rope_append_kv<F, K&, V&, KC&, VC&, void>(freq, k, v, k_cache, v_cache, pos, slots));
}

/// A whole attention layer's RoPE step: q rotated in place, k rotated into k_cache and v copied into v_cache
/// (rope_append_kv). Everything is checked before anything is written.
template <class F, class Q, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_rope_qk_append_kv(const F& freq, Q&& q, K&& k, V&& v, KC&& k_cache, VC&& v_cache, const positions& pos,
                             const kv_slots& slots) noexcept {
  const auto tq = detail::make_target(q, q);
  auto tk = detail::make_cache_target(k, k_cache);
  auto tv = detail::make_cache_target(v, v_cache);
  index_t max_pos = -1;
  POSENC_TRY(detail::check_append("rope_qk_append_kv", freq, &tq, tk, tv, pos, slots, tk.map, max_pos));
  if (max_pos < 0) return {};
  detail::run_append(freq, &tq, tk, tv, pos);
  return {};
}
template <class F, class Q, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void rope_qk_append_kv(const F& freq, Q&& q, K&& k, V&& v, KC&& k_cache, VC&& v_cache, const positions& pos,
                       const kv_slots& slots) {
  detail::throw_if_error(
      try_rope_qk_append_kv<F, Q&, K&, V&, KC&, VC&, void>(freq, q, k, v, k_cache, v_cache, pos, slots));
}

POSENC_END_NAMESPACE
