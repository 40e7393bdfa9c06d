# The pkg-config consumer: compiles tests/package/consumer.cpp with `pkg-config --cflags posenc` from the
# installed tree (Eigen's flags come through posenc.pc's `Requires: eigen3`), runs it, and expects "consumer: ok".
# Usage: cmake -DCXX=... -DPREFIX=<install prefix> -DSOURCE=<consumer.cpp> -DWORK_DIR=... -P this file.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/share/pkgconfig")
execute_process(COMMAND ${PKG_CONFIG} --cflags posenc OUTPUT_VARIABLE cflags OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags posenc failed: ${err}")
endif()
execute_process(COMMAND ${PKG_CONFIG} --modversion posenc OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE)
message(STATUS "pkg-config: posenc ${version}, cflags: ${cflags}")
if(NOT cflags MATCHES "eigen3")
  message(FATAL_ERROR "posenc.pc does not bring Eigen's include directory: ${cflags}")
endif()
separate_arguments(cflag_list UNIX_COMMAND "${cflags}")
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${CXX} -std=c++17 -O1 ${cflag_list} ${SOURCE} -o ${WORK_DIR}/pkg_config_consumer
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling with pkg-config's flags failed: ${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/pkg_config_consumer OUTPUT_VARIABLE out RESULT_VARIABLE rc)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer failed")
endif()
