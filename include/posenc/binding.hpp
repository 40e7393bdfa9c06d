// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Calls with their views checked once. An engine that decodes from fixed buffers (a fused QKV buffer and each
// layer's caches at the same addresses every step, as CUDA-graph replay and static graph allocators give)
// binds them once and, each step, passes only the positions (and the KV slots), which are all that change:
// FlashInfer's split of a call into plan (once per batch shape) and run (per step), applied to the views. On a
// one-token call the view checks are 7-15% of the instructions (bench/README.md). A run writes exactly what
// the unbound call with the same arguments writes.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/kv_cache.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail {
struct kv_binder;
struct rope_binder;

/// A run of a binding that does not run: why binding failed, or that it was never made.
inline status unbound(const char* fn, const status& bind_status) {
  if (!bind_status.ok()) return bind_status;
  return fail(fn, "the binding is empty (make it with try_bind_", fn, ")");
}
}  // namespace detail

/// apply_rope (one target: x in place, or in -> out) or apply_rope_qk (q and k in place) over views bound
/// once: try_bind_apply_rope* checks the views (shapes, strides, the head dim against `freq`, a table view's
/// table), each try_run only the positions, then rotates as the unbound call does. Non-owning: `freq` and the
/// views' memory must outlive it. A run changes nothing in the binding, but its rows are fixed: runs from
/// several threads at once would rotate the same rows (give each thread a binding of its own sub-views).
///
/// **Example**
/// ```
/// auto rot = posenc::bind_apply_rope_qk(cache, q, k);          // once per layer and batch shape
/// rot.run(posenc::positions::per_sequence(seq_lens, N));       // per step
/// ```
template <class F, class In, class Out, std::size_t K>
class rope_binding {
 public:
  /// An empty binding: try_run fails, asking for try_bind_apply_rope*.
  rope_binding() noexcept = default;

  /// Whether the views were accepted (the binding runs).
  bool ok() const noexcept { return freq_ != nullptr; }
  /// Why binding failed (the unbound call's message for the same views); ok when it did not.
  const status& bind_status() const noexcept { return bind_status_; }
  /// N: the sequences every run's positions describe.
  index_t batch() const noexcept { return targets_[0].in.extent(0); }
  /// L: the tokens per sequence every run's positions describe.
  index_t length() const noexcept { return targets_[0].in.extent(1); }

  /// One step: the bound views rotated at `pos` (apply_rope / apply_rope_qk). Fails with invalid_argument,
  /// writing nothing, when binding failed, or the positions do not match (N, L) or pass the source.
  status try_run(const positions& pos) const noexcept {
    const char* fn = K == 2 ? "apply_rope_qk" : "apply_rope";
    if (freq_ == nullptr) return detail::unbound(fn, bind_status_);
    index_t max_pos = -1;
    POSENC_TRY(detail::validate_positions(fn, pos, batch(), length(), max_pos));
    POSENC_TRY(detail::check_max_position(fn, *freq_, max_pos));
    if (max_pos >= 0) detail::run_rope(*freq_, pos, 1.0, targets_);
    return {};
  }
  /// As try_run; throws argument_error.
  void run(const positions& pos) const { detail::throw_if_error(try_run(pos)); }

 private:
  friend struct detail::rope_binder;
  const F* freq_ = nullptr;
  std::array<detail::rope_io<In, Out>, K> targets_{};
  status bind_status_;
};

/// rope_append_kv (HasQ false) or rope_qk_append_kv (HasQ true) over views bound once: try_bind_* checks every
/// rule on the views (shapes, strides, overlaps, the head dim against `freq`), and each try_run checks only the
/// step's positions and slots, then writes exactly what the unbound call with the same arguments writes (bit for
/// bit). Made by try_bind_rope_append_kv / try_bind_rope_qk_append_kv; name the type with
/// rope_append_kv_binding / rope_qk_append_kv_binding. Non-owning: `freq`, the views' memory and the caches
/// must outlive it. A run sets the binding's token map, so one binding serves one thread at a time; bind a
/// layer once per thread (or per batch shape: N and L are fixed at binding).
///
/// **Example**
/// ```
/// // once per layer, over the fused QKV buffer and the layer's paged fp16 caches (N sequences, 1 token each)
/// auto step = posenc::bind_rope_qk_append_kv(cache, q, k, v, k_cache, v_cache);
/// // every decode step: only the positions and the slots are checked
/// step.run(posenc::positions::per_sequence(seq_lens, N), posenc::kv_slots::paged(slot_mapping, N, 1));
/// ```
template <class F, class Q, class KIn, class KOut, class VIn, class VOut, bool HasQ>
class kv_append_binding {
 public:
  /// An empty binding: try_run fails, asking for try_bind_*.
  kv_append_binding() noexcept = default;

