// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// What the public entries hand to the kernels across the dispatch boundary: views, positions and the
// parameters of each cos/sin *source*. Plain data in baseline code; every target's kernels
// (detail/kernels/*-inl.hpp) read them, and the GPU bodies (detail/gpu/*_body.hpp) take the same sources,
// positions and slopes as kernel parameters.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/math/alibi_slopes.hpp"
#include "posenc/detail/math/quant.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/positions.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// Where token (n, l) of an input lands in the first two dimensions of its output: the same (n, l); row
/// start[n] + l of sequence n (the append to a contiguous KV cache after start[n] cached tokens); or slot s =
/// slots[n * slot_stride + l], row s % block_size of block s / block_size (vLLM's paged cache and slot
/// mapping), a negative slot skipping the token. Validated by the public entry.
struct token_map {
  const std::int64_t* start = nullptr;
  const std::int64_t* slots = nullptr;
  index_t slot_stride = 0;
  index_t block_size = 1;
  int block_shift = -1;  ///< log2(block_size) when it is a power of two, else -1

  /// vLLM's paged cache: slot s of token (n, l) at slots[n * slot_stride + l].
  static token_map paged(const std::int64_t* slots, index_t slot_stride, index_t block_size) {
    const bool pow2 = block_size > 0 && (block_size & (block_size - 1)) == 0;
    return {nullptr, slots, slot_stride, block_size, pow2 ? log2_pow2(static_cast<std::uint64_t>(block_size)) : -1};
  }
  /// log2 of a power of two (a bit scan: the loop it replaced was ~30 instructions of a one-token append).
  static int log2_pow2(std::uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    for (; x > 1; x >>= 1) ++k;
    return k;
#endif
  }
  /// Whether token (n, l) lands in output row (n, l) (no cache slots or starts).
  bool identity() const { return start == nullptr && slots == nullptr; }
  /// The output's (i0, i1) of token (n, l); false when the token is skipped.
  POSENC_ALWAYS_INLINE bool at(index_t n, index_t l, index_t& i0, index_t& i1) const {
    if (slots != nullptr) {
      const std::int64_t s = slots[n * slot_stride + l];
      if (s < 0) return false;
      // Power-of-two blocks (vLLM's 16, 32, ...): a shift and a mask; a 64-bit division costs ~40 cycles, a
      // tenth of a token's append of 8 heads.
      if (block_shift >= 0) {
        i0 = s >> block_shift;
        i1 = s & (block_size - 1);
      } else {
        i0 = s / block_size;
        i1 = s % block_size;
      }
      return true;
    }
    i0 = n;
    i1 = start != nullptr ? start[n] + l : l;
    return true;
  }
};

/// An input/output pair of (N, L, H, D) views of storage types In and Out; in place when both address the
/// same elements (then In == Out). Out of place, In and Out may differ (float q/k into a half KV cache), and
/// the output may be a KV cache the tokens land in through `map`.
template <class In, class Out>
struct rope_io {
  strided_view<const In, 4> in;
  strided_view<Out, 4> out;
  token_map map{};
  bool in_place() const { return static_cast<const void*>(in.data()) == static_cast<const void*>(out.data()); }
};

/// Pairs per chunk of cos/sin formed at once on the stack: 128 pairs cover head dims up to 256 in one chunk
/// and keep the buffers (2 x 128 doubles per variant) in L1.
inline constexpr index_t rope_chunk = 128;
/// Bytes of rotated rows above which a call is taken to stream from DRAM rather than from cache (rope_rows):
/// the L3 of the CPUs measured (32 MiB on Zen 3).
inline constexpr index_t rope_stream_bytes = index_t{32} << 20;
/// Bytes moved (read and written) above which rows of float in place no longer fit L1 (their 64 KiB past the
/// largest L1d measured, 48 KiB on Emerald Rapids), up to rope_stream_bytes: there the AVX-512 target hands
/// half-split rope_rows calls from a cos/sin table to the AVX2 kernels (rope-inl.hpp, POSENC_NARROW_NS).
inline constexpr index_t rope_narrow_bytes = index_t{128} << 10;
/// Bytes of float scores above which the AVX-512 target hands ALiBi's fp32 adds to the AVX2 kernels, up to
/// rope_stream_bytes (alibi-inl.hpp): past the largest L1d measured (48 KiB on Emerald Rapids).
inline constexpr index_t alibi_narrow_bytes = index_t{64} << 10;

/// Asks for the cache line at `bytes` past `p` (the same row of the next token, rope_rows' `ahead`). Tokens
/// sit a row stride apart, often in another 4 KiB page, where the hardware prefetchers stop and a streaming
/// call waits on DRAM at every token's first lines. The address is formed as an integer and never
/// dereferenced: it may lie past the caller's buffer, and a prefetch does not fault.
POSENC_ALWAYS_INLINE void prefetch_ahead(const void* p, index_t bytes) {
  // An integer, not pointer arithmetic, past the caller's object (the cast's lost aliasing facts do not matter
  // to a prefetch).
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  const auto* a = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(bytes));
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(a, 0, 3);
#else
  static_cast<void>(a);
