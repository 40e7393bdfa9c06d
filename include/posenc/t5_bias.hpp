// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// T5 relative-position bias (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified
// Text-to-Text Transformer", sec. 2.1; reference: Mesh TensorFlow `_relative_position_bucket`, Hugging Face
// transformers `T5Attention._relative_position_bucket` / `compute_bias`): relative positions key - query are
// mapped to log-spaced buckets, each bucket has one learned scalar per head, and the [H, Lq, Lk] bias is added
// to the attention logits, here written as a tensor or added straight into strided scores with per-sequence
// query positions (a KV cache per sequence).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/t5_config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/random.hpp"
#include "posenc/detail/math/t5_bucket.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail {

/// first[b] = the smallest distance n >= 0 whose bucket (of one direction) is >= b, for b < nb, and
/// first[nb] = INT64_MAX: found from the bucket function itself (non-decreasing in n: every step of its log
/// branch is monotone), by bisection for the log-spaced buckets. Bucket b then covers n in [first[b],
/// first[b + 1]) exactly, ties and float roundings included.
inline std::vector<std::int64_t> t5_bucket_firsts(const math::t5_bucketer& bucket) {
  const std::int64_t nb = bucket.nb;
  // The direction's bucket of distance n >= 0: the bucketer's value at r = -n ("past" keys), for both modes.
  const auto of = [&](std::int64_t n) { return bucket(-n); };
  std::vector<std::int64_t> first(static_cast<std::size_t>(nb + 1), std::numeric_limits<std::int64_t>::max());
  std::int64_t top = 1;
  while (of(top) < nb - 1) top = top > std::numeric_limits<std::int64_t>::max() / 2 ? std::numeric_limits<std::int64_t>::max() : 2 * top;
  for (std::int64_t b = 0; b < nb; ++b) {
    std::int64_t lo = b == 0 ? 0 : first[static_cast<std::size_t>(b - 1)];
    std::int64_t hi = top;  // of(hi) >= nb - 1 >= b
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (of(mid) >= b) hi = mid;
      else lo = mid + 1;
    }
    first[static_cast<std::size_t>(b)] = lo;
  }
  return first;
}


struct t5_bias_access;

}  // namespace detail

// Every function below has a try_ form: noexcept, returning a status with the message the throwing form's
// argument_error carries (posenc/status.hpp); nothing is written when it is not ok.

/// The T5 bucket of relative position r = key position - query position, bit for bit as the reference
/// `relative_position_bucket`:
///   bidirectional: nb = num_buckets / 2, the bucket starts at nb if r > 0, n = |r|;
///   causal:        nb = num_buckets, n = max(-r, 0) (keys after the query share bucket 0);
///   e = nb / 2; n < e: n; else min(e + trunc(logf(n / e) / log(max_distance / e) * (nb - e)), nb - 1),
/// with every step of the log branch in float32 as the reference computes it (this decides the bucket where
/// the exact value is an integer: for the defaults n = 16, 32, 64). See detail::math::t5_bucketer.
/// Throws argument_error if a direction has fewer than 2 buckets or max_distance <= e.
///
/// **Example**
/// ```
/// posenc::t5_relative_bucket(-20, true);    // 10: 20 tokens back, log bucket of the "past" half
/// posenc::t5_relative_bucket(20, true);     // 26 = 16 + 10
/// posenc::t5_relative_bucket(5, false);     // 0: a causal decoder puts every future key in bucket 0
/// ```
///
/// try_t5_relative_bucket (without exceptions): `out` is set on success, unchanged on error. No default arguments
/// (the output comes last).
inline status try_t5_relative_bucket(std::int64_t relative_position, bool bidirectional, index_t num_buckets,
                                     index_t max_distance, std::int64_t& out) noexcept {
  POSENC_TRY(detail::check_t5_buckets("t5_relative_bucket", bidirectional, num_buckets, max_distance));
  out = detail::math::t5_bucketer(bidirectional, num_buckets, max_distance)(relative_position);
  return {};
}
inline std::int64_t t5_relative_bucket(std::int64_t relative_position, bool bidirectional, index_t num_buckets = 32,
                                       index_t max_distance = 128) {
  std::int64_t out = 0;
  detail::throw_if_error(try_t5_relative_bucket(relative_position, bidirectional, num_buckets, max_distance, out));
  return out;
}

