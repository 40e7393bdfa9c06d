// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The kernels of every target this translation unit compiles (detail/simd/targets.hpp), the dispatcher that
// calls the one posenc/dispatch.hpp picks, and the definitions of the kernel entries (detail/kernels/
// entries.hpp) that the public headers call: included by entries.hpp in header-only builds, by posenc/src.hpp
// under POSENC_SEPARATE_COMPILATION. The kernel sources (detail/kernels/*-inl.hpp) are included
// once per target, each time inside the target's region and in a namespace naming it (Highway's
// foreach_target.h): written once, compiled per instruction set, never sharing a symbol across targets.
#pragma once

// The kernels rely on IEEE arithmetic as written: the sincos range reduction subtracts k*pi/2 in exact parts,
// round-to-nearest uses the 1.5*2^52 trick, and the 16-bit and 8-bit conversions round to nearest even.
// -ffast-math (-Ofast) may reassociate these into wrong results; refuse it.
#if defined(__FAST_MATH__)
#error "posenc: the kernels depend on IEEE rounding (exact range reduction, round-to-nearest-even); this translation unit is built with -ffast-math (or -Ofast): build it without"
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/alibi_slopes.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/quant.hpp"
#include "posenc/detail/math/sinusoid.hpp"
#include "posenc/detail/math/t5_bucket.hpp"
#include "posenc/detail/simd/targets.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/detail/simd/select.hpp"
#include "posenc/positions.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

// GCC 12.1/12.2 warn inside their own AVX-512 intrinsics wherever they are inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if POSENC_TARGET_SCALAR
#define POSENC_TARGET_NS n_scalar
#define POSENC_TARGET_ISA simd::scalar
#include "posenc/detail/kernels/all-inl.hpp"
#undef POSENC_TARGET_NS
#undef POSENC_TARGET_ISA
#endif

#if POSENC_TARGET_AVX2
POSENC_BEGIN_TARGET_AVX2
#define POSENC_TARGET_NS n_avx2
#define POSENC_TARGET_ISA simd::avx2
#include "posenc/detail/kernels/all-inl.hpp"
#undef POSENC_TARGET_NS
#undef POSENC_TARGET_ISA
POSENC_END_TARGET
#endif

#if POSENC_TARGET_AVX512
POSENC_BEGIN_TARGET_AVX512
#define POSENC_TARGET_NS n_avx512
#define POSENC_TARGET_ISA simd::avx512
#if POSENC_TARGET_AVX2
// The narrower target compiled beside this one: rope_rows hands it the rows that run faster 256 bits wide.
#define POSENC_NARROW_NS n_avx2
#endif
#include "posenc/detail/kernels/all-inl.hpp"
#undef POSENC_NARROW_NS
#undef POSENC_TARGET_NS
#undef POSENC_TARGET_ISA
POSENC_END_TARGET
#endif

#if POSENC_TARGET_NEON
#define POSENC_TARGET_NS n_neon
#define POSENC_TARGET_ISA simd::neon
#include "posenc/detail/kernels/all-inl.hpp"
#undef POSENC_TARGET_NS
#undef POSENC_TARGET_ISA
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

POSENC_BEGIN_NAMESPACE
namespace detail {

/// Calls f(n_X::target{}) for the target whose kernels run now. Run-time dispatch (the default): the active ISA
/// (detail::current_isa(), posenc::active_isa()), or the widest compiled target below it; when the active ISA
/// is below everything compiled here (a cap under the includer's own baseline), the lowest compiled one. The
/// active ISA is one relaxed atomic load, and the chain of compares is what a table of function pointers would
/// cost, without defeating inlining of f. Static dispatch (POSENC_STATIC_DISPATCH): the one compiled target.
/// Translation units with other targets compiled live in other ABI namespaces (detail/abi.hpp), so this never
/// merges across them.
template <class F>
void call_target(F&& f) {
#if defined(POSENC_STATIC_DISPATCH)
#if POSENC_TARGET_AVX512
  f(n_avx512::target{});
#elif POSENC_TARGET_AVX2
  f(n_avx2::target{});
#elif POSENC_TARGET_NEON
  f(n_neon::target{});
#else
  f(n_scalar::target{});
#endif
#else
  const isa a = current_isa();
  static_cast<void>(a);
#if POSENC_TARGET_AVX512
  if (a == isa::avx512) return f(n_avx512::target{});
#endif
#if POSENC_TARGET_AVX2
  if (a == isa::avx2 || a == isa::avx512) return f(n_avx2::target{});
#endif
#if POSENC_TARGET_NEON
  if (a == isa::neon) return f(n_neon::target{});
#endif
#if POSENC_TARGET_SCALAR
  return f(n_scalar::target{});
#elif POSENC_TARGET_AVX2
  return f(n_avx2::target{});
#elif POSENC_TARGET_AVX512
  return f(n_avx512::target{});
#elif POSENC_TARGET_NEON
  return f(n_neon::target{});
#endif
#endif
}

// ---- the kernel entries (declared in entries.hpp by the kernel list) ---------------------------------------------

// NOLINTBEGIN(bugprone-macro-parentheses): the columns are parameter lists and types.
#define POSENC_DEFINE_KERNEL(name, tparams, targs, params, args, inst)                                               \
  template <POSENC_UNPAREN(tparams)>                                                                                \
  void name##_entry<POSENC_UNPAREN(targs)>::run params {                                                            \
    call_target([&](auto target_tag) { name(target_tag, POSENC_UNPAREN(args)); });                                  \
  }
POSENC_KERNEL_LIST(POSENC_DEFINE_KERNEL)
#undef POSENC_DEFINE_KERNEL
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace detail
POSENC_END_NAMESPACE
