// posenc Python bindings: the one translation unit that compiles posenc's kernels (every target of the
// architecture, for float, double, fp16 and bf16), as POSENC_SEPARATE_COMPILATION asks (posenc/src.hpp). The
// binding code in module.cpp then sees the kernels only as declarations and compiles no SIMD code itself.
// Built with default flags: run-time dispatch picks the widest ISA the CPU has (posenc/dispatch.hpp).
#include <posenc/src.hpp>