/// Writes out[i, j] = t5_relative_bucket(j - (i + query_offset), ...) for an [Lq, Lk] output (Hugging Face
/// `compute_bias` with cache_position = query_offset + arange(Lq): the query of row i sits at i +
/// query_offset, key j at j). `out`: strided_view<I, 2> or a rank-2 Eigen tensor, I = int64 or int32.
/// Throws argument_error, writing nothing, on an invalid config or view, or query_offset < 0 or overflowing.
///
/// **Example**
/// ```
/// Eigen::Tensor<std::int64_t, 2, Eigen::RowMajor> b(1, 40);    // one decode step after 39 cached tokens
/// posenc::t5_bucket_table(b, {false, 32, 128}, 39);
/// ```
template <class Out>
status try_t5_bucket_table(Out&& out, const t5_bucket_config& cfg, index_t query_offset = 0) noexcept {
  constexpr const char* fn = "t5_bucket_table";
  auto vo = as_view(out);
  using V = decltype(vo);
  using I = typename V::element_type;
  static_assert(V::rank == 2, "posenc::t5_bucket_table: out has rank 2 (Lq, Lk)");
  static_assert(std::is_same_v<I, std::int64_t> || std::is_same_v<I, std::int32_t>,
                "posenc::t5_bucket_table: out holds int64 or int32");
  POSENC_TRY(detail::check_t5_buckets(fn, cfg.bidirectional, cfg.num_buckets, cfg.max_distance));
  POSENC_TRY(detail::check_view(fn, "out", vo, true));
  POSENC_TRY(detail::check_t5_offsets(fn, vo.extent(0), query_offset));
  const detail::math::t5_bucketer bucket(cfg.bidirectional, cfg.num_buckets, cfg.max_distance);
  for (index_t i = 0; i < vo.extent(0); ++i)
    for (index_t j = 0; j < vo.extent(1); ++j) vo(i, j) = static_cast<I>(bucket(j - (i + query_offset)));
  return {};
}
template <class Out>
void t5_bucket_table(Out&& out, const t5_bucket_config& cfg, index_t query_offset = 0) {
  detail::throw_if_error(try_t5_bucket_table(out, cfg, query_offset));
}

