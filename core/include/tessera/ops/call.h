// tessera/ops/call.h — calling any op by name, with its schema's argument names
// (the route to ops no C++ function was written for: plugin-defined ops, and
// every library op from generic code).
#pragma once

#include <tessera/device.h>
#include <tessera/dispatcher.h>
#include <tessera/dtype.h>
#include <tessera/tensor.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
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
/// `out=`: a keyword "out" (a Tensor) that the schema does not name writes the
/// result of an op with one Tensor result (not in-place, not a view) into it
/// and returns it; `out` must be on the result's device with its shape, and the
/// result's dtype must cast to out's (ValueError / TypeError naming the op).
///
/// Errors, each naming the op and the argument: an unknown op
/// (NotImplementedError); more positional arguments than the schema has, a
/// positional value for a keyword-only argument, an unknown or repeated
/// keyword, a required argument left out (TypeError); a value whose kind the
/// argument's type does not take (TypeError, naming both); and whatever the op
/// itself raises. Thread-safe as any op call; `args` and `kwargs` are borrowed
/// for the call.
std::vector<Tensor> call(std::string_view name, const std::vector<Arg>& args, const std::vector<KwArg>& kwargs = {});
/// As call(name, ...), for an op already looked up.
std::vector<Tensor> call(const Operator& op, const std::vector<Arg>& args, const std::vector<KwArg>& kwargs = {});

namespace typed_detail {
/// The Arg alternative a C++ argument type becomes (its index in Arg).
template <typename T>
constexpr size_t arg_kind() {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) return 1;
  else if constexpr (std::is_same_v<U, bool>) return 4;
  else if constexpr (std::is_integral_v<U>) return 2;
  else if constexpr (std::is_floating_point_v<U>) return 3;
  else if constexpr (std::is_same_v<U, std::vector<int64_t>> || std::is_same_v<U, IntArrayRef>) return 5;
  else if constexpr (std::is_same_v<U, ScalarType>) return 6;
  else if constexpr (std::is_convertible_v<U, std::string_view>) return 7;
  else if constexpr (std::is_same_v<U, Device>) return 8;
  else if constexpr (std::is_same_v<U, std::vector<Tensor>>) return 9;
  else static_assert(sizeof(U) == 0, "tessera::ops::TypedOp: an argument type ops cannot take");
}
template <typename T>
Arg to_arg(T&& v) {
  constexpr size_t k = arg_kind<T>();
  if constexpr (k == 2) return static_cast<int64_t>(v);
  else if constexpr (k == 3) return static_cast<double>(v);
  else if constexpr (k == 5) return std::vector<int64_t>(v.begin(), v.end());
  else if constexpr (k == 7) return std::string(std::string_view(v));
  else return Arg(std::in_place_index<k>, std::forward<T>(v));
}
/// Checks that arguments of these kinds (Arg indices) bind to op's schema in
/// order, its other arguments having defaults, and that it returns
/// `num_results` tensors (0: any number). TypeError naming the op, the
/// argument and both types otherwise.
void check_signature(const Operator& op, const std::vector<size_t>& kinds, size_t num_results);
/// Calls op with args bound by position, keyword-only arguments included.
std::vector<Tensor> call_positional(const Operator& op, std::vector<Arg> args);
}  // namespace typed_detail

template <typename Sig>
class TypedOp;

/// A typed handle on an op by name, e.g. a plugin's:
///
///   const tessera::ops::TypedOp<Tensor(const Tensor&, double)> gelu("myplugin::fused_gelu");
///   Tensor y = gelu(x, 0.5);
///
/// The constructor finds the op (NotImplementedError if absent) and checks the
/// C++ signature against its schema once (TypeError): each parameter binds to
/// the schema's argument at that position, keyword-only ones included (Tensor to Tensor, an integer to int
/// or float or Scalar, a floating value to float or Scalar, bool, int lists,
/// ScalarType, strings, Device, tensor lists); the schema's later arguments need
/// defaults. The result type is Tensor (one result) or std::vector<Tensor> (any).
/// A call binds like ops::call without looking the name up again. The handle
/// stays valid while the process runs (ops are never undeclared; a plugin op
/// whose plugin was unloaded fails its calls naming the plugin). Thread-safe.
template <typename R, typename... Params>
class TypedOp<R(Params...)> {
  static_assert(std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>>,
                "TypedOp returns Tensor or std::vector<Tensor>");

 public:
  explicit TypedOp(std::string_view name) : op_(&Dispatcher::instance().get(name)) {
    typed_detail::check_signature(*op_, {typed_detail::arg_kind<Params>()...}, std::is_same_v<R, Tensor> ? 1 : 0);
  }
  const Operator& op() const { return *op_; }
  template <typename... A>
  R operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(Params), "TypedOp: call with the handle's parameters");
    std::vector<Tensor> out =
        typed_detail::call_positional(*op_, {typed_detail::to_arg(static_cast<Params>(std::forward<A>(args)))...});
    if constexpr (std::is_same_v<R, Tensor>) return std::move(out.at(0));
    else return out;
  }

 private:
  const Operator* op_;
};

}  // namespace tessera::ops
