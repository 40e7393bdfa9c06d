// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// T5 relative-position bias (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified
// Text-to-Text Transformer", sec. 2.1; reference: Mesh TensorFlow `_relative_position_bucket`, Hugging Face
// transformers `T5Attention._relative_position_bucket` / `compute_bias`): relative positions key - query are
// mapped to log-spaced buckets, each bucket has one learned scalar per head, and the [H, Lq, Lk] bias is added
// to the attention logits.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/kernels.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/random.hpp"
#include "posenc/detail/math/t5_bucket.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

/// The bucketing of one T5 attention layer. T5 encoders are bidirectional, decoders causal; T5 uses 32
/// buckets and max_distance 128 (`relative_attention_num_buckets`, `relative_attention_max_distance`).
struct t5_bucket_config {
  bool bidirectional = true;
  index_t num_buckets = 32;    ///< total buckets; bidirectional splits them (floor(num_buckets/2) per direction)
  index_t max_distance = 128;  ///< distances >= max_distance share the last bucket of their direction
};

namespace detail {

inline void check_t5_buckets(const char* fn, bool bidirectional, index_t num_buckets, index_t max_distance) {
  const index_t nb = bidirectional ? num_buckets / 2 : num_buckets;
  if (num_buckets < 0 || nb < 2)
    throw_invalid_argument(fn, "num_buckets=", num_buckets, " must be >= ", bidirectional ? 4 : 2,
                           bidirectional ? " (bidirectional: at least 2 per direction)" : " (causal)");
  if (max_distance <= nb / 2)
    throw_invalid_argument(fn, "max_distance=", max_distance, " must exceed the exact range ", nb / 2,
                           " (num_buckets per direction / 2)");
}

/// Query i sits at i + query_offset, key j at j: the relative position j - (i + query_offset), the extremes
/// of which must fit int64.
inline void check_t5_offsets(const char* fn, index_t lq, index_t query_offset) {
  if (query_offset < 0) throw_invalid_argument(fn, "query_offset=", query_offset, " must be >= 0");
  constexpr index_t big = std::numeric_limits<index_t>::max();
  if (lq > 0 && query_offset > big - (lq - 1))
    throw_invalid_argument(fn, "query_offset=", query_offset, " + query length ", lq, " overflows int64");
}

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

}  // namespace detail

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
/// posenc::t5_relative_bucket(-20, true);    // 11: 20 tokens back, log bucket of the "past" half
/// posenc::t5_relative_bucket(20, true);     // 27 = 16 + 11
/// posenc::t5_relative_bucket(5, false);     // 0: a causal decoder puts every future key in bucket 0
/// ```
inline std::int64_t t5_relative_bucket(std::int64_t relative_position, bool bidirectional, index_t num_buckets = 32,
                                       index_t max_distance = 128) {
  detail::check_t5_buckets("t5_relative_bucket", bidirectional, num_buckets, max_distance);
  return detail::math::t5_bucketer(bidirectional, num_buckets, max_distance)(relative_position);
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
void t5_bucket_table(Out&& out, const t5_bucket_config& cfg, index_t query_offset = 0) {
  constexpr const char* fn = "t5_bucket_table";
  auto vo = as_view(out);
  using V = decltype(vo);
  using I = typename V::element_type;
  static_assert(V::rank == 2, "posenc::t5_bucket_table: out has rank 2 (Lq, Lk)");
  static_assert(std::is_same_v<I, std::int64_t> || std::is_same_v<I, std::int32_t>,
                "posenc::t5_bucket_table: out holds int64 or int32");
  detail::check_t5_buckets(fn, cfg.bidirectional, cfg.num_buckets, cfg.max_distance);
  detail::throw_if_error(detail::check_view(fn, "out", vo, true));
  detail::check_t5_offsets(fn, vo.extent(0), query_offset);
  const detail::math::t5_bucketer bucket(cfg.bidirectional, cfg.num_buckets, cfg.max_distance);
  for (index_t i = 0; i < vo.extent(0); ++i)
    for (index_t j = 0; j < vo.extent(1); ++j) vo(i, j) = static_cast<I>(bucket(j - (i + query_offset)));
}

/// The learned part of T5's relative attention bias: a [num_buckets, H] table (Hugging Face
/// `relative_attention_bias = nn.Embedding(num_buckets, n_heads)`) producing bias[h, i, j] =
/// table[bucket(j - (i + query_offset)), h], and its backward pass into an accumulated table gradient. C is the
/// storage type of the table and its gradient (float or double).
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
  /// A zero table. Throws argument_error if num_heads <= 0 or the bucketing is invalid.
  explicit t5_relative_bias(index_t num_heads, const t5_bucket_config& cfg = {}) : cfg_(cfg), heads_(num_heads) {
    constexpr const char* fn = "t5_relative_bias";
    if (num_heads <= 0) detail::throw_invalid_argument(fn, "num_heads=", num_heads, " must be > 0");
    detail::check_t5_buckets(fn, cfg.bidirectional, cfg.num_buckets, cfg.max_distance);
    if (cfg.num_buckets > static_cast<index_t>(table_.max_size()) / num_heads)
      detail::throw_invalid_argument(fn, "num_buckets=", cfg.num_buckets, " times num_heads=", num_heads, " overflows");
    table_.assign(static_cast<std::size_t>(cfg.num_buckets * num_heads), C(0));
    grad_.assign(table_.size(), C(0));
    first_ = detail::t5_bucket_firsts(detail::math::t5_bucketer(cfg.bidirectional, cfg.num_buckets, cfg.max_distance));
  }

  const t5_bucket_config& config() const { return cfg_; }
  index_t num_heads() const { return heads_; }
  index_t num_buckets() const { return cfg_.num_buckets; }

  /// The [num_buckets, H] table, writable (load it, or let an optimiser update it).
  strided_view<C, 2> table() { return strided_view<C, 2>(table_.data(), {cfg_.num_buckets, heads_}); }
  strided_view<const C, 2> table() const { return strided_view<const C, 2>(table_.data(), {cfg_.num_buckets, heads_}); }
  /// The accumulated [num_buckets, H] gradient of the table.
  strided_view<const C, 2> table_grad() const { return strided_view<const C, 2>(grad_.data(), {cfg_.num_buckets, heads_}); }
  void zero_grad() {
    for (C& g : grad_) g = C(0);
  }

  /// Fills the table with stddev * N(0, 1) from detail::math::normal_generator(seed) (std::mt19937_64 and
  /// Box-Muller, identical on every standard library), row-major. Throws argument_error if stddev is not finite
  /// or < 0.
  void init_normal(std::uint64_t seed, double stddev = 1.0) {
    if (!(std::isfinite(stddev) && stddev >= 0.0))
      detail::throw_invalid_argument("t5_relative_bias::init_normal", "stddev=", stddev, " must be finite and >= 0");
    detail::math::normal_generator gen(seed);
    for (C& v : table_) v = static_cast<C>(stddev * gen());
  }

  /// bias[h, i, j] = table[bucket(j - (i + query_offset)), h] for bias [H, Lq, Lk] (Hugging Face `compute_bias`
  /// without its leading batch dimension); query i sits at i + query_offset (decoding with a cache), key j at j.
  /// `bias`: strided_view<T, 3> or a rank-3 Eigen tensor, T float, double, Eigen::half, Eigen::bfloat16.
  /// Throws argument_error, writing nothing, if extent 0 != H, the view is invalid, or query_offset < 0.
  template <class Out, class Dispatch = detail::default_dispatch>
  void forward(Out&& bias, index_t query_offset = 0) const {
    constexpr const char* fn = "t5_relative_bias::forward";
    auto vo = as_view(bias);
    using V = decltype(vo);
    using T = typename V::element_type;
    static_assert(V::rank == 3, "posenc::t5_relative_bias::forward: bias has rank 3 (H, Lq, Lk)");
    static_assert(!std::is_const_v<T>, "posenc::t5_relative_bias::forward: bias must be writable");
    static_assert(detail::simd::is_storage_v<T>, "posenc::t5_relative_bias::forward: float, double, half or bfloat16");
    check(fn, "bias", vo, true, query_offset);
    if (vo.empty()) return;
    const detail::t5_runs runs{first_.data(), static_cast<std::int64_t>(first_.size()) - 1, cfg_.bidirectional};
    const C* table = table_.data();
    const index_t heads = heads_;
    Dispatch::call([&](auto k) { t5_expand(k, table, heads, runs, query_offset, vo); });
  }

  /// Backward pass: table_grad[bucket(j - (i + query_offset)), h] += grad_bias[h, i, j] for every (h, i, j),
  /// i.e. each table entry receives the sum of the gradients of the positions in its bucket (accumulated
  /// across calls until zero_grad). Throws argument_error, changing nothing, as forward does.
  template <class G>
  void backward(G&& grad_bias, index_t query_offset = 0) {
    constexpr const char* fn = "t5_relative_bias::backward";
    auto vg = as_view(grad_bias);
    using V = decltype(vg);
    using T = std::remove_const_t<typename V::element_type>;
    static_assert(V::rank == 3, "posenc::t5_relative_bias::backward: grad_bias has rank 3 (H, Lq, Lk)");
    check(fn, "grad_bias", vg, false, query_offset);
    using A = std::conditional_t<std::is_same_v<C, double>, double, detail::simd::acc_t<T>>;
    const detail::math::t5_bucketer bucket(cfg_.bidirectional, cfg_.num_buckets, cfg_.max_distance);
    for (index_t i = 0; i < vg.extent(1); ++i)
      for (index_t j = 0; j < vg.extent(2); ++j) {
        C* row = grad_.data() + bucket(j - (i + query_offset)) * heads_;
        for (index_t h = 0; h < heads_; ++h)
          row[h] = static_cast<C>(static_cast<A>(row[h]) + detail::simd::load_as<A>(vg(h, i, j)));
      }
  }

 private:
  template <class V>
  void check(const char* fn, const char* name, const V& v, bool output, index_t query_offset) const {
    detail::throw_if_error(detail::check_view(fn, name, v, output));
    if (v.extent(0) != heads_)
      detail::throw_invalid_argument(fn, name, " heads (extent 0)=", v.extent(0), " does not match num_heads=", heads_);
    detail::check_t5_offsets(fn, v.extent(1), query_offset);
  }

  t5_bucket_config cfg_;
  index_t heads_;
  std::vector<C> table_;
  std::vector<C> grad_;
  std::vector<std::int64_t> first_;  ///< bucket runs of one direction (detail::t5_bucket_firsts)
};

POSENC_END_NAMESPACE