/// The learned part of T5's relative attention bias: a [num_buckets, H] table (Hugging Face
/// `relative_attention_bias = nn.Embedding(num_buckets, n_heads)`) producing bias[h, i, j] =
/// table[bucket(j - (i + query_offset)), h], and its backward pass into an accumulated table gradient. C is the
/// storage type of the table and its gradient (float or double). add_t5_bias adds the bias straight into
/// attention scores.
///
/// **Example**
/// ```
/// posenc::t5_relative_bias<> rel(8, {true, 32, 128});   // encoder layer, 8 heads
/// rel.init_normal(42, 1.0 / std::sqrt(512.0));          // T5 init: factor * d_model^-0.5
/// Eigen::Tensor<float, 3, Eigen::RowMajor> bias(8, 64, 64);
/// rel.forward(bias);                                    // scores[n, h] += bias[h]
/// rel.backward(grad_bias);                              // rel.table_grad() += per-bucket sums
/// ```
template <class C = float>
class t5_relative_bias {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "posenc::t5_relative_bias: C is float or double");

 public:
  /// A zero table. Throws argument_error if num_heads <= 0 or the bucketing is invalid (std::bad_alloc if the
  /// table cannot be allocated).
  explicit t5_relative_bias(index_t num_heads, const t5_bucket_config& cfg = {}) {
    detail::throw_if_error(try_build(num_heads, cfg));
  }

  /// The constructor without exceptions: `out` holds the module on success, is unchanged on error (an
  /// out_of_memory status when the table cannot be allocated).
  ///
  /// **Example**
  /// ```
  /// posenc::t5_relative_bias<> rel;
  /// if (posenc::status s = posenc::t5_relative_bias<>::try_create(8, {false, 32, 128}, rel); !s) return s;
  /// ```
  static status try_create(index_t num_heads, const t5_bucket_config& cfg, t5_relative_bias& out) noexcept {
    t5_relative_bias r;
    POSENC_TRY(r.try_build(num_heads, cfg));
    out = std::move(r);
    return {};
  }

  /// An empty module (no heads, no table), to be filled by try_create; forward, backward and add_t5_bias
  /// reject it.
  t5_relative_bias() = default;

  /// The bucketing it was built with.
  const t5_bucket_config& config() const { return cfg_; }
  /// H, the columns of the table.
  index_t num_heads() const { return heads_; }
  /// The rows of the table (config().num_buckets).
  index_t num_buckets() const { return cfg_.num_buckets; }
  /// Whether this is the default-constructed module without a table.
  bool empty() const { return heads_ == 0; }

  /// The [num_buckets, H] table, writable (load it, or let an optimiser update it).
  strided_view<C, 2> table() { return strided_view<C, 2>(table_.data(), {cfg_.num_buckets, heads_}); }
  /// The [num_buckets, H] table, read-only.
  strided_view<const C, 2> table() const { return strided_view<const C, 2>(table_.data(), {cfg_.num_buckets, heads_}); }
  /// The accumulated [num_buckets, H] gradient of the table.
  strided_view<const C, 2> table_grad() const { return strided_view<const C, 2>(grad_.data(), {cfg_.num_buckets, heads_}); }
  /// Zeroes the accumulated table gradient.
  void zero_grad() {
    for (C& g : grad_) g = C(0);
  }

  /// Fills the table with stddev * N(0, 1) from detail::math::normal_generator(seed) (std::mt19937_64 and
  /// Box-Muller, identical on every standard library), row-major. Throws argument_error if stddev is not finite
  /// or < 0.
  void init_normal(std::uint64_t seed, double stddev = 1.0) { detail::throw_if_error(try_init_normal(seed, stddev)); }

  /// init_normal without exceptions: the table is unchanged on error.
  status try_init_normal(std::uint64_t seed, double stddev = 1.0) noexcept {
    if (!(std::isfinite(stddev) && stddev >= 0.0))
      return detail::fail("t5_relative_bias::init_normal", "stddev=", stddev, " must be finite and >= 0");
    detail::math::normal_generator gen(seed);
    for (C& v : table_) v = static_cast<C>(stddev * gen());
    return {};
  }

  /// bias[h, i, j] = table[bucket(j - (i + query_offset)), h] for bias [H, Lq, Lk] (Hugging Face `compute_bias`
  /// without its leading batch dimension); query i sits at i + query_offset (decoding with a cache), key j at j.
  /// `bias`: strided_view<T, 3> or a rank-3 Eigen tensor, T float, double, Eigen::half, Eigen::bfloat16.
  /// Throws argument_error, writing nothing, if extent 0 != H, the view is invalid or overlaps the table,
  /// query_offset < 0, or the module is empty.
  template <class Out>
  void forward(Out&& bias, index_t query_offset = 0) const {
    detail::throw_if_error(try_forward<Out&>(bias, query_offset));
  }

  /// forward without exceptions: nothing is written when the status is not ok.
  template <class Out>
  status try_forward(Out&& bias, index_t query_offset = 0) const noexcept {
    constexpr const char* fn = "t5_relative_bias::forward";
    auto vo = as_view(bias);
    using V = decltype(vo);
    using T = typename V::element_type;
    static_assert(V::rank == 3, "posenc::t5_relative_bias::forward: bias has rank 3 (H, Lq, Lk)");
    static_assert(!std::is_const_v<T>, "posenc::t5_relative_bias::forward: bias must be writable");
    static_assert(detail::simd::is_storage_v<T>, "posenc::t5_relative_bias::forward: float, double, half or bfloat16");
    POSENC_TRY(check_module(fn));
    POSENC_TRY(check(fn, "bias", vo, true, query_offset));
    if (detail::spans_overlap(vo, table_.data(), table_.size())) return detail::fail(fn, "bias overlaps the table");
    if (vo.empty()) return {};
    run(std::false_type{}, detail::t5_as_4d(vo), positions::offset(query_offset));
    return {};
  }

  /// Backward pass: table_grad[bucket(j - (i + query_offset)), h] += grad_bias[h, i, j] for every (h, i, j),
  /// i.e. each table entry receives the sum of the gradients of the positions in its bucket (accumulated
  /// across calls until zero_grad). Throws argument_error, changing nothing, as forward does.
  template <class G>
  void backward(G&& grad_bias, index_t query_offset = 0) {
    detail::throw_if_error(try_backward(grad_bias, query_offset));
  }

  /// backward without exceptions: the gradient is unchanged when the status is not ok.
  template <class G>
  status try_backward(G&& grad_bias, index_t query_offset = 0) noexcept {
    constexpr const char* fn = "t5_relative_bias::backward";
    auto vg = as_view(grad_bias);
    using V = decltype(vg);
    using T = std::remove_const_t<typename V::element_type>;
    static_assert(V::rank == 3, "posenc::t5_relative_bias::backward: grad_bias has rank 3 (H, Lq, Lk)");
    POSENC_TRY(check_module(fn));
    POSENC_TRY(check(fn, "grad_bias", vg, false, query_offset));
    using A = std::conditional_t<std::is_same_v<C, double>, double, detail::simd::acc_t<T>>;
    const detail::math::t5_bucketer bucket(cfg_.bidirectional, cfg_.num_buckets, cfg_.max_distance);
    for (index_t i = 0; i < vg.extent(1); ++i)
      for (index_t j = 0; j < vg.extent(2); ++j) {
        C* row = grad_.data() + bucket(j - (i + query_offset)) * heads_;
        for (index_t h = 0; h < heads_; ++h)
          row[h] = static_cast<C>(static_cast<A>(row[h]) + detail::simd::load_as<A>(vg(h, i, j)));
      }
    return {};
  }

 private:
  friend struct detail::t5_bias_access;

  status try_build(index_t num_heads, const t5_bucket_config& cfg) noexcept {
    constexpr const char* fn = "t5_relative_bias";
    if (num_heads <= 0) return detail::fail(fn, "num_heads=", num_heads, " must be > 0");
    POSENC_TRY(detail::check_t5_buckets(fn, cfg.bidirectional, cfg.num_buckets, cfg.max_distance));
    if (cfg.num_buckets > static_cast<index_t>(table_.max_size()) / num_heads)
      return detail::fail(fn, "num_buckets=", cfg.num_buckets, " times num_heads=", num_heads, " overflows");
    return detail::guard_alloc(fn, [&]() -> status {
      std::vector<C> table(static_cast<std::size_t>(cfg.num_buckets * num_heads), C(0));
      std::vector<C> grad(table.size(), C(0));
      std::vector<std::int64_t> first =
          detail::t5_bucket_firsts(detail::math::t5_bucketer(cfg.bidirectional, cfg.num_buckets, cfg.max_distance));
      cfg_ = cfg;
      heads_ = num_heads;
      table_ = std::move(table);
      grad_ = std::move(grad);
      first_ = std::move(first);
      return {};
    });
  }

  status check_module(const char* fn) const {
    if (empty()) return detail::fail(fn, "the module is empty (default-constructed, not filled by try_create)");
    return {};
  }

  template <class V>
  status check(const char* fn, const char* name, const V& v, bool output, index_t query_offset) const {
    POSENC_TRY(detail::check_view(fn, name, v, output));
    if (v.extent(0) != heads_)
      return detail::fail(fn, name, " heads (extent 0)=", v.extent(0), " does not match num_heads=", heads_);
    return detail::check_t5_offsets(fn, v.extent(1), query_offset);
  }

  /// The kernel over a checked, non-empty [N, H, Lq, Lk] view: writes (forward) or adds (add_t5_bias).
  template <bool Add, class T>
  void run(std::bool_constant<Add> mode, const strided_view<T, 4>& out, const positions& pos) const {
    const detail::t5_runs runs{first_.data(), static_cast<std::int64_t>(first_.size()) - 1, cfg_.bidirectional};
    const C* table = table_.data();
    const index_t heads = heads_;
    detail::run_t5_rows(mode, table, heads, runs, pos, out);
  }

  t5_bucket_config cfg_;
  index_t heads_ = 0;
  std::vector<C> table_;
  std::vector<C> grad_;
  std::vector<std::int64_t> first_;  ///< bucket runs of one direction (detail::t5_bucket_firsts)
};

