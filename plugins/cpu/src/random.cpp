// The Philox-driven random kernels: uniform_, normal_, random_, bernoulli_,
// randperm, dropout. Element i (row-major order of the output) draws from the
// Philox block of counter (offset + i) under key seed, so results depend only on
// (seed, offset), never on the thread split. The core advances the generator's
// offset by the output's element count (docs/ops/random.md). Every value comes
// from the SDK's transforms (tessera/sdk/philox.hpp), which the cuda plugin runs
// too: the same seed gives the same bits on both.
#include "isa.hpp"
#include <tessera/sdk/philox.hpp>

#include "common.hpp"
#include "kernels.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

namespace philox = ::tessera::sdk::philox;

struct Stream {
  uint64_t seed;
  uint64_t offset;
  philox::Block at(int64_t i) const { return philox::at(seed, offset + static_cast<uint64_t>(i)); }
};
Stream stream_args(const TsrKernelCall& call, size_t seed_index) {
  return Stream{static_cast<uint64_t>(int_arg(call, seed_index, "seed")),
                static_cast<uint64_t>(int_arg(call, seed_index + 1, "offset"))};
}

// Runs f(ptrs, i) for every element, i being its row-major index (the Philox
// counter delta), split across threads in contiguous ranges.
template <size_t N, typename F>
void indexed_loop(const DLTensor& shape_of, const std::array<sdk::IterOperand, N>& ops, const F& f) {
  int64_t n_dense = 0;
  if (sdk::StridedIter<N>::dense(shape_of.ndim, shape_of.shape, ops, &n_dense)) {
    // Dense operands: element i sits at i * elem_size; a flat loop the compiler can unroll.
    parallel_for(n_dense, kGrainExpensive, [&](int64_t begin, int64_t end) {
      char* q[N];
      for (int64_t i = begin; i < end; ++i) {
        for (size_t n = 0; n < N; ++n) q[n] = ops[n].data + i * ops[n].elem_size;
        f(q, i);
      }
    });
    return;
  }
  const sdk::StridedIter<N> it(shape_of.ndim, shape_of.shape, ops, sdk::IterOrder::kRowMajor);
  parallel_for(it.numel(), kGrainExpensive, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
    it.for_range(begin, end, [&](char** p, const int64_t* s, int64_t len) {
      char* q[N];
      for (int64_t k = 0; k < len; ++k, ++i) {
        for (size_t n = 0; n < N; ++n) q[n] = p[n] + k * s[n];
        f(q, i);
      }
    });
  });
}

DLTensor& self_output(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  DLTensor& out = output(call, 0, call.dtype);
  if (out.data != self.data) invalid("the output must be self (an in-place op)");
  return out;
}

template <typename T>
T store_float(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (kIsHalfLike<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

void uniform_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const double from = float_arg(call, 1, "from"), to = float_arg(call, 2, "to");
  const Stream st = stream_args(call, 3);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("uniform_ needs a floating dtype");
    } else {
      const double range = to - from;
      indexed_loop<1>(out, {sdk::IterOperand::of(out)}, [&](char** p, int64_t i) {
        T v = T(philox::uniform_value(st.at(i), std::is_same_v<T, double>, from, range));
        // Rounding to a narrow dtype may reach `to`; keep the interval half-open.
        if (range > 0 && static_cast<double>(compute_t<T>(v)) >= to) v = T(from);
        *reinterpret_cast<T*>(p[0]) = v;
      });
    }
  });
}

void normal_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const double mean = float_arg(call, 1, "mean"), std_ = float_arg(call, 2, "std");
  const Stream st = stream_args(call, 3);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("normal_ needs a floating dtype");
    } else {
      indexed_loop<1>(out, {sdk::IterOperand::of(out)}, [&](char** p, int64_t i) {
        // Box-Muller in the SDK's portable double arithmetic (bit-exact across devices).
        *reinterpret_cast<T*>(p[0]) = T(philox::normal_value(st.at(i), mean, std_));
      });
    }
  });
}

void random_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const int64_t from = int_arg(call, 1, "from"), to = int_arg(call, 2, "to");
  if (to <= from) invalid("random_ expects from < to, got from=" + std::to_string(from) + " to=" + std::to_string(to));
  const Stream st = stream_args(call, 3);
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    indexed_loop<1>(out, {sdk::IterOperand::of(out)}, [&](char** p, int64_t i) {
      const int64_t v = philox::random_int(st.at(i), from, range);
      if constexpr (std::is_same_v<T, bool>) {
        *reinterpret_cast<S*>(p[0]) = v != 0;
      } else if constexpr (kIsHalfLike<T>) {
        *reinterpret_cast<S*>(p[0]) = T(static_cast<float>(v));
      } else {
        *reinterpret_cast<S*>(p[0]) = static_cast<S>(v);
      }
    });
  });
}

