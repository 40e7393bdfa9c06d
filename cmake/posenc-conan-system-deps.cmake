# Included by the posenc config that Conan's CMakeDeps writes, only when Eigen or nlohmann/json come from the
# system through a profile's [platform_requires] (tests/package/conan/profiles/debian-system): CMakeDeps then has no package
# to link, so they are found here, at the versions posenc's own CMake package requires.
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
if(TARGET posenc::posenc)
  set_property(TARGET posenc::posenc APPEND PROPERTY INTERFACE_LINK_LIBRARIES Eigen3::Eigen)
endif()
if(TARGET posenc::hf_config)
  find_package(nlohmann_json 3 REQUIRED CONFIG)
  set_property(TARGET posenc::hf_config APPEND PROPERTY INTERFACE_LINK_LIBRARIES nlohmann_json::nlohmann_json)
endif()