namespace detail {

/// add_t5_bias's way into the module's table and bucket runs.
struct t5_bias_access {
  template <class C, class X>
  static status add(const t5_relative_bias<C>& rel, X&& scores, const positions& query_pos) noexcept {
    constexpr const char* fn = "add_t5_bias";
    const auto sv = as_view(std::forward<X>(scores));
    using SV = decltype(sv);
    using T = typename SV::element_type;
    static_assert(SV::rank == 3 || SV::rank == 4, "posenc::add_t5_bias: scores are [N, H, Lq, Lk] or [H, Lq, Lk]");
    static_assert(!std::is_const_v<T>, "posenc::add_t5_bias: the scores must be writable");
    static_assert(simd::is_storage_v<T>, "posenc::add_t5_bias: scores of float, double or a 16-bit storage type");
    POSENC_TRY(rel.check_module(fn));
    POSENC_TRY(check_view(fn, "scores", sv, true));
    const strided_view<T, 4> v = t5_as_4d(sv);
    if (v.extent(1) != rel.heads_)
      return fail(fn, "scores heads (extent ", SV::rank - 3, ")=", v.extent(1), " does not match num_heads=",
                  rel.heads_);
    // validate_positions skips empty tensors; a negative offset is rejected whatever the shape.
    if (query_pos.kind() == positions::form::offset && query_pos.start() < 0)
      return fail(fn, "query offset=", query_pos.start(), " must be >= 0");
    index_t max_pos = -1;
    POSENC_TRY(validate_positions(fn, query_pos, v.extent(0), v.extent(2), max_pos));
    if (spans_overlap(sv, rel.table_.data(), rel.table_.size())) return fail(fn, "scores overlap the table");
    if (max_pos < 0 || v.extent(3) == 0) return {};
    rel.run(std::true_type{}, v, query_pos);
    return {};
  }
};

}  // namespace detail

