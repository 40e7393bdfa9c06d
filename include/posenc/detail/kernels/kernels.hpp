// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The kernels of every target this translation unit compiles (detail/simd/targets.hpp), and the dispatcher
// that calls the one posenc/dispatch.hpp picks. The kernel sources (detail/kernels/*-inl.hpp) are included
// once per target, each time inside the target's region and in a namespace naming it (Highway's
// foreach_target.h): written once, compiled per instruction set, never sharing a symbol across targets.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/alibi_slopes.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/quant.hpp"
#include "posenc/detail/math/sinusoid.hpp"
#include "posenc/detail/math/t5_bucket.hpp"
#include "posenc/detail/simd/targets.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/dispatch.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope_scaling.hpp"
#include "posenc/tensor_view.hpp"

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
#include "posenc/detail/kernels/all-inl.hpp"
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

/// The targets compiled here, as a bit set: part of the dispatcher's type, so that translation units with
/// different baselines (and so different target sets) never share a dispatching instantiation.
inline constexpr int compiled_targets = (POSENC_TARGET_SCALAR ? 1 : 0) | (POSENC_TARGET_AVX2 ? 2 : 0) |
                                        (POSENC_TARGET_AVX512 ? 4 : 0) | (POSENC_TARGET_NEON ? 8 : 0);

/// Run-time dispatch: `call(f)` runs f(n_X::target{}) for the active ISA (posenc::active_isa()), or for the
/// widest compiled target below it; when the active ISA is below everything compiled here (a cap under
/// the includer's own baseline), the lowest compiled one. The active ISA is one relaxed atomic load, and the
/// chain of compares is what a table of function pointers would cost, without defeating inlining of f.
template <int Compiled>
struct dynamic_dispatch {
  template <class F>
  static void call(F&& f) {
    const isa a = active_isa();
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
  }
};

/// Static dispatch (POSENC_STATIC_DISPATCH): the one compiled target, called directly.
template <int Compiled>
struct static_dispatch {
  template <class F>
  static void call(F&& f) {
#if POSENC_TARGET_AVX512
    f(n_avx512::target{});
#elif POSENC_TARGET_AVX2
    f(n_avx2::target{});
#elif POSENC_TARGET_NEON
    f(n_neon::target{});
#else
    f(n_scalar::target{});
#endif
  }
};

/// The dispatcher of this translation unit: the last template parameter of every public function that runs a
/// kernel, defaulted to this, so the instantiation's mangled name records how it dispatches.
#if defined(POSENC_STATIC_DISPATCH)
using default_dispatch = static_dispatch<compiled_targets>;
#else
using default_dispatch = dynamic_dispatch<compiled_targets>;
#endif

}  // namespace detail
POSENC_END_NAMESPACE
