# The ABI version matrix (docs/abi.md §6, "How the promises are tested").
# Run it with `ctest -R '^(AbiVersionMatrix|abi\.version_matrix)'`.
#
#   abi.version_matrix.kit_v1_0|1|2|3  the frozen plugin of every released minor
#       passes the conformance kit (tessera-plugin-test, exit 0) in this core.
#   AbiVersionMatrix.*  (version_matrix_test.cpp, links libtessera)
#       what each frozen plugin's minor promises (1.1: UNKNOWN_DEVICE_TYPE;
#       1.2: workspace, memory_info, timing events, va_*, host_*); majors 0.x and
#       2.x refused naming both versions; short TsrPluginInfo /
#       TsrDeviceTypeDesc / TsrKernelDesc sizes; NULL 1.2 slots; unknown
#       capability and dtype bits.
#   AbiVersionMatrixOldHost.*  (version_matrix_old_host_test.cpp, no libtessera)
#       an emulated ABI 1.0 host: offers 1.0 only, answers like a 1.0 core and
#       hands over 1.0-sized TsrHostOffer / TsrHostApi / TsrKernelCall that end
#       on an unreadable page, so a plugin reading past struct_size crashes.

# Frozen plugins build against the header of their own minor, never today's:
# only DLPack's headers come from the build, abi.h from version_matrix_headers/.
function(_tsr_vm_frozen_plugin target source minor)
  add_library(${target} MODULE ${source})
  target_include_directories(${target} BEFORE PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/version_matrix_headers/v1_${minor})
  target_link_libraries(${target} PRIVATE tessera::dlpack)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib" OUTPUT_NAME tsrtest_${target}
    LIBRARY_OUTPUT_DIRECTORY ${TESSERA_TEST_PLUGIN_OUTPUT_DIRECTORY}
    C_VISIBILITY_PRESET hidden C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${PROJECT_SOURCE_DIR}/sdk/cmake/tessera_plugin.map" "LINKER:--no-undefined")
  # Warnings shown, never fatal: frozen sources are not edited for new compilers.
  target_compile_options(${target} PRIVATE -Wall -Wextra -pedantic)
endfunction()
_tsr_vm_frozen_plugin(vm_frozen_v1_1 version_matrix_v1_1_plugin.c 1)
_tsr_vm_frozen_plugin(vm_frozen_v1_2 version_matrix_v1_2_plugin.c 2)
_tsr_vm_frozen_plugin(vm_frozen_v1_3 version_matrix_v1_3_plugin.c 3)
find_package(Threads REQUIRED)
target_link_libraries(vm_frozen_v1_2 PRIVATE Threads::Threads)

# Refused descriptions: <target> <major> <minor> <struct_size, 0 = sizeof>.
foreach(_tsr_vm IN ITEMS "vm_major0;0;9;0" "vm_major2;2;5;16" "vm_info12;1;2;12" "vm_info40;1;2;40")
  list(GET _tsr_vm 0 _tsr_t)
  list(GET _tsr_vm 1 _tsr_major)
  list(GET _tsr_vm 2 _tsr_minor)
  list(GET _tsr_vm 3 _tsr_size)
  tessera_add_plugin(${_tsr_t} SOURCES version_matrix_info_plugin.c
    OUTPUT_DIRECTORY ${TESSERA_TEST_PLUGIN_OUTPUT_DIRECTORY} OUTPUT_NAME tsrtest_${_tsr_t})
  target_compile_definitions(${_tsr_t} PRIVATE VM_MAJOR=${_tsr_major} VM_MINOR=${_tsr_minor}
    VM_INFO_SIZE=${_tsr_size} VM_NAME="${_tsr_t}")
endforeach()
tessera_add_plugin(vm_slots SOURCES version_matrix_slots_plugin.c
  OUTPUT_DIRECTORY ${TESSERA_TEST_PLUGIN_OUTPUT_DIRECTORY} OUTPUT_NAME tsrtest_vm_slots)
target_include_directories(vm_slots PRIVATE ${PROJECT_SOURCE_DIR}/tests/plugins)
foreach(_tsr_t vm_major0 vm_major2 vm_info12 vm_info40 vm_slots)
  set_target_properties(${_tsr_t} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(${_tsr_t} PRIVATE -Wall -Wextra -pedantic -Werror)
endforeach()

set(_tsr_vm_defs
  VM_FROZEN_V1_0="$<TARGET_FILE:tsrtest_frozen_v1_0>"
  VM_FROZEN_V1_1="$<TARGET_FILE:vm_frozen_v1_1>"
  VM_FROZEN_V1_2="$<TARGET_FILE:vm_frozen_v1_2>"
  VM_FROZEN_V1_3="$<TARGET_FILE:vm_frozen_v1_3>"
  VM_MAJOR0="$<TARGET_FILE:vm_major0>"
  VM_MAJOR2="$<TARGET_FILE:vm_major2>"
  VM_INFO12="$<TARGET_FILE:vm_info12>"
  VM_INFO40="$<TARGET_FILE:vm_info40>"
  VM_SLOTS="$<TARGET_FILE:vm_slots>")
set(_tsr_vm_plugins tsrtest_frozen_v1_0 vm_frozen_v1_1 vm_frozen_v1_2 vm_frozen_v1_3 vm_major0 vm_major2 vm_info12 vm_info40 vm_slots)

tessera_add_gtest(version_matrix_test SOURCES version_matrix_test.cpp LIBS tessera::tessera)
target_compile_definitions(version_matrix_test PRIVATE ${_tsr_vm_defs})
add_dependencies(version_matrix_test ${_tsr_vm_plugins})

# The emulated old host dlopens plugins itself; the built-in ones are built with
# today's header, as the SDK builds everyone's.
tessera_add_gtest(version_matrix_old_host_test SOURCES version_matrix_old_host_test.cpp LIBS tessera::abi ${CMAKE_DL_LIBS})
target_compile_definitions(version_matrix_old_host_test PRIVATE ${_tsr_vm_defs}
  VM_PLUGIN_DIR="${TESSERA_PLUGIN_OUTPUT_DIRECTORY}")
add_dependencies(version_matrix_old_host_test ${_tsr_vm_plugins})
foreach(_tsr_plugin tessera_cpu tessera_meta tessera_sim)
  if(TARGET ${_tsr_plugin})
    add_dependencies(version_matrix_test ${_tsr_plugin})
    add_dependencies(version_matrix_old_host_test ${_tsr_plugin})
  endif()
endforeach()

# The conformance kit on every frozen plugin (each needs cpu and meta beside it).
if(TARGET tessera_plugin_test AND TARGET tessera_cpu AND TARGET tessera_meta)
  foreach(_tsr_vm IN ITEMS "1_0;tsrtest_frozen_v1_0" "1_1;vm_frozen_v1_1" "1_2;vm_frozen_v1_2"
      "1_3;vm_frozen_v1_3")
    list(GET _tsr_vm 0 _tsr_minor)
    list(GET _tsr_vm 1 _tsr_t)
    add_test(NAME abi.version_matrix.kit_v${_tsr_minor}
      COMMAND tessera_plugin_test $<TARGET_FILE:${_tsr_t}> -j 1)
    set_tests_properties(abi.version_matrix.kit_v${_tsr_minor} PROPERTIES LABELS abi TIMEOUT 120
      ENVIRONMENT "TESSERA_PLUGIN_PATH=${TESSERA_PLUGIN_OUTPUT_DIRECTORY}")
  endforeach()
endif()
