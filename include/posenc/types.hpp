// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The small vocabulary types every layer shares: the index type, how rotated features pair up, and the
// instruction sets posenc has kernels for. They live below both the public API and the kernels
// (detail/kernels), so the kernels never include a public header to learn a name.
#pragma once

#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"

POSENC_BEGIN_NAMESPACE

/// Extents, strides and positions: signed 64-bit, as PyTorch and ggml index tensors.
using index_t = std::int64_t;

/// How the rotated features pair up.
enum class rope_style {
  interleaved,  ///< (x[2i], x[2i+1]): RoFormer, GPT-J, MLX/tiny-llm "traditional", ggml mode 0
  half_split,   ///< (x[i], x[i + R/2]): GPT-NeoX, Llama, Qwen2 (HF rotate_half), ggml NEOX mode
};
/// The spellings of rope_style (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<rope_style> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<rope_style> list[] = {{rope_style::interleaved, "interleaved"},
                                                    {rope_style::half_split, "half_split"}};
};

/// An instruction set posenc has kernels for.
enum class isa {
  scalar,  ///< portable C++ (x86-64 baseline SSE2, or whatever the compiler's default target is)
  avx2,    ///< AVX2 + FMA + F16C
  avx512,  ///< AVX-512 F/BW/VL/DQ
  neon,    ///< AArch64 Advanced SIMD
};

/// "scalar", "avx2", "avx512" or "neon": the names POSENC_ISA takes and tests and benchmarks print
/// (RopeGolden.AllDtypesAndPaths/RopeBasicHalfSplitAvx2, BM_RopeHalfSplitCache/avx2).
constexpr const char* isa_name(isa i) noexcept {
  switch (i) {
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
    case isa::neon: return "neon";
    case isa::scalar: break;
  }
  return "scalar";
}
/// The spellings of isa (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<isa> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<isa> list[] = {
      {isa::scalar, "scalar"}, {isa::avx2, "avx2"}, {isa::avx512, "avx512"}, {isa::neon, "neon"}};
};

POSENC_END_NAMESPACE
