// Built with -mavx2 -mfma -mf16c (CMakeLists.txt).
#define WORK_NAME work_avx2
#include "work.inl"
