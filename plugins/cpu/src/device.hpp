// The "cpu" device type: host memory, synchronous execution.
#pragma once

#include <tessera/abi.h>

#include <string>

namespace tessera::cpu {

/// Alignment of every allocation (a cache line; enough for AVX-512 loads).
inline constexpr size_t kMemoryAlignment = 64;

/// Reads the processor name once (from /proc/cpuinfo) and keeps the name of
/// the kernels' instruction-set level (a string literal, kernel_isa_name()),
/// both shown by describe_device; call before registering the device type.
void init_device_info(const char* kernel_isa);

/// "AMD EPYC 7B13" or "CPU" when unknown.
const std::string& cpu_model();

/// The device type description registered with the host.
TsrDeviceTypeDesc cpu_device_desc();

}  // namespace tessera::cpu
