# Overlay port for posenc, from this source tree
# (vcpkg install posenc --overlay-ports=<posenc>/cmake/packaging/vcpkg).
# Header-only: one release configuration, tests/examples/benchmarks off, the CMake package moved to
# share/posenc, the pkg-config file fixed up, the license installed as `copyright`. The feature c-api builds
# libposenc (the C API) as well, in both configurations.
if(NOT "c-api" IN_LIST FEATURES)
  set(VCPKG_BUILD_TYPE release)
endif()
vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS FEATURES c-api POSENC_BUILD_C_API)
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)

vcpkg_cmake_configure(
    SOURCE_PATH "${SOURCE_PATH}"
    OPTIONS
        -DPOSENC_BUILD_TESTS=OFF
        -DPOSENC_BUILD_EXAMPLES=OFF
        -DPOSENC_BUILD_BENCHMARKS=OFF
        -DPOSENC_ENABLE_CUDA=OFF
        -DPOSENC_INSTALL=ON
        ${FEATURE_OPTIONS}
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME posenc CONFIG_PATH share/cmake/posenc)
vcpkg_fixup_pkgconfig()
if("c-api" IN_LIST FEATURES)
  # The debug configuration contributes its libraries only.
  file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug/include" "${CURRENT_PACKAGES_DIR}/debug/share")
endif()

file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
