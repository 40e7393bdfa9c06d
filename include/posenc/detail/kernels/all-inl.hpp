// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Every kernel source, for one target. No include guard: kernels.hpp includes this once per target, inside
// the target's region, with POSENC_TARGET_NS naming the target's namespace (n_scalar, n_avx2, n_avx512,
// n_neon) and POSENC_TARGET_ISA its instruction-set tag (detail::simd::scalar, ...).

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

using isa_tag = POSENC_TARGET_ISA;

/// The dispatch tag of this target. Every kernel entry takes it first, so the dispatcher's unqualified call
/// finds the entry of this namespace by argument-dependent lookup.
struct target {};

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE

#include "posenc/detail/kernels/vmath-inl.hpp"
#include "posenc/detail/kernels/rope-inl.hpp"
#include "posenc/detail/kernels/add-inl.hpp"
#include "posenc/detail/kernels/alibi-inl.hpp"
#include "posenc/detail/kernels/t5-inl.hpp"
#include "posenc/detail/kernels/layout-inl.hpp"
#include "posenc/detail/kernels/quant-inl.hpp"