#endif
}

/// prefetch_ahead over the lines of elements [0, n) of a row.
template <class T>
POSENC_ALWAYS_INLINE void prefetch_row(const T* row, index_t n, index_t bytes) {
  for (index_t e = 0; e < n; e += 64 / index_t{sizeof(T)}) prefetch_ahead(row + e, bytes);
}

/// |theta| below which the vector sincos reduces the angle exactly: Cody-Waite with pi/2 split in three, the
/// first two parts of 27 and 29 significant bits, so k*C1 and k*C2 are exact for k = round(theta*2/pi) < 2^24
/// even without FMA. Beyond it (positions past ~2^24 at frequency 1) each pair goes to libm's sin and cos.
inline constexpr double sincos_exact_limit = 0x1p24;

/// The largest |w| of a frequency vector (the angle bound of a position is |p| times it).
inline double max_abs(const std::vector<double>& w) {
  double m = 0.0;
  for (double v : w) m = std::fabs(v) > m ? std::fabs(v) : m;
  return m;
}

// ---- cos/sin sources: what a kernel forms for pair i at position p --------------------------------------------

/// RoPE and context shift: theta = p * w_i, both factors times `magnitude`. w_max (max |w_i|) bounds the
/// angles of a call, which picks the CPU's sincos (the GPU forms each pair in double and does not read it).
struct angle_src {
  const double* w;
  double magnitude;
  double w_max;
  static constexpr int variants = 1;
};

/// MRoPE: theta = p[axis_i] * w_i (Pos yields the three positions of a token).
struct mrope_src {
  const double* w;
  const std::uint8_t* axis;
  double magnitude;
  double w_max;
  static constexpr int variants = 1;
};

/// Re-rotation from plan `from` to plan `to` at the same position: theta = p*w_to - p*w_from (each product
/// exact to p*w*2^-53), magnitude m_to/m_from.
struct rerotate_src {
  const double* w_from;
  const double* w_to;
  double ratio;
  double w_max;  ///< max|w_to| + max|w_from|
  static constexpr int variants = 1;
};

/// xPos: theta = p * w_i; variant 0 (upscale, queries) times zeta_i^((p - C)/scale_base), variant 1
/// (downscale, keys) times its reciprocal, each exp(+-ln(zeta_i) * (p - C) / scale_base) formed in double.
/// Only the variants in `need` are formed.
struct xpos_src {
  const double* w;
  const double* log_zeta;
  index_t center;
  double scale_base;
  double w_max;
  std::array<bool, 2> need;
  static constexpr int variants = 2;
};

/// A precomputed cos/sin table, no arithmetic: pair i of position p < rows at cos[p * row_stride + i *
/// pair_stride] (rope_cache: row_stride = pairs, pair_stride = 1; an engine's table through rope_table_view: any
/// layout). The CPU entries reject a position past the table before the kernel runs; a GPU block, whose device
/// positions the host cannot read, leaves such a token unrotated.
template <class C>
struct table_src {
  const C* cos;
  const C* sin;
  index_t row_stride;
  index_t pair_stride;
  index_t rows;
  static constexpr int variants = 1;
};

/// Whether a rotation's source reads its cos/sin from a table (of any element type) rather than forming them.
template <class Source>
inline constexpr bool is_table_src_v = false;
template <class C>
inline constexpr bool is_table_src_v<table_src<C>> = true;

/// The arithmetic type of a rotation kernel: double if In or Out is double, and always for xPos (its scale
/// may leave float's range where the scaled value does not); float otherwise.
template <class Source, class In, class Out>
using rope_acc_t = std::conditional_t<std::is_same_v<Source, xpos_src>, double, simd::acc2_t<In, Out>>;

// ---- positions a kernel walks, besides posenc::positions -------------------------------------------------------

/// A signed position delta per token (context shift): one for all, or one per token at
/// per_token[n * row_stride + l].
struct delta_positions {
  index_t uniform = 0;
  const std::int64_t* per_token = nullptr;
  index_t row_stride = 0;
  POSENC_HOST_DEVICE index_t at(index_t n, index_t l) const { return per_token ? per_token[n * row_stride + l] : uniform; }
};

// ---- 8-bit codes (posenc/quantize.hpp) ----------------------------------------------------------------------

/// Floats of the per-token scratch row of the quantising kernel: head rows of up to this many features (heads
/// are taken in groups that fit it). 16 KiB of stack.
inline constexpr index_t quant_scratch = 4096;

/// How a quantising kernel call scales: `scales` per head at scales[h * scale_stride] (given), or null for
/// dynamic int8, whose scale of each (token, head) goes to scale_out at (o0, o1, h) of scale_out_stride.
struct quant_params {
  quant_format format = quant_format::int8;
  const float* scales = nullptr;
  index_t scale_stride = 0;
  float* scale_out = nullptr;
  std::array<index_t, 3> scale_out_stride{};
};

