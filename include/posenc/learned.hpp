// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Learned absolute position embeddings (BERT, GPT-2, OPT): a trainable [max_positions, D] table added to the
// token embeddings, with an optional scale, layer norm and dropout, its backward pass into the input and a
// sparse, accumulated table gradient, and a deterministic initialisation. Loading and saving the table as
// .npy is in posenc/io/npy_tensors.hpp (load_npy_table / save_npy_table).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/additive.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/random.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/learned_config.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

template <class C>
class learned_position_embedding;

/// What a training forward pass keeps for its backward pass: the table row of every token, the normalised
/// values and 1/sigma of the layer norm (double), and the dropout mask. The caller owns it (one per
/// micro-batch in flight); the vectors are reused, so a cache that has seen the shape before is refilled
/// without allocating. Opaque except for the accessors.
class learned_cache {
 public:
  /// True once a forward has filled it (backward also checks that it was this module's).
  bool filled() const { return owner_ != nullptr; }
  /// N of the forward that filled it.
  index_t batch() const { return n_; }
  /// L of the forward that filled it.
  index_t length() const { return l_; }
  /// D of the module that filled it.
  index_t dim() const { return d_; }
  /// Table row (position + position_offset) of token (n, l), row-major over (N, L).
  const std::vector<index_t>& rows() const { return rows_; }
  /// Dropout mask (1 = kept) over (N, L, D) when dropout was applied, else empty.
  const std::vector<unsigned char>& keep() const { return keep_; }

 private:
  template <class C>
  friend class learned_position_embedding;

  const void* owner_ = nullptr;
  index_t n_ = 0;
  index_t l_ = 0;
  index_t d_ = 0;
  bool dropped_ = false;
  double keep_scale_ = 1.0;
  std::vector<index_t> rows_;
  std::vector<double> xhat_;
  std::vector<double> rstd_;
  std::vector<unsigned char> keep_;
};

