// tessera/ops/call.h — calling any op by name, with its schema's argument names
// (the route to ops no C++ function was written for: plugin-defined ops, and
// every library op from generic code).
#pragma once

#include <tessera/device.h>
#include <tessera/dtype.h>
#include <tessera/tensor.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::ops {

/// One argument of call(): none (an omitted optional), a tensor, an integer, a
/// float, a bool, a list of integers, a dtype, a string, a device or a list of
/// tensors. A number given where the schema wants a Tensor becomes a 0-d
/// tensor that promotes like a Python number (as `a + 2` does), on the device
/// of the call's first tensor argument (cpu if there is none).
using Arg = std::variant<std::monostate, Tensor, int64_t, double, bool, std::vector<int64_t>, ScalarType,
                         std::string, Device, std::vector<Tensor>>;

/// A keyword argument: the schema's argument name and its value.
using KwArg = std::pair<std::string, Arg>;

/// Calls the op named `name` ("add", "sum", "max.dim", a plugin's
/// "myplugin::op") with `args` bound to the schema's arguments in order, then
/// `kwargs` by name; arguments left out take the schema's defaults. Returns
/// the op's results (one tensor for most ops; an in-place op returns the
/// tensor it wrote). Runs through the dispatcher exactly as the op's C++
/// function would (autograd, tracing, every device).
///
/// Errors, each naming the op and the argument: an unknown op
/// (NotImplementedError); more positional arguments than the schema has, a
/// positional value for a keyword-only argument, an unknown or repeated
/// keyword, a required argument left out (TypeError); a value whose kind the
/// argument's type does not take (TypeError, naming both); and whatever the op
/// itself raises. Thread-safe as any op call; `args` and `kwargs` are borrowed
/// for the call.
std::vector<Tensor> call(std::string_view name, const std::vector<Arg>& args, const std::vector<KwArg>& kwargs = {});

}  // namespace tessera::ops
