# tessera_add_plugin(<target> SOURCES ... [OUTPUT_DIRECTORY dir] [OUTPUT_NAME name] [INSTALL])
#
# Builds a Tessera device plugin: a shared library that includes only the ABI and
# SDK headers, exports exactly one symbol (tessera_plugin_entry, ABI rule 1) and
# does not link libtessera. Works in-tree and from find_package(Tessera).
set(_TESSERA_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(tessera_add_plugin target)
  cmake_parse_arguments(ARG "INSTALL" "OUTPUT_DIRECTORY;OUTPUT_NAME" "SOURCES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE tessera::sdk)
  set_target_properties(${target} PROPERTIES
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    PREFIX "lib")
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  if(NOT APPLE AND NOT WIN32)
    # The version script hides everything but the entry point, including symbols
    # that static libraries (libstdc++ pieces, OpenBLAS wrappers) would leak.
    target_link_options(${target} PRIVATE
      "LINKER:--version-script=${_TESSERA_PLUGIN_CMAKE_DIR}/tessera_plugin.map"
      "LINKER:--no-undefined")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_TESSERA_PLUGIN_CMAKE_DIR}/tessera_plugin.map")
  endif()
  if(ARG_INSTALL)  # into the folder the core searches by default
    install(TARGETS ${target} LIBRARY DESTINATION lib/tessera/plugins)
  endif()
endfunction()