/// Adds the T5 relative-position bias to attention scores in place, before the softmax:
///   scores[n, h, i, j] += table[bucket(j - q(n, i)), h]
/// where q(n, i) = query_pos.at(n, i) is the position of query i of batch row n and key j sits at position j
/// (Hugging Face `T5Attention.compute_bias`: relative_position = memory_position - context_position, bucketed
/// by `_relative_position_bucket` with the module's bidirectional / causal configuration, then `position_bias`
/// added to the scores). Each element is widened to float (double if the scores or the table are double), the
/// table value added, and the sum rounded to T (16-bit types through float, as everywhere in posenc: two roundings).
/// Query positions: positions::offset(P) (P cached keys before the Lq new queries, the same for every row:
/// HF's cache_position = P + arange(Lq)), positions::per_sequence (continuous batching: row n has its own
/// cache length) or positions::per_token (an explicit position per query).
/// `scores`: strided_view<T, 4> [N, H, Lq, Lk] (any strides: e.g. a padded Lk row stride) or [H, Lq, Lk]
/// (N = 1), or an Eigen tensor of rank 4 or 3; T float, double or a 16-bit storage type; only the viewed
/// elements are read and written.
/// Throws argument_error, writing nothing, if the module is empty, the head extent is not num_heads(), the
/// view is invalid or overlaps the table, or the positions are negative, overflow, or do not match (N, Lq).
///
/// **Example**
/// ```
/// // decode: one new query per sequence after past[n] cached tokens, scores [N, H, 1, Lk]
/// posenc::add_t5_bias(rel, scores, posenc::positions::per_sequence(past, N));
/// ```
template <class C, class X>
status try_add_t5_bias(const t5_relative_bias<C>& rel, X&& scores,
                       const positions& query_pos = positions::offset(0)) noexcept {
  return detail::t5_bias_access::add(rel, std::forward<X>(scores), query_pos);
}
template <class C, class X>
void add_t5_bias(const t5_relative_bias<C>& rel, X&& scores, const positions& query_pos = positions::offset(0)) {
  detail::throw_if_error(try_add_t5_bias<C, X&>(rel, scores, query_pos));
}

POSENC_END_NAMESPACE
