# compile_check.cmake — runs one compiler on one source and fails (as a ctest)
# with the compiler's diagnostics if it does not compile cleanly. Used by the
# header checks in tests/abi/CMakeLists.txt, so that a header that is not clean
# C99 / C++17 shows up as a named failed test rather than a broken build.
#
#   cmake -DCOMPILER=... -DSOURCE=... -DOUTPUT=... -DFLAGS=a|b|c
#         -DINCLUDES=dir|dir -DSYSTEM_INCLUDES=dir|dir -P compile_check.cmake
foreach(var COMPILER SOURCE OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "compile_check.cmake: ${var} is not set")
  endif()
endforeach()
string(REPLACE "|" ";" flags "${FLAGS}")
set(args ${flags})
string(REPLACE "|" ";" includes "${INCLUDES}")
foreach(dir IN LISTS includes)
  list(APPEND args "-I${dir}")
endforeach()
string(REPLACE "|" ";" system_includes "${SYSTEM_INCLUDES}")
foreach(dir IN LISTS system_includes)
  list(APPEND args -isystem "${dir}")
endforeach()

list(JOIN args " " shown)
message(STATUS "${COMPILER} ${shown} -c ${SOURCE}")
execute_process(
  COMMAND "${COMPILER}" ${args} -c "${SOURCE}" -o "${OUTPUT}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} does not compile cleanly with ${COMPILER} ${shown}\n"
                      "(exit status ${rc}):\n${out}${err}")
endif()
if(NOT "${out}${err}" STREQUAL "")
  # -Werror turns warnings into errors, but notes and other output still mean trouble.
  message(FATAL_ERROR "${SOURCE} compiled but the compiler printed:\n${out}${err}")
endif()
message(STATUS "ok")
