// Internal: the array API's integer encoding of streams (tessera/dlpack.h's
// DLPackStream) for each DLPack device type, as pure functions, so that the
// rules are tested without the devices. This is docs/dlpack.md's default
// mapping: None is the plugin's NULL (default) stream, and other values are
// the plugin's TsrStream handle bits, except where the array API defines a
// value for CUDA and ROCm. (ABI slots that let a plugin choose its own
// encoding are a possible later minor addition; CUDA needs none.)
#pragma once

#include <tessera/abi.h>
#include <tessera/dlpack.h>

#include <cstdint>
#include <optional>
#include <string>

namespace tessera::dlpack_streams {

/// The plugin stream that a consumer's `value` (not kDLPackNoSync) names on a
/// device of DLPack type `dl_type`: nullopt and kDLCUDA's 1 are the NULL
/// stream. Throws ValueError "<who>: stream=<value> is refused for <where>:
/// <why>" for a value below -1, kDLCUDA's 0 and kDLROCM's 1 and 2.
TsrStream handle_of(int32_t dl_type, DLPackStream value, const char* who, const std::string& where);

/// The value naming plugin stream `s` on DLPack type `dl_type`: its handle
/// bits; for the NULL stream 1 on kDLCUDA (legacy default), 0 on kDLROCM, and
/// nullopt (None) on every other type.
DLPackStream value_of(int32_t dl_type, TsrStream s);

}  // namespace tessera::dlpack_streams
