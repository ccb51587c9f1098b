// The float32 add/sub/mul loop for the common case — every operand one dense
// array — unrolled, which keeps more loads in flight than the generic
// one-vector-per-iteration loop on memory-bound sizes.
#pragma once

#include "isa.hpp"
#include "common.hpp"
#include "parallel.hpp"

#include <cstddef>
#include <cstdint>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {

enum class DenseOp { Add, Sub, Mul };

/// o = x op y over n elements of three dense float32 arrays; o may be x or y,
/// as each element is read before it is written. Same results as the generic
/// loop (one IEEE operation per element).
template <DenseOp K>
inline void dense_f32_chunk(float* o, const float* x, const float* y, int64_t begin, int64_t end) {
#pragma GCC unroll 4
  for (int64_t i = begin; i < end; ++i) {
    if constexpr (K == DenseOp::Add) o[i] = x[i] + y[i];
    if constexpr (K == DenseOp::Sub) o[i] = x[i] - y[i];
    if constexpr (K == DenseOp::Mul) o[i] = x[i] * y[i];
  }
}

// Out of line: keeps the thread-pool setup out of the small-size path's frame.
template <DenseOp K>
[[gnu::noinline]] void dense_f32_parallel(float* o, const float* x, const float* y, int64_t n, int64_t grain) {
  parallel_for(n, grain, [o, x, y](int64_t begin, int64_t end) { dense_f32_chunk<K>(o, x, y, begin, end); });
}

/// The operands of the usual float32 call of a binary kernel.
struct DenseF32Operands {
  const float* x;  // args[0]
  const float* y;  // args[1]
  float* o;        // outputs[0]
  int64_t n;       // elements
};

/// Whether `call` is the usual float32 binary call — args[0] and args[1]
/// tensors and outputs[0], all float32, holding data, dense row-major arrays of
/// one shape — and if so its operands, found in one pass with no message
/// built. Any other call (false) goes to the kernel's general path, whose
/// checks say what is wrong. kOneDim: only one-dimensional operands (the
/// usual tiny op), which need few registers; otherwise any rank.
template <bool kOneDim>
[[gnu::always_inline]] inline bool dense_f32_operands(const TsrKernelCall& call, DenseF32Operands& d) {
  if (call.dtype != TSR_DTYPE_FLOAT32 || call.args == nullptr || call.num_args < 2 || call.outputs == nullptr ||
      call.num_outputs < 1)
    return false;
  const TsrValue* args = call.args;
  // checked: num_args >= 2 above (the fast path reads args directly; sdk::tensor_arg says what is wrong otherwise)
  if ((args[0].tag != TSR_VALUE_TENSOR) | (args[1].tag != TSR_VALUE_TENSOR)) return false;  // checked: above
  const DLTensor* s = args[0].as.tensor;  // checked: above
  const DLTensor* t = args[1].as.tensor;  // checked: above
  const DLTensor* o = call.outputs;
  if (s == nullptr || t == nullptr) return false;
  constexpr DLDataType kF32{kDLFloat, 32, 1};
  uint32_t want, ds, dt, dout;
  std::memcpy(&want, &kF32, sizeof want);
  std::memcpy(&ds, &s->dtype, sizeof ds);
  std::memcpy(&dt, &t->dtype, sizeof dt);
  std::memcpy(&dout, &o->dtype, sizeof dout);
  const int32_t nd = o->ndim;
  if (((ds ^ want) | (dt ^ want) | (dout ^ want)) != 0 || s->ndim != nd || t->ndim != nd || nd < 0) return false;
  if (kOneDim && nd != 1) return false;
  // Shapes and strides first, data pointers after: fewer values live at once.
  int64_t n = 1;
  if (nd > 0) {
    const int64_t *os = o->shape, *ss = s->shape, *ts = t->shape;
    if (os == nullptr || ss == nullptr || ts == nullptr) return false;
    for (int32_t i = (kOneDim ? 0 : nd - 1); i >= 0; --i) {
      const int64_t k = os[i];
      if (ss[i] != k || ts[i] != k) return false;
      if (k != 1) {  // a size-1 dim's stride is free: a one-element op reads none
        const int64_t *ost = o->strides, *sst = s->strides, *tst = t->strides;
        if (ost == nullptr || sst == nullptr || tst == nullptr || ost[i] != n || sst[i] != n || tst[i] != n)
          return false;
      }
      n *= k;
    }
  }
  if (s->data == nullptr || t->data == nullptr || o->data == nullptr) return false;
  d.x = reinterpret_cast<const float*>(data_ptr(*s));
  d.y = reinterpret_cast<const float*>(data_ptr(*t));
  d.o = reinterpret_cast<float*>(data_ptr(*o));
  d.n = n;
  return true;
}

/// add/sub's alpha is 1 (given as such, or None for the default): what their
/// float32 fast path handles; anything else, a missing or bad alpha included,
/// takes the general path.
[[gnu::always_inline]] inline bool unit_alpha(const TsrKernelCall& call) {
  if (call.num_args < 3) return false;
  const TsrValue& v = call.args[2];  // checked: num_args >= 3 above
  return v.tag == TSR_VALUE_NONE || (v.tag == TSR_VALUE_FLOAT && v.as.f == 1.0) ||
         (v.tag == TSR_VALUE_INT && v.as.i == 1);
}

// Out of line (and a tail call), so that the fast entry keeps no registers
// across a call.
template <DenseOp K>
[[gnu::noinline]] TsrError* dense_f32_small(float* o, const float* x, const float* y, int64_t n) {
  dense_f32_chunk<K>(o, x, y, 0, n);
  return nullptr;
}

// Operands by value, in registers: the entry's tail call then keeps its
// operands out of memory on the small-size path too.
template <DenseOp K>
[[gnu::noinline]] TsrError* dense_f32_large(float* o, const float* x, const float* y, int64_t n) noexcept {
  return sdk::guard([=] { dense_f32_parallel<K>(o, x, y, n, kGrain); });
}

/// The entry point of add, sub and mul: asks whether the call is the usual
/// dense float32 one (with alpha 1 when kAlpha) and if so runs its loop here —
/// straight up to one grain, as nothing on that path can throw, in parallel
/// under the kernel guard above that. The registered instance (kOneDim) asks
/// for one-dimensional operands, the tiny op's, with few registers, and passes
/// any other call to the any-rank instance; a call that is not the usual one
/// goes to kernel_entry<General>, with its guard and checks. The general path
/// never sees a usual dense float32 call, so it does not ask again.
template <DenseOp K, bool kAlpha, void (*General)(const TsrKernelCall&), bool kOneDim = true>
[[gnu::noinline]] TsrError* dense_f32_entry(const TsrKernelCall* call) noexcept {
  DenseF32Operands d;
  if (call != nullptr && call->struct_size >= offsetof(TsrKernelCall, handle) &&
      dense_f32_operands<kOneDim>(*call, d) && (!kAlpha || unit_alpha(*call))) [[likely]] {
    if (d.n == 1) {  // a scalar: skip the unrolled loop's remainder logic
      dense_f32_chunk<K>(d.o, d.x, d.y, 0, 1);
      return nullptr;
    }
    if (d.n <= kGrain) return dense_f32_small<K>(d.o, d.x, d.y, d.n);
    return dense_f32_large<K>(d.o, d.x, d.y, d.n);
  }
  if constexpr (kOneDim) return dense_f32_entry<K, kAlpha, General, false>(call);
  return kernel_entry<General>(call);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
