# Whether a C++ compiler links the C++ runtime into shared libraries as a
# shared library (libstdc++.so or libc++.so), which libtessera's C++ API needs
# (docs/architecture.md): it hands strings, streams and exceptions to its
# callers, so the core and every C++ library using it must share one runtime.
#
# include()d by core/CMakeLists.txt, which calls tsr_check_shared_cxx_runtime;
# or run as a script (tests/package):
#   cmake -DTSR_PROBE_CXX=<compiler> -DTSR_PROBE_OBJDUMP=<objdump> -DTSR_PROBE_DIR=<dir> -P shared_cxx_runtime.cmake
# which prints "shared C++ runtime: yes" or stops with the reason.

# Links a probe library with `cxx` (and `flags`, a string) in `dir` and stops
# with FATAL_ERROR when it needs no shared C++ runtime. A probe that does not
# build says nothing (the build itself will report that compiler's trouble).
function(tsr_check_shared_cxx_runtime cxx flags objdump dir)
  set(probe "${dir}/tsr_cxx_runtime_probe")
  file(WRITE "${probe}.cpp"
       "#include <sstream>\n#include <string>\nstd::string tsr_probe(int v) { std::ostringstream s; s << v; return s.str(); }\n")
  separate_arguments(flag_list NATIVE_COMMAND "${flags}")
  execute_process(COMMAND "${cxx}" ${flag_list} -shared -fPIC -o "${probe}.so" "${probe}.cpp"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 0)
    return()
  endif()
  execute_process(COMMAND "${objdump}" -p "${probe}.so" OUTPUT_VARIABLE dynamic ERROR_QUIET)
  if(NOT dynamic MATCHES "NEEDED +lib(std)?c\\+\\+\\.so")
    message(FATAL_ERROR "${cxx} links the C++ runtime statically into shared libraries "
                        "(a probe library needs no libstdc++.so or libc++.so): libtessera.so, the Python module "
                        "and programs would each carry their own copy, and streams and exceptions crossing them "
                        "crash. Use a compiler that links it as a shared library, e.g. "
                        "-DCMAKE_CXX_COMPILER=/usr/bin/g++ (and drop any -static-libstdc++).")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  file(MAKE_DIRECTORY "${TSR_PROBE_DIR}")
  tsr_check_shared_cxx_runtime("${TSR_PROBE_CXX}" "" "${TSR_PROBE_OBJDUMP}" "${TSR_PROBE_DIR}")
  message(STATUS "shared C++ runtime: yes")
endif()
