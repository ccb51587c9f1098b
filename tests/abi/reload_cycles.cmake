# AbiReloadCycles.* — 1,000 unload/reload cycles of the sim plugin (asynchronous:
# streams, events, worker threads) with tensors, a stream and an event alive
# across unload_plugin (docs/abi.md H20, "How the promises are tested").
#
#   AbiReloadCycles.Thousand       1,000 cycles, 40 per child process (a process
#                                  has 48 device type ids and never reuses one),
#                                  each child ending with a LeakSanitizer check
#   AbiReloadCycles.RegistryFull   reloading past the last free id is a clean
#                                  PluginError, not a crash
#   AbiReloadCycles.CatchesLeak    self-tests: a deliberate leak inside libtessera
#   AbiReloadCycles.CatchesMapped  and a tensor kept alive must make the check fail

if(NOT TARGET tessera_sim)
  return()
endif()

add_executable(abi_reload_cycles_test reload_cycles_test.cpp)
target_link_libraries(abi_reload_cycles_test PRIVATE tessera::tessera)
target_compile_options(abi_reload_cycles_test PRIVATE -Wall -Wextra)
add_dependencies(abi_reload_cycles_test tessera_sim tessera_cpu)

# Leak checking: ASan builds have LSan already; TSan cannot be combined with it;
# otherwise link the LSan runtime into this program only. Its malloc then serves
# the whole process, so leaks inside libtessera and the plugins are seen too
# (AbiReloadCycles.CatchesLeak proves it).
include(CheckLinkerFlag)
if(TESSERA_SANITIZE OR CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*address")
  set(_tsr_reload_lsan 1)
elseif(CMAKE_CXX_FLAGS MATCHES "-fsanitize=")
  set(_tsr_reload_lsan 0)
else()
  check_linker_flag(CXX -fsanitize=leak TESSERA_HAVE_LSAN_LINK)
  if(TESSERA_HAVE_LSAN_LINK)
    target_link_options(abi_reload_cycles_test PRIVATE -fsanitize=leak)
    set(_tsr_reload_lsan 1)
  else()
    set(_tsr_reload_lsan 0)
  endif()
endif()
target_compile_definitions(abi_reload_cycles_test PRIVATE TSR_RELOAD_LSAN=${_tsr_reload_lsan})

# Only the cpu plugin by default: sim is loaded by the test, and every other
# default plugin would take a device type id from the 48.
set(_tsr_reload_env "TESSERA_PLUGIN_PATH=${TESSERA_PLUGIN_OUTPUT_DIRECTORY}/libtessera-cpu.so")
set(_tsr_reload_cmd abi_reload_cycles_test $<TARGET_FILE:tessera_sim>)

add_test(NAME AbiReloadCycles.Thousand COMMAND ${_tsr_reload_cmd} drive 1000 40)
add_test(NAME AbiReloadCycles.RegistryFull COMMAND ${_tsr_reload_cmd} until-full)
add_test(NAME AbiReloadCycles.CatchesMapped COMMAND ${_tsr_reload_cmd} cycles 2)
set_tests_properties(AbiReloadCycles.Thousand AbiReloadCycles.RegistryFull PROPERTIES
  LABELS abi TIMEOUT 300 ENVIRONMENT "${_tsr_reload_env}")
set_tests_properties(AbiReloadCycles.CatchesMapped PROPERTIES
  LABELS abi TIMEOUT 60 ENVIRONMENT "${_tsr_reload_env};TSR_RELOAD_CYCLES_BREAK=keep"
  PASS_REGULAR_EXPRESSION "FAILED in cycle 0: [^\n]*still mapped after the last")
if(_tsr_reload_lsan)
  add_test(NAME AbiReloadCycles.CatchesLeak COMMAND ${_tsr_reload_cmd} drive 2 2)
  # The leaked object is allocated inside libtessera (tessera::allocate_contiguous):
  # LSan names that frame, and the driver reports the child's exit code 23.
  set_tests_properties(AbiReloadCycles.CatchesLeak PROPERTIES
    LABELS abi TIMEOUT 60 ENVIRONMENT "${_tsr_reload_env};TSR_RELOAD_CYCLES_BREAK=leak"
    PASS_REGULAR_EXPRESSION "Direct leak of [0-9]+ byte.* in tessera::.*FAILED: child 0 .*exited with 23 \\(LeakSanitizer found leaks")
endif()
