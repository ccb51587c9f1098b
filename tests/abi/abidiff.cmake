# abi.abidiff — libabigail's abidiff compares every type of <tessera/abi.h> with
# the committed baseline abidiff_baseline.abi: only appends pass (docs/abi.md §6,
# "How the promises are tested"). Each run also checks that edited copies of the
# header (an append passes; an insertion, a retyped field or slot parameter, a
# removed or reordered field fail) get the right verdict. Driver: abidiff_check.cmake.
#
# After an intended append (a minor version), accept it into the baseline with
#   cmake --build build/release --target abi_accept_baseline
# which refuses anything but appends unless TESSERA_ABI_ACCEPT_BREAK=1 is set.
find_program(TESSERA_ABIDW abidw)
find_program(TESSERA_ABIDIFF abidiff)
mark_as_advanced(TESSERA_ABIDW TESSERA_ABIDIFF)
if(NOT TESSERA_ABIDW OR NOT TESSERA_ABIDIFF)
  message(WARNING "abidw/abidiff not found: the test abi.abidiff will fail until Debian's "
                  "abigail-tools is installed (scripts/bootstrap.sh installs it).")
endif()

set(_tsr_abidiff_args
  -DCOMPILER=${CMAKE_C_COMPILER}
  -DABIDW=${TESSERA_ABIDW}
  -DABIDIFF=${TESSERA_ABIDIFF}
  -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}
  -DHEADER_DIR=${PROJECT_SOURCE_DIR}/abi/include
  -DDLPACK_DIR=${TESSERA_DLPACK_INCLUDE_DIR}
  -DBASELINE=${CMAKE_CURRENT_SOURCE_DIR}/abidiff_baseline.abi)

add_test(NAME abi.abidiff
  COMMAND ${CMAKE_COMMAND} -DMODE=check ${_tsr_abidiff_args}
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/abidiff
    -P ${CMAKE_CURRENT_SOURCE_DIR}/abidiff_check.cmake)
set_tests_properties(abi.abidiff PROPERTIES LABELS abi)

# TESSERA_ABI_ACCEPT_BREAK=1 in the environment accepts more than appends: for a
# new major version only.
add_custom_target(abi_accept_baseline
  COMMAND ${CMAKE_COMMAND} -DMODE=accept ${_tsr_abidiff_args}
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/abidiff_accept
    -P ${CMAKE_CURRENT_SOURCE_DIR}/abidiff_check.cmake
  COMMENT "Regenerating tests/abi/abidiff_baseline.abi from abi.h"
  VERBATIM)