/// One tensor of a quantising call: its (N, L, H, D) rows, their code rows (int8 codes as their bytes, fp8
/// codes as they are) and how they scale. A leg whose `in` is empty is absent.
template <class In>
struct quant_leg {
  strided_view<const In, 4> in;
  strided_view<std::uint8_t, 4> out;
  quant_params q;
};

// ---- additive encodings (sinusoidal, learned) -----------------------------------------------------------------

/// An input/output pair of (N, L, D) views; in place when both address the same elements.
template <class T>
struct add_target {
  strided_view<const T, 3> in;
  strided_view<T, 3> out;
  bool in_place() const { return static_cast<const void*>(in.data()) == static_cast<const void*>(out.data()); }
};

/// Pairs per chunk of frequencies and sin/cos values held on the stack: D <= 1024 (every d_model up to GPT-2
/// medium and BERT-large) in one chunk, so that each row is one pass; a chunk per pass measured 2x slower at D =
/// 768 and 1024 (Zen 3). 28 KiB of stack.
inline constexpr index_t sinusoid_chunk = 512;
/// Pairs formed and added at a time (sinusoid_rows), a multiple of every vector width: x's lines stream in while
/// the next span is formed. 4096 x 1024 floats, Emerald Rapids, of the stream: 0.76-0.89 at 128 pairs (median 0.86), 0.67-0.79
/// at 64, 0.79-0.82 at 256, 0.62-0.72 at 512 (the whole row formed, then added).
inline constexpr index_t sinusoid_span = 128;

/// Parameters of a sinusoid source (validated by the public entry).
struct sinusoid_params {
  index_t dim = 0;
  double base = 10000.0;
  bool concat = false;
  bool has_padding = false;
  index_t padding_idx = 0;
};

// ---- ALiBi slopes --------------------------------------------------------------------------------------------

/// Slopes from the formula: local head h of a shard is global head head_begin + h; the batch row is ignored.
struct alibi_formula_slopes {
  index_t num_heads;
  index_t head_begin;
  double max_bias;
  POSENC_HOST_DEVICE double operator()(index_t, index_t h) const {
    return math::alibi_slope(head_begin + h, num_heads, max_bias);
  }
  /// The same slopes for every batch row.
  bool batch_invariant() const { return true; }
  /// Local heads [h0, h0 + count) into out (the bits of operator(), with fewer exp2 calls: alibi_slopes_into).
  /// A thread's calls one decode step after another ask for the same heads: its last fill of up to 64 heads is
  /// kept and copied (computing 32 slopes was ~100 ns, 1% of a 32-head decode call over 4096 keys).
  void fill(index_t, index_t h0, index_t count, double* out) const {
    struct memo {
      index_t num_heads = 0, first = 0, count = 0;
      double max_bias = 0.0;
      double slopes[64] = {};
    };
    static thread_local memo last;
    const index_t first = head_begin + h0;
    const bool fits = count <= 64;
    if (fits && last.count == count && last.first == first && last.num_heads == num_heads &&
        last.max_bias == max_bias) {
      std::memcpy(out, last.slopes, static_cast<std::size_t>(count) * sizeof(double));
      return;
    }
    math::alibi_slopes_into(first, count, num_heads, max_bias, out);
    if (fits) {
      last.num_heads = num_heads;
      last.first = first;
      last.count = count;
      last.max_bias = max_bias;
      std::memcpy(last.slopes, out, static_cast<std::size_t>(count) * sizeof(double));
    }
  }
};

/// Slopes read from a caller's [N, H] array of any storage type at data[n * stride[0] + h * stride[1]] (a [H]
/// array has batch stride 0), widened to double.
template <class S>
struct alibi_view_slopes {
  const S* data;
  index_t stride[2];
  POSENC_HOST_DEVICE double operator()(index_t n, index_t h) const {
    return simd::load_as<double>(data[n * stride[0] + h * stride[1]]);
  }
  /// The same slopes for every batch row (a [H] array).
  bool batch_invariant() const { return stride[0] == 0; }
  /// Heads [h0, h0 + count) of batch row n into out.
  void fill(index_t n, index_t h0, index_t count, double* out) const {
    for (index_t i = 0; i < count; ++i) out[i] = (*this)(n, h0 + i);
  }
};

// ---- T5 bias expansion ------------------------------------------------------------------------------------------

/// The bucket runs of one T5 bucketing: bucket b of a direction covers the distances n in
/// [first[b], first[b + 1]) (first[nb] = INT64_MAX), found once from the bucket function itself, which is
/// non-decreasing in n. A row of the bias is then at most 2 nb runs of one table value each.
struct t5_runs {
  const std::int64_t* first;  ///< nb + 1 thresholds
  std::int64_t nb;            ///< buckets per direction
  bool bidirectional;
};

}  // namespace detail
POSENC_END_NAMESPACE
