// Shared by the core tests: the plugin kernels a call runs, through the kernel
// recorder (tessera/testing.h). Not thread-safe: the recorder is process-wide.
#pragma once

#include <tessera/testing.h>
#include <tessera/tessera.h>

#include <string>
#include <vector>

namespace tsrtest {

using Names = std::vector<std::string>;

/// The plugin kernels one call of f runs, in order ("add", "copy_", ...);
/// the recorder is off again when it returns or throws.
template <class F>
Names kernels_of(F&& f) {
  Names ran;
  tessera::testing::set_kernel_recorder(
      [](void* ctx, const char* op, const char*, tessera::ScalarType) { static_cast<Names*>(ctx)->push_back(op); },
      &ran);
  try {
    f();
  } catch (...) {
    tessera::testing::set_kernel_recorder(nullptr, nullptr);
    throw;
  }
  tessera::testing::set_kernel_recorder(nullptr, nullptr);
  return ran;
}

}  // namespace tsrtest
