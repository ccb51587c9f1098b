# libcxx_plugin_kit.cmake — runs the conformance kit on the libc++ plugin's
# "libcxx" device and requires exit status 0 and a positive number of passing
# checks (a kit that checked nothing must not count as a pass).
#
#   cmake -DKIT=.../tessera-plugin-test -DPLUGIN=...so -P libcxx_plugin_kit.cmake
if(NOT EXISTS "${PLUGIN}")
  message(FATAL_ERROR "${PLUGIN} is missing: abi.libcxx_plugin.build did not run or failed")
endif()
execute_process(COMMAND "${KIT}" "${PLUGIN}" --device libcxx
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera-plugin-test exited with ${rc} on the libc++ plugin")
endif()
if(NOT out MATCHES "\n([0-9]+) checks passed, 0 failed")
  message(FATAL_ERROR "tessera-plugin-test printed no summary line")
endif()
set(passed "${CMAKE_MATCH_1}")
if(NOT passed GREATER 0)
  message(FATAL_ERROR "tessera-plugin-test passed no check on the libc++ plugin")
endif()
if(NOT out MATCHES "\nok   ABI\\(-\\): [1-9]")
  message(FATAL_ERROR "the kit's ABI checks (exports, no-core, version, struct_size, loads, shutdown) did not run")
endif()
message(STATUS "ok: ${passed} checks passed")
