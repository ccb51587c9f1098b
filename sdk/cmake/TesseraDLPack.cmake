# Finds DLPack 1.x headers and defines the interface target tessera::dlpack.
# Order: -DTESSERA_DLPACK_INCLUDE_DIR=..., then the PyPI package apache-tvm-ffi
# in the project's .venv (or any python3 on PATH). Debian's libdlpack-dev is 0.6,
# too old for the versioned structs, and is rejected.
if(TARGET tessera::dlpack)
  return()
endif()

if(NOT TESSERA_DLPACK_INCLUDE_DIR)
  set(_tsr_pythons "${CMAKE_CURRENT_LIST_DIR}/../../.venv/bin/python3" python3)
  foreach(_py IN LISTS _tsr_pythons)
    execute_process(
      COMMAND ${_py} -c "import tvm_ffi.libinfo as l; print(l.find_dlpack_include_path())"
      OUTPUT_VARIABLE _tsr_dlpack_dir OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _tsr_rc ERROR_QUIET)
    if(_tsr_rc EQUAL 0 AND EXISTS "${_tsr_dlpack_dir}/dlpack/dlpack.h")
      set(TESSERA_DLPACK_INCLUDE_DIR "${_tsr_dlpack_dir}" CACHE PATH "Folder holding dlpack/dlpack.h (1.x)")
      break()
    endif()
  endforeach()
endif()

if(NOT TESSERA_DLPACK_INCLUDE_DIR OR NOT EXISTS "${TESSERA_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h")
  message(FATAL_ERROR "DLPack 1.x headers not found. Run scripts/bootstrap.sh (installs the PyPI "
                      "package apache-tvm-ffi into .venv) or pass -DTESSERA_DLPACK_INCLUDE_DIR=<dir>.")
endif()

file(STRINGS "${TESSERA_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h" _tsr_major REGEX "#define DLPACK_MAJOR_VERSION")
string(REGEX MATCH "[0-9]+" _tsr_major "${_tsr_major}")
if(NOT _tsr_major OR _tsr_major LESS 1)
  message(FATAL_ERROR "${TESSERA_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h is DLPack ${_tsr_major}.x; Tessera needs 1.x")
endif()
message(STATUS "DLPack 1.x headers: ${TESSERA_DLPACK_INCLUDE_DIR}")

add_library(tessera_dlpack INTERFACE)
add_library(tessera::dlpack ALIAS tessera_dlpack)
target_include_directories(tessera_dlpack SYSTEM INTERFACE "${TESSERA_DLPACK_INCLUDE_DIR}")