  /// Whether the views were accepted (the binding runs).
  bool ok() const noexcept { return freq_ != nullptr; }
  /// Why binding failed (the message the unbound call gives for the same views); ok when it did not.
  const status& bind_status() const noexcept { return bind_status_; }
  /// N: the sequences every step's positions and slots describe.
  index_t batch() const noexcept { return k_.in.extent(0); }
  /// L: the new tokens per sequence every step's positions and slots describe.
  index_t length() const noexcept { return k_.in.extent(1); }

  /// One step: k rotated into its cache slots and v copied into theirs (q rotated in place when bound), as
  /// rope_append_kv / rope_qk_append_kv with the bound views. Fails with invalid_argument, writing nothing,
  /// when binding failed, the positions do not match (N, L) or pass the source, or the slots do not match
  /// (N, L) or leave the cache.
  status try_run(const positions& pos, const kv_slots& slots) noexcept {
    const char* fn = HasQ ? "rope_qk_append_kv" : "rope_append_kv";
    if (freq_ == nullptr) return detail::unbound(fn, bind_status_);
    index_t max_pos = -1;
    POSENC_TRY(detail::check_append_step(fn, *freq_, pos, slots, k_.in.extent(0), k_.in.extent(1), k_.out.extent(0),
                                         k_.out.extent(1), k_.map, max_pos));
    if (max_pos < 0) return {};
    detail::run_append(*freq_, HasQ ? &q_ : nullptr, k_, v_, pos);
    return {};
  }
  /// As try_run; throws argument_error.
  void run(const positions& pos, const kv_slots& slots) { detail::throw_if_error(try_run(pos, slots)); }

 private:
  friend struct detail::kv_binder;
  const F* freq_ = nullptr;
  detail::rope_io<Q, Q> q_{};
  detail::rope_io<KIn, KOut> k_{};
  detail::rope_io<VIn, VOut> v_{};
  status bind_status_;
};

namespace detail {

template <class T>
struct io_types;
template <class I, class O>
struct io_types<rope_io<I, O>> {
  using in = I;
  using out = O;
};

/// Builds bindings (the only writer of their fields): the targets as the unbound entries build them, then
/// check_append_views once.
struct kv_binder {
  template <bool HasQ, class F, class TQ, class TK, class TV>
  static auto make(const char* fn, const F& freq, const TQ& tq, const TK& tk, const TV& tv) noexcept {
    using Q = typename io_types<TQ>::in;
    using K = io_types<TK>;
    using V = io_types<TV>;
    kv_append_binding<F, Q, typename K::in, typename K::out, typename V::in, typename V::out, HasQ> b;
    b.q_ = tq;
    b.k_ = tk;
    b.v_ = tv;
    status s = check_append_views(fn, freq, HasQ ? &b.q_ : nullptr, b.k_, b.v_);
    if (s.ok())
      b.freq_ = &freq;
    else
      b.bind_status_ = std::move(s);
    return b;
  }
};

/// Builds rope bindings: the targets as the unbound entries build them, then the entry's view checks once.
struct rope_binder {
  template <class F, class In, class Out, std::size_t K>
  static auto make(const char* fn, const F& freq, const std::array<rope_io<In, Out>, K>& targets,
                   const std::array<const char*, 2 * K>& names) noexcept {
    rope_binding<F, In, Out, K> b;
    b.targets_ = targets;
    status s = check_source(fn, freq);
    if (s.ok()) s = check_targets(fn, geom_of(freq).head_dim, b.targets_, names);
    if (s.ok())
      b.freq_ = &freq;
    else
      b.bind_status_ = std::move(s);
    return b;
  }
};

}  // namespace detail

/// Binds apply_rope's view `x` (rotated in place) for try_run(positions) per step; bind_status() holds the
/// unbound call's message when the view is rejected.
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto try_bind_apply_rope(const F& freq, X&& x) noexcept {
  return detail::rope_binder::make("apply_rope", freq, detail::targets_of(x, x), {"x", "x"});
}
/// Out of place: in -> out (apply_rope's out-of-place form).
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto try_bind_apply_rope(const F& freq, X&& in, Y&& out) noexcept {
  return detail::rope_binder::make("apply_rope", freq, detail::targets_of(in, out), {"in", "out"});
}
/// q and k in place (apply_rope_qk).
template <class F, class Q, class K, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto try_bind_apply_rope_qk(const F& freq, Q&& q, K&& k) noexcept {
  return detail::rope_binder::make("apply_rope_qk", freq, detail::qk_targets_of(q, k), {"q", "q", "k", "k"});
}
/// The throwing forms: argument_error when the views are rejected.
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto bind_apply_rope(const F& freq, X&& x) {
  auto b = try_bind_apply_rope<F, X&, void>(freq, x);
  detail::throw_if_error(b.bind_status());
  return b;
}
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto bind_apply_rope(const F& freq, X&& in, Y&& out) {
  auto b = try_bind_apply_rope<F, X&, Y&, void>(freq, in, out);
  detail::throw_if_error(b.bind_status());
  return b;
}
template <class F, class Q, class K, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto bind_apply_rope_qk(const F& freq, Q&& q, K&& k) {
  auto b = try_bind_apply_rope_qk<F, Q&, K&, void>(freq, q, k);
  detail::throw_if_error(b.bind_status());
  return b;
}
// A temporary source would dangle: the binding keeps a pointer to it.
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void try_bind_apply_rope(const F&& freq, X&& x) = delete;
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void try_bind_apply_rope(const F&& freq, X&& in, Y&& out) = delete;
template <class F, class Q, class K, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void try_bind_apply_rope_qk(const F&& freq, Q&& q, K&& k) = delete;
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void bind_apply_rope(const F&& freq, X&& x) = delete;
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void bind_apply_rope(const F&& freq, X&& in, Y&& out) = delete;
template <class F, class Q, class K, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void bind_apply_rope_qk(const F&& freq, Q&& q, K&& k) = delete;

