# The layering the README's "Architecture" section draws, checked on the sources:
#  - the kernels and the code below them (detail/kernels, detail/gpu, detail/simd, detail/math) include no public header
#    except the vocabulary ones (config, types, tensor_view, positions, storage);
#  - the umbrella posenc/posenc.hpp includes neither the Python-API counterparts (compat/) nor the .npy
#    utilities (io/);
#  - no header is longer than MAX_LINES lines.
# Usage: cmake -DINCLUDE_DIR=<repo>/include -DMAX_LINES=500 -P this file.
cmake_policy(VERSION 3.20)
set(vocabulary config.hpp types.hpp tensor_view.hpp positions.hpp storage.hpp)
set(problems "")
file(GLOB_RECURSE low RELATIVE ${INCLUDE_DIR}/posenc ${INCLUDE_DIR}/posenc/detail/kernels/*.hpp
     ${INCLUDE_DIR}/posenc/detail/simd/*.hpp ${INCLUDE_DIR}/posenc/detail/math/*.hpp
     ${INCLUDE_DIR}/posenc/detail/gpu/*.hpp)
foreach(f IN LISTS low)
  file(STRINGS ${INCLUDE_DIR}/posenc/${f} includes REGEX "^#include \"posenc/[^/\"]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"posenc/([^\"]+)\".*" "\\1" target "${line}")
    if(NOT target IN_LIST vocabulary)
      list(APPEND problems "${f} includes the public header posenc/${target}")
    endif()
  endforeach()
endforeach()
file(STRINGS ${INCLUDE_DIR}/posenc/posenc.hpp umbrella REGEX "^#include")
foreach(line IN LISTS umbrella)
  if(line MATCHES "posenc/(compat|io)/" OR line MATCHES "posenc/(compat|npy)\\.hpp")
    list(APPEND problems "the umbrella header includes an optional utility: ${line}")
  endif()
endforeach()
file(GLOB_RECURSE all RELATIVE ${INCLUDE_DIR}/posenc ${INCLUDE_DIR}/posenc/*.hpp ${INCLUDE_DIR}/posenc/*.cuh)
set(longest 0)
foreach(f IN LISTS all)
  file(STRINGS ${INCLUDE_DIR}/posenc/${f} lines_of)
  list(LENGTH lines_of n)
  if(n GREATER longest)
    set(longest ${n})
    set(longest_file ${f})
  endif()
  if(n GREATER MAX_LINES)
    list(APPEND problems "${f} has ${n} lines (limit ${MAX_LINES})")
  endif()
endforeach()
list(LENGTH all count)
message(STATUS "${count} headers; the longest is ${longest_file} (${longest} lines)")
if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "layout:\n  ${text}")
endif()
message("layout: ok")