/// The module: table E [max_positions + position_offset, D] in C (float or double), optional layer-norm
/// parameters gamma, beta [D], their accumulated gradients, and the forward/backward passes.
///   forward:  h = x + scale * E[p + offset];  z = LN(h) = gamma * (h - mean(h)) / sqrt(var(h) + eps) + beta
///             (or z = h);  y = dropout(z) in training mode (inverted: kept values times 1/(1-p)).
///   backward: grad_z = grad_y * mask / (1-p);  LN: g = gamma * grad_z,
///             grad_h = rstd * (g - mean(g) - xhat * mean(g * xhat)), grad_gamma += grad_z * xhat,
///             grad_beta += grad_z;  grad_x = grad_h;  grad_E[row] += scale * grad_h (only rows used).
/// Sources: BERT `BertEmbeddings`, GPT-2 `wpe` (positions = past_length + arange(L), i.e.
/// positions::offset(past_length)), OPT `OPTLearnedPositionalEmbedding` (offset 2), torch.nn.LayerNorm (biased
/// variance), torch.nn.Dropout. The element sum is in float (double for double tensors); the layer norm
/// (statistics, normalisation, backward) in double. forward is const and may run concurrently (each call with
/// its own cache and generator); backward and zero_grad write the gradients and must not overlap other calls.
/// OPT marks padding tokens with position -1 (row 1); posenc positions are >= 0, so give such tokens any valid
/// position (their outputs are masked), or build the table with position_offset 0 and pass OPT's row indices.
///
/// **Example**
/// ```
/// posenc::learned_config cfg;                 // GPT-2 small: wpe [1024, 768]
/// cfg.max_positions = 1024; cfg.dim = 768; cfg.dropout = 0.1;
/// posenc::learned_position_embedding<> wpe(cfg);
/// wpe.init_normal(1234);                     // N(0, 0.02^2), identical on every platform
/// std::mt19937_64 rng(7);
/// posenc::learned_cache cache;
/// wpe.forward(h, posenc::positions::offset(past), true, rng, cache);    // h: (N, L, 768), in place
/// wpe.backward(grad_h, grad_h, cache);                                 // grad_h: in place; wpe.table_grad()
/// ```
template <class C = float>
class learned_position_embedding {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>,
                "posenc::learned_position_embedding: C is float or double");

 public:
  /// A zero table, gamma = 1, beta = 0, zero gradients. Throws argument_error if max_positions or dim <= 0,
  /// position_offset < 0, scale not finite, eps not finite or <= 0 (with layer_norm), dropout outside [0, 1],
  /// or the table size overflows (std::bad_alloc when the vectors cannot be allocated).
  explicit learned_position_embedding(const learned_config& cfg) { detail::throw_if_error(try_build(cfg)); }

  /// The constructor without exceptions: `out` holds the module on success, is unchanged on error (an
  /// out_of_memory status when the table cannot be allocated).
  ///
  /// **Example**
  /// ```
  /// posenc::learned_position_embedding<> wpe;
  /// if (posenc::status s = posenc::learned_position_embedding<>::try_create(cfg, wpe); !s) return s;
  /// ```
  static status try_create(const learned_config& cfg, learned_position_embedding& out) noexcept {
    learned_position_embedding m;
    POSENC_TRY(m.try_build(cfg));
    out = std::move(m);
    return {};
  }

  /// An empty module (no rows, dim 0), to be filled by try_create; its forward accepts only empty x.
  learned_position_embedding() = default;

  /// The configuration it was built with.
  const learned_config& config() const { return cfg_; }
  /// Rows of the table: max_positions + position_offset.
  index_t rows() const { return rows_; }
  /// D, the features per token.
  index_t dim() const { return cfg_.dim; }

  /// The [rows, D] table, writable (load it, or let an optimiser update it).
  strided_view<C, 2> table() { return strided_view<C, 2>(table_.data(), {rows_, cfg_.dim}); }
  /// The [rows, D] table, read-only.
  strided_view<const C, 2> table() const { return strided_view<const C, 2>(table_.data(), {rows_, cfg_.dim}); }
  /// Layer-norm weight [D] (used only with cfg.layer_norm), writable.
  strided_view<C, 1> gamma() { return strided_view<C, 1>(gamma_.data(), {cfg_.dim}); }
  /// Layer-norm weight [D], read-only.
  strided_view<const C, 1> gamma() const { return strided_view<const C, 1>(gamma_.data(), {cfg_.dim}); }
  /// Layer-norm bias [D] (used only with cfg.layer_norm), writable.
  strided_view<C, 1> beta() { return strided_view<C, 1>(beta_.data(), {cfg_.dim}); }
  /// Layer-norm bias [D], read-only.
  strided_view<const C, 1> beta() const { return strided_view<const C, 1>(beta_.data(), {cfg_.dim}); }

  /// Accumulated gradient of the table [rows, D]: non-zero only in the rows listed by touched_rows().
  strided_view<const C, 2> table_grad() const { return strided_view<const C, 2>(grad_.data(), {rows_, cfg_.dim}); }
  /// Accumulated gradient of gamma [D]; stays zero without layer norm.
  strided_view<const C, 1> gamma_grad() const { return strided_view<const C, 1>(grad_gamma_.data(), {cfg_.dim}); }
  /// Accumulated gradient of beta [D]; stays zero without layer norm.
  strided_view<const C, 1> beta_grad() const { return strided_view<const C, 1>(grad_beta_.data(), {cfg_.dim}); }
  /// Rows that received a gradient since the last zero_grad, in first-use order (a sparse optimiser's rows).
  const std::vector<index_t>& touched_rows() const { return touched_rows_; }

  /// Zeroes the gradients: the touched rows of the table gradient (O(rows used)), and gamma/beta gradients.
  void zero_grad() {
    for (index_t r : touched_rows_) {
      for (index_t d = 0; d < cfg_.dim; ++d) grad_[static_cast<std::size_t>(r * cfg_.dim + d)] = C(0);
      touched_[static_cast<std::size_t>(r)] = 0;
    }
    touched_rows_.clear();
    for (C& g : grad_gamma_) g = C(0);
    for (C& g : grad_beta_) g = C(0);
  }

  /// Fills the table with stddev * N(0, 1), row-major, from detail::math::normal_generator(seed):
  /// std::mt19937_64(seed) and a Box-Muller transform written in posenc, so the same seed gives the same
  /// table with libstdc++, libc++ and MSVC (std::normal_distribution does not). GPT-2 / BERT initialise
  /// position embeddings with N(0, 0.02^2). Fails with invalid_argument, changing nothing, if stddev is not
  /// finite or < 0.
  status try_init_normal(std::uint64_t seed, double stddev = 0.02) noexcept {
    if (!(std::isfinite(stddev) && stddev >= 0.0))
      return detail::fail("learned_position_embedding::init_normal", "stddev=", stddev, " must be finite and >= 0");
    detail::math::normal_generator gen(seed);
    for (C& v : table_) v = static_cast<C>(stddev * gen());
    return {};
  }
  /// The throwing form of try_init_normal: argument_error with the same message.
  void init_normal(std::uint64_t seed, double stddev = 0.02) { detail::throw_if_error(try_init_normal(seed, stddev)); }

  /// Evaluation forward in place: x = LN(x + scale * E[p + offset]) (no dropout, nothing cached).
  /// `x`: (N, L, D) or (L, D), strided_view or Eigen tensor, T float, double, Eigen::half, Eigen::bfloat16.
  /// Fails with invalid_argument, writing nothing, if D != dim, or a position is negative or >= max_positions.
  /// Every forward and backward has a try_ form: noexcept, returning a status with the message the throwing
  /// form's argument_error carries; nothing (x, cache, rng, gradients) is changed when it is not ok.
  template <class X>
  status try_forward(X&& x, const positions& pos) const noexcept {
    const auto t = detail::make_add_target(x, x);
    return run_forward("learned_position_embedding::forward", t, "x", "x", pos, false, nullptr, nullptr);
  }
  /// The throwing form of try_forward(x, pos): argument_error with the same message.
  template <class X>
  void forward(X&& x, const positions& pos) const {
    detail::throw_if_error(try_forward<X&>(x, pos));
  }

  /// Evaluation forward out of place (`out` must not overlap `in`).
  template <class X, class Y>
  status try_forward(X&& in, Y&& out, const positions& pos) const noexcept {
    const auto t = detail::make_add_target(in, out);
    return run_forward("learned_position_embedding::forward", t, "in", "out", pos, false, nullptr, nullptr);
  }
  /// The throwing form of try_forward(in, out, pos): argument_error with the same message.
  template <class X, class Y>
  void forward(X&& in, Y&& out, const positions& pos) const {
    detail::throw_if_error(try_forward<X&, Y&>(in, out, pos));
  }

  /// Training (train = true) or evaluation forward in place, filling `cache` for backward. In training mode
  /// with dropout p > 0, one draw of `rng` per element in (n, l, d) order decides the mask (dropped iff
  /// (draw >> 11) * 2^-53 < p), so the same seed gives the same mask everywhere; the mask is kept in `cache`
  /// and used by backward. Fails with invalid_argument, changing nothing (x, cache, rng), as forward above;
  /// the cache's vectors grow only when it has not seen so large a shape (out_of_memory, changing nothing,
  /// when they cannot).
  template <class X>
  status try_forward(X&& x, const positions& pos, bool train, std::mt19937_64& rng, learned_cache& cache) const noexcept {
    const auto t = detail::make_add_target(x, x);
    return run_forward("learned_position_embedding::forward", t, "x", "x", pos, train, &rng, &cache);
  }
  /// The throwing form of try_forward(x, pos, train, rng, cache): argument_error with the same message.
  template <class X>
  void forward(X&& x, const positions& pos, bool train, std::mt19937_64& rng, learned_cache& cache) const {
    detail::throw_if_error(try_forward<X&>(x, pos, train, rng, cache));
  }

  /// Training or evaluation forward out of place, filling `cache`.
  template <class X, class Y>
  status try_forward(X&& in, Y&& out, const positions& pos, bool train, std::mt19937_64& rng,
                     learned_cache& cache) const noexcept {
    const auto t = detail::make_add_target(in, out);
    return run_forward("learned_position_embedding::forward", t, "in", "out", pos, train, &rng, &cache);
  }
  /// The throwing form of try_forward(in, out, pos, train, rng, cache): argument_error with the same message.
  template <class X, class Y>
  void forward(X&& in, Y&& out, const positions& pos, bool train, std::mt19937_64& rng, learned_cache& cache) const {
    detail::throw_if_error(try_forward<X&, Y&>(in, out, pos, train, rng, cache));
  }

  /// Backward pass of the forward that filled `cache`: grad_in = dL/dx from grad_out = dL/dy (same (N, L, D)
  /// shape; grad_in may be grad_out itself), and accumulates dL/dE into table_grad() (only the rows used:
  /// scale * grad_h summed over the tokens at each row) and, with layer norm, dL/dgamma, dL/dbeta. The same
  /// dropout mask as the forward. Fails with invalid_argument, changing nothing, if the cache is empty or was
  /// filled by another module, or the shapes do not match the cached forward. Allocates nothing (but once
  /// in a copy of a module, whose copied vectors lack the reserved room for the touched rows).
  template <class G, class GX>
  status try_backward(G&& grad_out, GX&& grad_in, const learned_cache& cache) noexcept {
    constexpr const char* fn = "learned_position_embedding::backward";
    const auto t = detail::make_add_target(grad_out, grad_in);
    POSENC_TRY(detail::check_add_target(fn, "grad_out", "grad_in", cfg_.dim, t));
    if (cache.owner_ != this)
      return detail::fail(fn, cache.filled() ? "cache was filled by another module" : "cache is empty (no forward with this cache)");
    POSENC_TRY(detail::check_same_tokens(fn, "grad_out", t.in.extent(0), t.in.extent(1), "the cached forward", cache.n_,
                                         cache.l_));
    // Room for every row in touched_rows_ (reserved on construction; a copied module keeps only the size).
    if (touched_rows_.capacity() < static_cast<std::size_t>(rows_))
      POSENC_TRY(detail::guard_alloc(fn, [&]() -> status {
        touched_rows_.reserve(static_cast<std::size_t>(rows_));
        return {};
      }));
    using T = typename decltype(t.out)::element_type;
    const index_t dim = cfg_.dim;
    const double inv_d = 1.0 / static_cast<double>(dim);
    for (index_t n = 0; n < cache.n_; ++n) {
      for (index_t l = 0; l < cache.l_; ++l) {
        const index_t tok = n * cache.l_ + l;
        const T* go = &t.in(n, l, 0);
        const index_t gs = t.in.stride(2);
        T* gi = &t.out(n, l, 0);
        const index_t is = t.out.stride(2);
        const index_t row = cache.rows_[static_cast<std::size_t>(tok)];
        C* ge = grad_.data() + row * dim;
        const unsigned char* keep = cache.dropped_ ? cache.keep_.data() + tok * dim : nullptr;
        auto grad_z = [&](index_t d) {
          double g = static_cast<double>(detail::simd::load_as<detail::simd::acc_t<T>>(go[d * gs]));
          if (keep) g = keep[d] ? g * cache.keep_scale_ : 0.0;
          return g;
        };
        if (!cfg_.layer_norm) {
          for (index_t d = 0; d < dim; ++d) {
            const double gz = grad_z(d);
            gi[d * is] = detail::simd::store_as<T>(gz);
            ge[d] = static_cast<C>(static_cast<double>(ge[d]) + cfg_.scale * gz);
          }
        } else {
          const double* xh = cache.xhat_.data() + tok * dim;
          const double rstd = cache.rstd_[static_cast<std::size_t>(tok)];
          double sum_g = 0.0;
          double sum_gx = 0.0;
          for (index_t d = 0; d < dim; ++d) {
            const double g = grad_z(d) * static_cast<double>(gamma_[static_cast<std::size_t>(d)]);
            sum_g += g;
            sum_gx += g * xh[d];
          }
          const double mean_g = sum_g * inv_d;
          const double mean_gx = sum_gx * inv_d;
          for (index_t d = 0; d < dim; ++d) {
            const auto k = static_cast<std::size_t>(d);
            const double gz = grad_z(d);
            const double gh = rstd * (gz * static_cast<double>(gamma_[k]) - mean_g - xh[d] * mean_gx);
            grad_gamma_[k] = static_cast<C>(static_cast<double>(grad_gamma_[k]) + gz * xh[d]);
            grad_beta_[k] = static_cast<C>(static_cast<double>(grad_beta_[k]) + gz);
            gi[d * is] = detail::simd::store_as<T>(gh);
            ge[d] = static_cast<C>(static_cast<double>(ge[d]) + cfg_.scale * gh);
          }
        }
        if (!touched_[static_cast<std::size_t>(row)]) {
          touched_[static_cast<std::size_t>(row)] = 1;
          touched_rows_.push_back(row);  // capacity for every row (above): never allocates
        }
      }
    }
    return {};
  }
  /// The throwing form of try_backward: argument_error with the same message.
  template <class G, class GX>
  void backward(G&& grad_out, GX&& grad_in, const learned_cache& cache) {
    detail::throw_if_error(try_backward<G&, GX&>(grad_out, grad_in, cache));
  }

 private:
  status try_build(const learned_config& cfg) noexcept {
    constexpr const char* fn = "learned_position_embedding";
    POSENC_TRY(detail::check_learned_config(fn, cfg));
    const index_t big = static_cast<index_t>(table_.max_size());
    if (cfg.max_positions > big - cfg.position_offset || cfg.max_positions + cfg.position_offset > big / cfg.dim)
      return detail::fail(fn, "max_positions=", cfg.max_positions, " + position_offset=", cfg.position_offset,
                          " times dim=", cfg.dim, " overflows");
    const index_t nrows = cfg.max_positions + cfg.position_offset;
    if (static_cast<std::size_t>(nrows) > touched_rows_.max_size()) return detail::out_of_memory(fn);
    return detail::guard_alloc(fn, [&]() -> status {
      const auto size = static_cast<std::size_t>(nrows * cfg.dim);
      table_.assign(size, C(0));
      grad_.assign(size, C(0));
      touched_.assign(static_cast<std::size_t>(nrows), 0);
      touched_rows_.reserve(static_cast<std::size_t>(nrows));
      gamma_.assign(static_cast<std::size_t>(cfg.dim), C(1));
      beta_.assign(static_cast<std::size_t>(cfg.dim), C(0));
      grad_gamma_.assign(static_cast<std::size_t>(cfg.dim), C(0));
      grad_beta_.assign(static_cast<std::size_t>(cfg.dim), C(0));
      cfg_ = cfg;
      rows_ = nrows;
      return {};
    });
  }

  template <class T>
  status run_forward(const char* fn, const detail::add_target<T>& t, const char* in_name, const char* out_name,
                     const positions& pos, bool train, std::mt19937_64* rng, learned_cache* cache) const noexcept {
    POSENC_TRY(detail::check_add_target(fn, in_name, out_name, cfg_.dim, t));
    const index_t nb = t.in.extent(0);
    const index_t nl = t.in.extent(1);
    index_t max_pos = -1;
    POSENC_TRY(detail::validate_positions(fn, pos, nb, nl, max_pos));
    if (max_pos >= cfg_.max_positions)
      return detail::fail(fn, "position ", max_pos, " is past the table of max_positions=", cfg_.max_positions);
    const index_t dim = cfg_.dim;
    if (nb > 0 && nl > 0 && nb > std::numeric_limits<index_t>::max() / nl / dim)
      return detail::fail(fn, "N * L * D overflows");
    const auto drop = detail::dropout_draw::make(train, cfg_.dropout, rng);
    // After every check: a rejected call leaves the cache as it was.
    if (cache) POSENC_TRY(detail::guard_alloc(fn, [&]() -> status { return prepare(fn, *cache, nb, nl, drop); }));
    if (nb == 0 || nl == 0) return {};
    using A = detail::simd::acc_t<T>;
    if (!cfg_.layer_norm && cache == nullptr) {
      if (drop.active()) {
        detail::table_rows_dropout<A>(table_.data(), dim, cfg_.position_offset, static_cast<A>(cfg_.scale), pos, t, drop);
        return {};
      }
      const C* table = table_.data();
      const index_t row_offset = cfg_.position_offset;
      const double scale = cfg_.scale;
      detail::run_table_rows(table, dim, row_offset, scale, pos, t);
      return {};
    }
    const double ks = drop.keep_scale;
    for (index_t n = 0; n < nb; ++n) {
      for (index_t l = 0; l < nl; ++l) {
        const index_t tok = n * nl + l;
        const index_t row = pos.at(n, l) + cfg_.position_offset;
        const C* e = table_.data() + row * dim;
        const T* x = &t.in(n, l, 0);
        const index_t xs = t.in.stride(2);
        T* y = &t.out(n, l, 0);
        const index_t ys = t.out.stride(2);
        unsigned char* keep = cache && drop.active() ? cache->keep_.data() + tok * dim : nullptr;
        if (cache) cache->rows_[static_cast<std::size_t>(tok)] = row;
        if (!cfg_.layer_norm) {
          const A s = static_cast<A>(cfg_.scale);
          for (index_t d = 0; d < dim; ++d) {
            A v = detail::simd::load_as<A>(x[d * xs]) + s * static_cast<A>(e[d]);
            if (drop.active()) {
              const bool k = drop.keep();
              if (keep) keep[d] = k ? 1 : 0;
              v = k ? v * static_cast<A>(ks) : A(0);
            }
            y[d * ys] = detail::simd::store_as<T>(v);
          }
          continue;
        }
        // Layer norm over h = x + scale * e, in double, two passes for the statistics (no cancellation).
        auto h = [&](index_t d) {
          return static_cast<double>(detail::simd::load_as<A>(x[d * xs])) + cfg_.scale * static_cast<double>(e[d]);
        };
        double sum = 0.0;
        for (index_t d = 0; d < dim; ++d) sum += h(d);
        const double mean = sum / static_cast<double>(dim);
        double sq = 0.0;
        for (index_t d = 0; d < dim; ++d) {
          const double c = h(d) - mean;
          sq += c * c;
        }
        const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(dim) + cfg_.eps);
        double* xh = cache ? cache->xhat_.data() + tok * dim : nullptr;
        if (cache) cache->rstd_[static_cast<std::size_t>(tok)] = rstd;
        for (index_t d = 0; d < dim; ++d) {
          const auto k = static_cast<std::size_t>(d);
          const double xhat = (h(d) - mean) * rstd;  // reads x[d] before y[d] is written (in place)
          if (xh) xh[d] = xhat;
          double v = static_cast<double>(gamma_[k]) * xhat + static_cast<double>(beta_[k]);
          if (drop.active()) {
            const bool kept = drop.keep();
            if (keep) keep[d] = kept ? 1 : 0;
            v = kept ? v * ks : 0.0;
          }
          y[d * ys] = detail::simd::store_as<T>(v);
        }
      }
    }
    return {};
  }

  /// Sizes the cache for a forward. Every vector is reserved first: a reserve that throws (std::bad_alloc)
  /// leaves its vector as it was, so a failure changes nothing but capacities; the resizes after them stay
  /// within capacity and cannot fail.
  status prepare(const char* fn, learned_cache& c, index_t nb, index_t nl, const detail::dropout_draw& drop) const {
    const auto tokens = static_cast<std::size_t>(nb * nl);
    const auto elems = tokens * static_cast<std::size_t>(cfg_.dim);
    const std::size_t n_xhat = cfg_.layer_norm ? elems : 0;
    const std::size_t n_rstd = cfg_.layer_norm ? tokens : 0;
    const std::size_t n_keep = drop.active() ? elems : 0;
    if (tokens > c.rows_.max_size() || n_xhat > c.xhat_.max_size() || n_rstd > c.rstd_.max_size() ||
        n_keep > c.keep_.max_size())
      return detail::out_of_memory(fn);
    c.rows_.reserve(tokens);
    c.xhat_.reserve(n_xhat);
    c.rstd_.reserve(n_rstd);
    c.keep_.reserve(n_keep);
    c.owner_ = this;
    c.n_ = nb;
    c.l_ = nl;
    c.d_ = cfg_.dim;
    c.dropped_ = drop.active();
    c.keep_scale_ = drop.keep_scale;
    c.rows_.resize(tokens);
    c.xhat_.resize(n_xhat);
    c.rstd_.resize(n_rstd);
    c.keep_.resize(n_keep);
    return {};
  }

  learned_config cfg_;
  index_t rows_ = 0;
  std::vector<C> table_;
  std::vector<C> grad_;
  std::vector<unsigned char> touched_;
  std::vector<index_t> touched_rows_;
  std::vector<C> gamma_;
  std::vector<C> beta_;
  std::vector<C> grad_gamma_;
  std::vector<C> grad_beta_;
};

POSENC_END_NAMESPACE
