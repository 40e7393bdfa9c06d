# Preprocesses `#include <posenc/rope.hpp>` under POSENC_SEPARATE_COMPILATION with posenc's include directory
# only, and checks that it stays light: fewer than MAX_LINES lines (the engine-integration target) and no x86 or
# Arm intrinsics header. Usage: cmake -DCXX=... -DINCLUDE_DIR=... -DWORK_DIR=... -DMAX_LINES=... -P this file.
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/rope_only.cpp "#include <posenc/rope.hpp>\n")
execute_process(COMMAND ${CXX} -std=c++17 -DPOSENC_SEPARATE_COMPILATION -E -I${INCLUDE_DIR} ${WORK_DIR}/rope_only.cpp
                OUTPUT_FILE ${WORK_DIR}/rope_only.ii RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "preprocessing failed (${rc}): ${err}")
endif()
file(READ ${WORK_DIR}/rope_only.ii text)
string(REGEX MATCHALL "\n" newlines "${text}")
list(LENGTH newlines lines)
message(STATUS "<posenc/rope.hpp> under POSENC_SEPARATE_COMPILATION: ${lines} lines (limit ${MAX_LINES})")
if(NOT lines LESS MAX_LINES)
  message(FATAL_ERROR "${lines} lines, not below ${MAX_LINES}")
endif()
foreach(heavy immintrin.h arm_neon.h Eigen/ stdexcept)
  string(FIND "${text}" "${heavy}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the light include reaches ${heavy}")
  endif()
endforeach()
message("preprocessed_lines: ok")
