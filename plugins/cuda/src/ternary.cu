// The CUDA plugin's ternary pointwise kernels (docs/ops/ternary.md): where,
// lerp, addcmul, addcdiv, _clamp, each as the cpu plugin computes it
// (plugins/cpu/src/ternary.cpp). clamp is a core composite that runs _clamp
// when both bounds are given. float16/bfloat16 compute in float and round
// once; integer arithmetic wraps; no multiply is fused into an add (the cpu
// plugin builds with -ffp-contract=off, and a fused a + b*c can stay finite
// where the unfused one overflows).
#include "common.cuh"
#include "elementwise.cuh"
#include "kernels.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

namespace tessera::cuda {
namespace {

/// A product the compiler may not fuse into a following add.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float d_abs(float a) { return fabsf(a); }
__device__ __forceinline__ double d_abs(double a) { return fabs(a); }

struct SelectOp {
  template <typename U>
  __device__ __forceinline__ U operator()(uint8_t condition, U x, U y) const {
    return condition != 0 ? x : y;
  }
};

/// self + weight * (end - self) for |weight| < 0.5, else from end's side
/// (exact at weight 1), PyTorch's formula; C is float or double.
template <typename C>
struct LerpOp {
  __device__ __forceinline__ C operator()(C a, C b, C t) const {
    const C d = b - a;
    return d_abs(t) < C(0.5) ? a + mul_rn(t, d) : b - mul_rn(d, C(1) - t);
  }
};

/// self + value * tensor1 * tensor2 (kDiv false) or self + value * (tensor1 / tensor2).
template <typename T, bool kDiv>
struct AddcOp {
  compute_t<T> value;
  __device__ __forceinline__ compute_t<T> operator()(compute_t<T> s, compute_t<T> x, compute_t<T> y) const {
    if constexpr (kIsInteger<T>) {
      static_assert(!kDiv, "addcdiv runs in a floating dtype");
      return wrap_add(s, wrap_mul(value, wrap_mul(x, y)));
    } else if constexpr (kDiv) {
      return s + mul_rn(value, x / y);
    } else {
      return s + mul_rn(value, x * y);
    }
  }
};

/// min(max(x, lo), hi); NaN in any operand gives NaN (maximum then minimum).
struct ClampOp {
  template <typename C>
  __device__ __forceinline__ C operator()(C x, C lo, C hi) const {
    if constexpr (std::is_floating_point_v<C>) {
      const C r = lo != lo ? lo : (x < lo ? lo : x);  // a NaN x fails x < lo and stays
      return hi != hi ? hi : (r > hi ? hi : r);
    } else {
      const C r = x < lo ? lo : x;
      return r > hi ? hi : r;
    }
  }
};

struct Operands {
  const DLTensor* a;
  const DLTensor* b;
  const DLTensor* c;
  DLTensor* out;
};

/// The three inputs (the first of `a_dtype`, the others of the dispatch dtype)
/// and out (the dispatch dtype), all of out's shape.
Operands ternary_operands(const TsrKernelCall& call, const char* a_name, TsrDType a_dtype, const char* b_name,
                          const char* c_name) {
  const DLTensor& a = sdk::tensor_arg(call, 0, a_name, a_dtype);
  const DLTensor& b = sdk::tensor_arg(call, 1, b_name, call.dtype);
  const DLTensor& c = sdk::tensor_arg(call, 2, c_name, call.dtype);
  DLTensor& out = sdk::output(call, 0, call.dtype);
  sdk::check_same_shape(a, a_name, out, "out");
  sdk::check_same_shape(b, b_name, out, "out");
  sdk::check_same_shape(c, c_name, out, "out");
  return {&a, &b, &c, &out};
}

/// out = f(a, b, c) with storage types Out, A, B, C, on the call's stream.
template <typename Out, typename A, typename B, typename C, typename F>
void run(const TsrKernelCall& call, const Operands& ops, const F& f) {
  const Geometry<4> g = make_geometry<4>({ops.out, ops.a, ops.b, ops.c});
  const std::array<const char*, 3> in = {data_as<const char>(*ops.a), data_as<const char>(*ops.b),
                                         data_as<const char>(*ops.c)};
  launch_elementwise<Out, A, B, C>(g, data_as<char>(*ops.out), in, f, stream_of(call));
}

void where_kernel(const TsrKernelCall& call) {
  const Operands ops = ternary_operands(call, "condition", TSR_DTYPE_BOOL, "self", "other");
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using U = bits_t<typename decltype(tag)::type>;
    run<U, uint8_t, U, U>(call, ops, SelectOp{});
  });
}

void lerp_kernel(const TsrKernelCall& call) {
  const Operands ops = ternary_operands(call, "self", call.dtype, "end", "weight");
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      sdk::invalid("lerp needs a floating dtype");
    } else {
      run<T, T, T, T>(call, ops, LerpOp<compute_t<T>>{});
    }
  });
}

void clamp_kernel(const TsrKernelCall& call) {
  const Operands ops = ternary_operands(call, "self", call.dtype, "min", "max");
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run<T, T, T, T>(call, ops, ClampOp{});
  });
}

/// addcmul/addcdiv's value (argument 3) in the compute type of T; a float
/// value is refused for integer dtypes (as on cpu).
template <typename T>
compute_t<T> value_as(const TsrKernelCall& call) {
  const TsrValue& v = sdk::arg(call, 3, "value");
  if (v.tag == TSR_VALUE_NONE) return compute_t<T>(1);
  sdk::check_scalar(v, "value");
  if constexpr (!kIsFloating<T>) {
    if (v.tag == TSR_VALUE_FLOAT) sdk::invalid("value must be an int for an integer dtype");
    return v.tag == TSR_VALUE_INT ? static_cast<T>(v.as.i) : static_cast<T>(v.as.b != 0);  // ints wrap
  } else {
    using C = compute_t<T>;
    return v.tag == TSR_VALUE_INT ? C(v.as.i) : v.tag == TSR_VALUE_FLOAT ? C(v.as.f) : C(v.as.b != 0);
  }
}

template <bool kDiv>
void addc_kernel(const TsrKernelCall& call) {
  const Operands ops = ternary_operands(call, "self", call.dtype, "tensor1", "tensor2");
  DeviceScope scope(call.device_index);
  dispatch(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      sdk::invalid("not defined for bool tensors");
    } else if constexpr (kIsInteger<T> && kDiv) {
      sdk::invalid("integer division is not supported");
    } else {
      run<T, T, T, T>(call, ops, AddcOp<T, kDiv>{value_as<T>(call)});
    }
  });
}

template <void (*Body)(const TsrKernelCall&)>
void reg(const sdk::Host& host, const char* op, uint64_t mask) {
  host.register_kernel(op, "cuda", mask, &sdk::kernel_entry<kCuda, Body>);
}

}  // namespace

void register_ternary(const sdk::Host& host) {
  // The cpu plugin's table (plugins/cpu/src/ternary.cpp), op for op and mask for mask.
  reg<&where_kernel>(host, "where", kAllMask);
  reg<&lerp_kernel>(host, "lerp", kFloatMask);
  reg<&clamp_kernel>(host, "_clamp", kAllMask);
  reg<&addc_kernel<false>>(host, "addcmul", kNumericMask);
  reg<&addc_kernel<true>>(host, "addcdiv", kFloatMask);
}

}  // namespace tessera::cuda