/// Binds rope_append_kv's views (k, v and their caches, as there) for try_run(positions, slots) per step; the
/// binding's bind_status() holds the message the unbound call gives when the views are rejected.
template <class F, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto try_bind_rope_append_kv(const F& freq, K&& k, V&& v, KC&& k_cache, VC&& v_cache) noexcept {
  const auto tk = detail::make_cache_target(k, k_cache);
  const auto tv = detail::make_cache_target(v, v_cache);
  using KI = typename detail::io_types<std::decay_t<decltype(tk)>>::in;
  return detail::kv_binder::make<false>("rope_append_kv", freq, detail::rope_io<KI, KI>{}, tk, tv);
}
/// As try_bind_rope_append_kv; throws argument_error when the views are rejected.
template <class F, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto bind_rope_append_kv(const F& freq, K&& k, V&& v, KC&& k_cache, VC&& v_cache) {
  auto b = try_bind_rope_append_kv<F, K&, V&, KC&, VC&, void>(freq, k, v, k_cache, v_cache);
  detail::throw_if_error(b.bind_status());
  return b;
}

// A temporary source would dangle: the binding keeps a pointer to it.
template <class F, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void try_bind_rope_append_kv(const F&& freq, K&& k, V&& v, KC&& k_cache, VC&& v_cache) = delete;
template <class F, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void bind_rope_append_kv(const F&& freq, K&& k, V&& v, KC&& k_cache, VC&& v_cache) = delete;

/// Binds rope_qk_append_kv's views (q rotated in place; k, v and their caches) for try_run(positions, slots).
template <class F, class Q, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto try_bind_rope_qk_append_kv(const F& freq, Q&& q, K&& k, V&& v, KC&& k_cache, VC&& v_cache) noexcept {
  return detail::kv_binder::make<true>("rope_qk_append_kv", freq, detail::make_target(q, q),
                                       detail::make_cache_target(k, k_cache), detail::make_cache_target(v, v_cache));
}
/// As try_bind_rope_qk_append_kv; throws argument_error when the views are rejected.
template <class F, class Q, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
auto bind_rope_qk_append_kv(const F& freq, Q&& q, K&& k, V&& v, KC&& k_cache, VC&& v_cache) {
  auto b = try_bind_rope_qk_append_kv<F, Q&, K&, V&, KC&, VC&, void>(freq, q, k, v, k_cache, v_cache);
  detail::throw_if_error(b.bind_status());
  return b;
}

template <class F, class Q, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void try_bind_rope_qk_append_kv(const F&& freq, Q&& q, K&& k, V&& v, KC&& k_cache, VC&& v_cache) = delete;
template <class F, class Q, class K, class V, class KC, class VC, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void bind_rope_qk_append_kv(const F&& freq, Q&& q, K&& k, V&& v, KC&& k_cache, VC&& v_cache) = delete;

/// The binding types for views of types X, Q, K (e.g. strided_view<float, 4>), to hold bindings as members.
template <class F, class X>
using apply_rope_binding = decltype(try_bind_apply_rope(std::declval<const F&>(), std::declval<X&>()));
template <class F, class Q, class K>
using apply_rope_qk_binding =
    decltype(try_bind_apply_rope_qk(std::declval<const F&>(), std::declval<Q&>(), std::declval<K&>()));

/// The binding types for views of types K, V, ... (e.g. strided_view<const float, 4>, an Eigen::TensorMap), to
/// hold bindings as members: `posenc::rope_qk_append_kv_binding<rope_cache<float>, QView, KView, VView,
/// KCacheView, VCacheView> step_;`.
template <class F, class K, class V, class KC, class VC>
using rope_append_kv_binding = decltype(try_bind_rope_append_kv(std::declval<const F&>(), std::declval<K&>(),
                                                                std::declval<V&>(), std::declval<KC&>(),
                                                                std::declval<VC&>()));
template <class F, class Q, class K, class V, class KC, class VC>
using rope_qk_append_kv_binding =
    decltype(try_bind_rope_qk_append_kv(std::declval<const F&>(), std::declval<Q&>(), std::declval<K&>(),
                                        std::declval<V&>(), std::declval<KC&>(), std::declval<VC&>()));

POSENC_END_NAMESPACE