void bernoulli_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const TsrValue& pv = arg(call, 1, "p");
  const Stream st = stream_args(call, 2);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    const auto put = [](char* dst, bool hit) { *reinterpret_cast<S*>(dst) = store_float<T>(hit ? 1.0 : 0.0); };
    if (pv.tag == TSR_VALUE_TENSOR) {
      const DLTensor& p = tensor_arg(call, 1, "p", TSR_DTYPE_FLOAT64);
      check_same_shape(p, "p", out, "self");
      indexed_loop<2>(out, {sdk::IterOperand::of(out), sdk::IterOperand::of(p)}, [&](char** q, int64_t i) {
        const double prob = *reinterpret_cast<const double*>(q[1]);
        if (!(prob >= 0.0 && prob <= 1.0)) {
          fail(TSR_ERROR_INVALID_ARGUMENT, "bernoulli_ expects all probabilities in [0, 1], got " + std::to_string(prob));
        }
        put(q[0], philox::bernoulli(st.at(i), prob));
      });
    } else {
      const double prob = float_arg(call, 1, "p");
      indexed_loop<1>(out, {sdk::IterOperand::of(out)}, [&](char** q, int64_t i) {
        put(q[0], philox::bernoulli(st.at(i), prob));
      });
    }
  });
}

void randperm_kernel(const TsrKernelCall& call) {
  const int64_t n = int_arg(call, 0, "n");
  const Stream st = stream_args(call, 1);
  DLTensor& out = output(call, 0, call.dtype);
  if (n < 0) invalid("randperm: n must be non-negative, got " + std::to_string(n));
  if (out.ndim != 1 || out.shape[0] != n) invalid("randperm: out must have shape [n]");
  // Index k gets the 64-bit key of counter (offset + k); the permutation is the
  // indices by ascending (key, index). A sort, unlike Fisher-Yates, has a
  // parallel form: the cuda plugin radix-sorts the same pairs and gets the same
  // permutation.
  struct Keyed {
    uint64_t key;
    int64_t index;
  };
  std::vector<Keyed> keyed(static_cast<size_t>(n));
  parallel_for(n, kGrainExpensive, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) keyed[static_cast<size_t>(k)] = Keyed{philox::randperm_key(st.at(k)), k};
  });
  std::sort(keyed.begin(), keyed.end(),
            [](const Keyed& a, const Keyed& b) { return a.key != b.key ? a.key < b.key : a.index < b.index; });
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      invalid("randperm does not support bool");
    } else {
      char* base = data_ptr(out);
      const int64_t stride = out.strides[0] * static_cast<int64_t>(sizeof(S));
      for (int64_t k = 0; k < n; ++k) {
        const int64_t index = keyed[static_cast<size_t>(k)].index;
        S v;
        if constexpr (kIsHalfLike<T>) {
          v = T(static_cast<float>(index));
        } else {
          v = static_cast<S>(index);
        }
        *reinterpret_cast<S*>(base + k * stride) = v;
      }
    }
  });
}

void dropout_kernel(const TsrKernelCall& call) {
  const DLTensor& in = tensor_arg(call, 0, "input", call.dtype);
  const double p = float_arg(call, 1, "p");
  const Stream st = stream_args(call, 3);
  DLTensor& out = output(call, 0, call.dtype);
  check_same_shape(in, "input", out, "out");
  if (!(p >= 0.0 && p <= 1.0)) invalid("dropout probability has to be between 0 and 1, got " + std::to_string(p));
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      invalid("dropout needs a floating dtype");
    } else {
      using C = compute_t<T>;
      const C scale = p < 1.0 ? static_cast<C>(1.0 / (1.0 - p)) : C(0);
      indexed_loop<2>(out, {sdk::IterOperand::of(out), sdk::IterOperand::of(in)}, [&](char** q, int64_t i) {
        const bool drop = philox::bernoulli(st.at(i), p);
        const C x = C(*reinterpret_cast<const T*>(q[1]));
        *reinterpret_cast<T*>(q[0]) = drop ? T(C(0)) : T(x * scale);
      });
    }
  });
}

}  // namespace

void register_random_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"uniform_", kFloatMask, &kernel_entry<&uniform_kernel>},
      {"normal_", kFloatMask, &kernel_entry<&normal_kernel>},
      {"random_", kAllMask, &kernel_entry<&random_kernel>},
      {"bernoulli_.float", kAllMask, &kernel_entry<&bernoulli_kernel>},
      {"bernoulli_.Tensor", kAllMask, &kernel_entry<&bernoulli_kernel>},
      {"randperm", kNumericMask, &kernel_entry<&randperm_kernel>},
      {"dropout", kFloatMask, &kernel_entry<&dropout_kernel>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
