// The plain loops (issue 20): for each kernel family, the straightforward loop an engine developer writes by hand
// for one model's shapes, with intrinsics (AVX2 + FMA + F16C on x86-64, NEON on AArch64), over the same data and
// the same cos/sin table as the posenc call it is timed against (run_paired's `vs_plain`). They are the bar
// posenc must clear, not references for correctness: no argument checks, no tails (the benchmark shapes are
// whole vectors), in place, heads outer and pairs inner, cos/sin re-read per head, 16-bit values widened on
// load and rounded on store as ggml does (bfloat16: round to nearest even by integer add, NaN kept quiet).
//
// Where the CPU lacks AVX2/FMA/F16C, or posenc runs its portable target (POSENC_ISA=scalar), the same loops
// are plain C++ (what the compiler vectorises for the baseline ISA), so that each posenc target is compared
// with a loop for the same instruction set; AVX-512 CPUs get the AVX2 loops (what most engines ship).
// Compiled once with default flags (plain.cpp, in the baseline library), target attributes per function.
#pragma once

#include <cstdint>

namespace posenc_bench::plain {

using index_t = std::int64_t;

/// 16-bit storage as engines keep it: IEEE half and bfloat16 bit patterns.
struct f16 {
  std::uint16_t bits;
};
struct bf16 {
  std::uint16_t bits;
};

/// "avx2", "neon" or "scalar": the loops run now (matched to posenc::active_isa()).
const char* isa();

// ---- the memory baseline over 16-bit storage: x = x * a + b, widened and rounded as the RoPE loops do -----------

void stream_fma(f16* x, index_t n, float a, float b);
void stream_fma(bf16* x, index_t n, float a, float b);

// ---- RoPE from a cos/sin table [positions, D/2] (rope_cache's rows) ----------------------------------------------
// x: L tokens of H heads of D values, token stride ts (elements), head stride D; token l at position p0 + l.

void rope_half_split(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0);
void rope_half_split(f16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0);
void rope_half_split(bf16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0);
void rope_half_split(double* x, index_t L, index_t H, index_t D, index_t ts, const double* cos, const double* sin,
                     index_t p0);
void rope_interleaved(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0);
void rope_interleaved(f16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0);
void rope_interleaved(bf16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0);
void rope_interleaved(double* x, index_t L, index_t H, index_t D, index_t ts, const double* cos, const double* sin,
                      index_t p0);

/// Out of place from float rows into a 16-bit cache of the same shape (K rotated into an fp16/bf16 KV cache).
void rope_half_split(const float* in, f16* out, index_t L, index_t H, index_t D, const float* cos, const float* sin,
                     index_t p0);
void rope_half_split(const float* in, bf16* out, index_t L, index_t H, index_t D, const float* cos, const float* sin,
                     index_t p0);

// ---- RoPE without a table: each token's cos/sin formed from inv_freq [D/2] by sinf/cosf of p * w in float ------

void rope_half_split_freq(float* x, index_t L, index_t H, index_t D, index_t ts, const float* inv_freq, index_t p0);
void rope_interleaved_freq(float* x, index_t L, index_t H, index_t D, index_t ts, const float* inv_freq, index_t p0);

/// MRoPE: pair i of token l rotates by thw[axis[i] * L + l] * inv_freq[i] (sinf/cosf in float).
void mrope_half_split(float* x, index_t L, index_t H, index_t D, const float* inv_freq, const std::uint8_t* axis,
                      const std::int64_t* thw);

/// The context shift: every token's rows rotate by delta * inv_freq (one row of sinf/cosf per call).
void shift_half_split(float* x, index_t L, index_t H, index_t D, const float* inv_freq, index_t delta);

/// xPos (interleaved, queries): pair i of position p scaled by zeta_i^((p - center) / scale_base) (powf per pair
/// and token), then rotated by the table's cos/sin.
void xpos_interleaved(float* x, index_t L, index_t H, index_t D, const float* cos, const float* sin, const float* zeta,
                      float scale_base, index_t center, index_t p0);

// ---- KV-cache appends: k rotated and v copied from float rows (token stride ts) into cache slots ---------------
// Caches [slots, Hk, D]; token l of the call goes to slot slots[l].

void rope_append_kv(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, f16* kc, f16* vc,
                    const std::int64_t* slots, const float* cos, const float* sin, index_t p0);
void rope_append_kv(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, bf16* kc, bf16* vc,
                    const std::int64_t* slots, const float* cos, const float* sin, index_t p0);
void rope_append_kv(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, float* kc, float* vc,
                    const std::int64_t* slots, const float* cos, const float* sin, index_t p0);
/// int8 codes with a dynamic scale per token and head (absmax / 127), written to ks/vs [slots, Hk].
void rope_append_kv_int8(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, std::int8_t* kc,
                         std::int8_t* vc, float* ks, float* vs, const std::int64_t* slots, const float* cos,
                         const float* sin, index_t p0);
/// fp8 E4M3 codes with given per-tensor scales (k_scale, v_scale), scalar conversion per element.
void rope_append_kv_e4m3(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, std::uint8_t* kc,
                         std::uint8_t* vc, float k_scale, float v_scale, const std::int64_t* slots, const float* cos,
                         const float* sin, index_t p0);

// ---- ALiBi on attention scores [H, Lq, Lk]: s += slope_h * (j - q), q = q0 + i; causal: -inf past q --------------

void alibi_add(float* scores, index_t H, index_t Lq, index_t Lk, const float* slopes, index_t q0, bool causal);
/// The same with posenc's rounding contract, as a plain loop: double slopes, each score widened to double, one
/// fma per element in double, rounded to float once (what matching posenc's bits costs a hand-written loop).
void alibi_add_exact(float* scores, index_t H, index_t Lq, index_t Lk, const double* slopes, index_t q0, bool causal);

// ---- additive encodings on (L, D) rows of N sequences --------------------------------------------------------

/// x[n, l, :] += sinusoid(p0 + l): [sin(p w_0), cos(p w_0), ...] interleaved, sinf/cosf in float per token.
void sinusoidal_add(float* x, index_t N, index_t L, index_t D, const float* inv_freq, index_t p0);
/// x[n, l, :] += scale * table[p0 + l, :].
void table_add(float* x, index_t N, index_t L, index_t D, const float* table, float scale, index_t p0);

// ---- layout: half-split -> interleaved pairs of every row, out of place ----------------------------------------

void half_split_to_interleaved(const float* in, float* out, index_t rows, index_t D);

// ---- the same loops with AVX-512 (16 float lanes), for the rows *VsPlain512 on CPUs that have it -------------
// What an engine developer would write for an AVX-512 CPU: rope_half_avx2 and table_add_avx2 widened, nothing
// else changed. They tell whether a gap against the AVX2 loop is posenc's or 512-bit vectors' on that CPU.

/// Whether the CPU (and OS) run AVX-512 F/BW/VL/DQ: the rows below are registered only then.
bool has_avx512();
/// rope_half_split(float*, ...) in AVX-512 (D / 2 a multiple of 16). Requires has_avx512().
void rope_half_split_avx512(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin,
                            index_t p0);
/// table_add in AVX-512 (D a multiple of 16). Requires has_avx512().
void table_add_avx512(float* x, index_t N, index_t L, index_t D, const float* table, float scale, index_t p0);

}  // namespace posenc_bench::plain
