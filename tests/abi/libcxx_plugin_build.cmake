# libcxx_plugin_build.cmake — builds libcxx_plugin.cpp with clang++ and libc++
# (not the main build's gcc) and checks with readelf that the result needs
# libc++.so.1 and libc++abi.so.1 and not libstdc++.so.6. Run as a ctest fixture
# (abi.libcxx_plugin.build), so a machine without libc++ gets a named failed
# test saying what to install instead of a broken build.
#
#   cmake -DCXX=clang++ -DREADELF=readelf -DSOURCE=... -DOUTPUT=...so -DMAP=...map
#         -DINCLUDES=dir|dir -DSYSTEM_INCLUDES=dir|dir -P libcxx_plugin_build.cmake
cmake_minimum_required(VERSION 3.25)  # IN_LIST
string(CONCAT install_hint "install clang, libc++ and libc++abi (Debian: apt-get install clang-14 "
                           "libc++-dev libc++abi-dev; scripts/bootstrap.sh does it), then reconfigure build/release")
if(NOT CXX OR NOT EXISTS "${CXX}")
  message(FATAL_ERROR "clang++ not found (TESSERA_LIBCXX_CLANGXX='${CXX}'): ${install_hint}")
endif()
if(NOT READELF OR NOT EXISTS "${READELF}")
  message(FATAL_ERROR "readelf not found (TESSERA_LIBCXX_READELF='${READELF}'): install binutils")
endif()

set(args -std=c++17 -stdlib=libc++ -O1 -g0 -fPIC -shared -fvisibility=hidden -fvisibility-inlines-hidden
         -Wall -Wextra -Werror)
string(REPLACE "|" ";" includes "${INCLUDES}")
foreach(dir IN LISTS includes)
  list(APPEND args "-I${dir}")
endforeach()
string(REPLACE "|" ";" system_includes "${SYSTEM_INCLUDES}")
foreach(dir IN LISTS system_includes)
  list(APPEND args -isystem "${dir}")
endforeach()
# The SDK's linking rules (tessera_add_plugin): one exported symbol, no undefined ones.
list(APPEND args "-Wl,--version-script=${MAP}" -Wl,--no-undefined)

# Built under a temporary name and renamed once checked: two ctest runs at once
# never load a half-written file. (A failed build fails this fixture, so the
# tests needing it do not run on an older file.)
string(RANDOM LENGTH 8 suffix)
set(tmp "${OUTPUT}.${suffix}.tmp")
list(JOIN args " " shown)
message(STATUS "${CXX} ${shown} ${SOURCE} -o ${tmp} -lc++abi")
execute_process(COMMAND "${CXX}" ${args} "${SOURCE}" -o "${tmp}" -lc++abi
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "building the libc++ plugin failed (exit status ${rc}):\n${out}${err}\n"
                      "If <string> or -lc++/-lc++abi is not found: ${install_hint}")
endif()

execute_process(COMMAND "${READELF}" -d "${tmp}" RESULT_VARIABLE rc OUTPUT_VARIABLE dyn ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "readelf -d ${tmp} failed: ${err}")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]*\\]" lines "${dyn}")
set(needed)
foreach(line IN LISTS lines)
  string(REGEX REPLACE ".*\\[(.*)\\]" "\\1" lib "${line}")
  list(APPEND needed "${lib}")
endforeach()
message(STATUS "NEEDED: ${needed}")
foreach(lib libc++.so.1 libc++abi.so.1)
  if(NOT lib IN_LIST needed)
    file(REMOVE "${tmp}")
    message(FATAL_ERROR "${SOURCE} built by ${CXX} does not need ${lib} (NEEDED: ${needed}): it is not a libc++ plugin, "
                        "so loading it proves nothing about mixing C++ runtimes")
  endif()
endforeach()
foreach(lib IN LISTS needed)
  if(lib MATCHES "^libstdc\\+\\+" OR lib MATCHES "^libtessera")
    file(REMOVE "${tmp}")
    message(FATAL_ERROR "${SOURCE} built by ${CXX} needs ${lib} (NEEDED: ${needed}): the plugin must use libc++ only "
                        "and must not link the core")
  endif()
endforeach()
file(RENAME "${tmp}" "${OUTPUT}")
message(STATUS "ok: ${OUTPUT} is a libc++ plugin")
