# A plugin built with clang++ and libc++ loads into the gcc/libstdc++ core and
# passes the conformance kit (DESIGN §2 rule 4: only C types cross the ABI, so
# the plugin's C++ runtime is its own business). Run: ctest -R 'libcxx_plugin|AbiLibcxxPlugin'
#
#   abi.libcxx_plugin.build   (fixture) clang++ -stdlib=libc++ builds libcxx_plugin.cpp
#       directly (never through this build's gcc toolchain), and readelf shows it
#       needs libc++.so.1 and libc++abi.so.1 and not libstdc++.so.6. Built at test
#       time, like the header checks: without libc++ the build stays green and
#       this test fails saying what to install.
#   abi.libcxx_plugin.kit     bin/tessera-plugin-test passes on its "libcxx" device
#       (exit 0, > 0 checks passed, the kit's ABI checks included).
#   AbiLibcxxPlugin.*         the core (libtessera, gcc) loads it, both runtimes are
#       mapped, and each C++ exception its "libcxx_throw" kernels throw comes back
#       as the matching tessera::Error made by the SDK's guard.
find_program(TESSERA_LIBCXX_CLANGXX NAMES clang++ clang++-14 clang++-15 clang++-16)
find_program(TESSERA_LIBCXX_READELF NAMES readelf)
mark_as_advanced(TESSERA_LIBCXX_CLANGXX TESSERA_LIBCXX_READELF)

set(_tsr_libcxx_plugin ${CMAKE_CURRENT_BINARY_DIR}/libcxx_plugin/libtsrtest_libcxx.so)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/libcxx_plugin)

add_test(NAME abi.libcxx_plugin.build
  COMMAND ${CMAKE_COMMAND}
    "-DCXX=${TESSERA_LIBCXX_CLANGXX}"
    "-DREADELF=${TESSERA_LIBCXX_READELF}"
    -DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/libcxx_plugin.cpp
    -DOUTPUT=${_tsr_libcxx_plugin}
    -DMAP=${PROJECT_SOURCE_DIR}/sdk/cmake/tessera_plugin.map
    "-DINCLUDES=${PROJECT_SOURCE_DIR}/abi/include|${PROJECT_SOURCE_DIR}/sdk/include"
    "-DSYSTEM_INCLUDES=${TESSERA_DLPACK_INCLUDE_DIR}"
    -P ${CMAKE_CURRENT_SOURCE_DIR}/libcxx_plugin_build.cmake)
set_tests_properties(abi.libcxx_plugin.build PROPERTIES
  LABELS abi FIXTURES_SETUP tsr_libcxx_plugin TIMEOUT 120)

add_test(NAME abi.libcxx_plugin.kit
  COMMAND ${CMAKE_COMMAND} -DKIT=$<TARGET_FILE:tessera_plugin_test> -DPLUGIN=${_tsr_libcxx_plugin}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/libcxx_plugin_kit.cmake)
set_tests_properties(abi.libcxx_plugin.kit PROPERTIES
  LABELS abi FIXTURES_REQUIRED tsr_libcxx_plugin TIMEOUT 120
  ENVIRONMENT "TESSERA_PLUGIN_PATH=${TESSERA_PLUGIN_OUTPUT_DIRECTORY}")

# Not tessera_add_gtest(): its tests need the fixture above.
add_executable(abi_libcxx_plugin_test libcxx_plugin_test.cpp)
target_link_libraries(abi_libcxx_plugin_test PRIVATE GTest::gtest GTest::gtest_main tessera::tessera)
target_compile_options(abi_libcxx_plugin_test PRIVATE -Wall -Wextra)
target_compile_definitions(abi_libcxx_plugin_test PRIVATE TSRTEST_LIBCXX_PLUGIN="${_tsr_libcxx_plugin}")
gtest_discover_tests(abi_libcxx_plugin_test
  PROPERTIES ENVIRONMENT "TESSERA_PLUGIN_PATH=${TESSERA_PLUGIN_OUTPUT_DIRECTORY}"
             FIXTURES_REQUIRED tsr_libcxx_plugin LABELS abi
  DISCOVERY_TIMEOUT 60)
foreach(_tsr_dep tessera_cpu tessera_meta tessera_plugin_test)
  if(TARGET ${_tsr_dep})
    add_dependencies(abi_libcxx_plugin_test ${_tsr_dep})
  endif()
endforeach()
