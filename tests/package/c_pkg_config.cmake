# The installed C route through pkg-config: compiles tests/package/c_consumer.c as C99 with
# `pkg-config --cflags --libs posenc-c`, runs it, expects "c_consumer: ok".
# Usage: cmake -DCC=... -DPREFIX=<install prefix> -DLIBDIR=<lib dir under it> -DSOURCE=... -DWORK_DIR=... -P this file.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs posenc-c OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs posenc-c failed: ${err}")
endif()
message(STATUS "pkg-config posenc-c: ${flags}")
separate_arguments(flag_list UNIX_COMMAND "${flags}")
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${CC} -std=c99 -Wall -Wextra -Wpedantic -Werror ${SOURCE} ${flag_list} -lm
                        -Wl,-rpath,${PREFIX}/${LIBDIR} -o ${WORK_DIR}/c_consumer
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling with pkg-config's flags failed: ${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/c_consumer OUTPUT_VARIABLE out RESULT_VARIABLE rc)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the C consumer failed (${rc})")
endif()
