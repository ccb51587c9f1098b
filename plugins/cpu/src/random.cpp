// The Philox-driven random kernels: uniform_, normal_, random_, bernoulli_,
// randperm, dropout. Element i (row-major order of the output) draws from the
// Philox block of counter (offset + i) under key seed, so results depend only on
// (seed, offset), never on the thread split. The core advances the generator's
// offset by the output's element count (docs/ops/random.md). Every value comes
// from the SDK's transforms (tessera/sdk/philox.hpp), which the cuda plugin runs
// too: the same seed gives the same bits on both. Dense outputs are filled
// kBatch elements at a time by philox_batch.hpp's vector code, which computes
// those transforms bit for bit; strided outputs and the last few elements of
// a range call the SDK's scalar functions.
#include "isa.hpp"
#include <tessera/sdk/philox.hpp>

#include "aligned_memory.hpp"
#include "common.hpp"
#include "convert.hpp"
#include "kernels.hpp"
#include "parallel.hpp"
#include "philox_batch.hpp"
#include "randperm_sort.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

namespace philox = ::tessera::sdk::philox;
namespace pb = philox_batch;
using pb::kLanes;
// Vectors per batch: enough independent dependency chains to keep the vector
// units busy (normal_'s are long), few enough to stay in registers (AVX2 and
// SSE2 have 16). The fastest of 1, 2, 4 and 8 at each level.
#if defined(__AVX512F__)
constexpr int kVecs = 4, kNormalVecs = 4;
#else
constexpr int kVecs = 2, kNormalVecs = 4;
#endif
constexpr int64_t kBatch = kVecs * kLanes, kNormalBatch = 2 * kNormalVecs * kLanes;  // normal_: two per block

struct Stream {
  uint64_t seed;
  uint64_t offset;
  philox::Block at(int64_t i) const { return philox::at(seed, offset + static_cast<uint64_t>(i)); }
  uint64_t counter(int64_t i) const { return offset + static_cast<uint64_t>(i); }
};
Stream stream_args(const TsrKernelCall& call, size_t seed_index) {
  return Stream{static_cast<uint64_t>(int_arg(call, seed_index, "seed")),
                static_cast<uint64_t>(int_arg(call, seed_index + 1, "offset"))};
}

// Runs f(ptrs, i) for every element, i being its row-major index (the Philox
// counter delta), split across threads in contiguous ranges. With a `batch`
// functor, dense operands go B elements at a time through batch(ptrs, i)
// (elements i .. i + B - 1, each operand's from ptrs[n] on), and f takes the
// rest of each range; strided operands take f throughout. A batch starts only
// where i + phase is a multiple of `align` (normal_'s pairs of counters).
template <size_t N, int64_t B = 0, typename F, typename Batch = std::nullptr_t>
void indexed_loop(const DLTensor& shape_of, const std::array<sdk::IterOperand, N>& ops, const F& f,
                  const Batch& batch = nullptr, int64_t align = 1, int64_t phase = 0) {
  int64_t n_dense = 0;
  if (sdk::StridedIter<N>::dense(shape_of.ndim, shape_of.shape, ops, &n_dense)) {
    // Dense operands: element i sits at i * elem_size.
    parallel_for(n_dense, kGrainExpensive, [&](int64_t begin, int64_t end) {
      char* q[N];
      int64_t i = begin;
      if constexpr (B > 0) {
        for (; i < end && (i + phase) % align != 0; ++i) {
          for (size_t n = 0; n < N; ++n) q[n] = ops[n].data + i * ops[n].elem_size;
          f(q, i);
        }
        for (; end - i >= B; i += B) {
          for (size_t n = 0; n < N; ++n) q[n] = ops[n].data + i * ops[n].elem_size;
          batch(q, i);
        }
      }
      for (; i < end; ++i) {
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

// V vectors of doubles, value(v) holding elements v * kLanes onwards, rounded
// to T (to float first for the 16-bit types, as T(double) does) and stored at
// dst.
template <typename T, int V, typename Value>
void store_batch(char* dst, const Value& value) {
  if constexpr (std::is_same_v<T, double>) {
    for (int v = 0; v < V; ++v) {
      const pb::D x = value(v);
      std::memcpy(dst + v * sizeof x, &x, sizeof x);
    }
  } else if constexpr (std::is_same_v<T, float>) {
    for (int v = 0; v < V; ++v) {
      const pb::F x = pb::to_float(value(v));
      std::memcpy(dst + v * sizeof x, &x, sizeof x);
    }
  } else {
    alignas(64) float f[V * kLanes];
    for (int v = 0; v < V; ++v) {
      const pb::F x = pb::to_float(value(v));
      std::memcpy(f + v * kLanes, &x, sizeof x);
    }
#pragma GCC diagnostic push
    // GCC 12 sees _mm512_cvtps_ph's undefined pass-through operand as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
    narrow_block(f, reinterpret_cast<T*>(dst), V * kLanes);  // T(float), vectorized
#pragma GCC diagnostic pop
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
      // Rounding to a narrow dtype may reach `to`; keep the interval half-open.
      const bool clamp = range > 0;
      const pb::Key key(st.seed);
      const auto one = [&](char** p, int64_t i) {
        T v = T(philox::uniform_value(st.at(i), std::is_same_v<T, double>, from, range));
        if (clamp && static_cast<double>(compute_t<T>(v)) >= to) v = T(from);
        *reinterpret_cast<T*>(p[0]) = v;
      };
      const auto batch = [&](char** p, int64_t i) {
        const pb::Words<kVecs> w = pb::generate<kVecs>(key, st.counter(i));
        // philox::uniform_value's from + range * u (-ffp-contract=off: never an FMA).
        const auto value = [&](int v) {
          const pb::D u = std::is_same_v<T, double> ? pb::uniform53(w.x0[v], w.x1[v]) : pb::uniform24(w.x0[v]);
          return from + range * u;
        };
        if constexpr (std::is_same_v<T, double>) {
          store_batch<T, kVecs>(p[0], [&](int v) {
            const pb::D x = value(v);
            return clamp ? (x >= to ? pb::dvec(from) : x) : x;
          });
        } else if constexpr (std::is_same_v<T, float>) {
          // T(from) where the float reached `to`: select in double, exact both ways.
          store_batch<T, kVecs>(p[0], [&](int v) {
            const pb::D x = pb::to_double(pb::to_float(value(v)));
            return clamp ? (x >= to ? pb::dvec(from) : x) : x;
          });
        } else {
          store_batch<T, kVecs>(p[0], value);
          if (clamp) {
            T* dst = reinterpret_cast<T*>(p[0]);
            float back[kBatch];
            widen_block(dst, back, kBatch);  // float(T), vectorized
            for (int k = 0; k < kBatch; ++k) {
              if (static_cast<double>(back[k]) >= to) dst[k] = T(from);
            }
          }
        }
      };
      indexed_loop<1, kBatch>(out, {sdk::IterOperand::of(out)}, one, batch);
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
      const pb::Key key(st.seed);
      const auto one = [&](char** p, int64_t i) {
        // Box-Muller in the SDK's portable double arithmetic (bit-exact across devices).
        *reinterpret_cast<T*>(p[0]) = T(philox::normal_value(st.seed, st.counter(i), mean, std_));
      };
      // From an even counter c: the blocks c, c + 2, ..., each giving the
      // normals of its counter and the next.
      const auto batch = [&](char** p, int64_t i) {
        const pb::CosSin<kNormalVecs> z =
            pb::standard_normal_pairs(pb::generate<kNormalVecs, 2>(key, st.counter(i)));
        pb::D values[2 * kNormalVecs];
        for (int v = 0; v < kNormalVecs; ++v) {
          // philox::normal_value (-ffp-contract=off: never an FMA)
          const pb::D even = mean + std_ * z.cos.v[v], odd = mean + std_ * z.sin.v[v];
          values[2 * v] = pb::interleave<0>(even, odd);
          values[2 * v + 1] = pb::interleave<1>(even, odd);
        }
        store_batch<T, 2 * kNormalVecs>(p[0], [&](int v) { return values[v]; });
      };
      indexed_loop<1, kNormalBatch>(out, {sdk::IterOperand::of(out)}, one, batch, 2,
                                    static_cast<int64_t>(st.offset & 1));
    }
  });
}

// n % d for a fixed d >= 1 and any 64-bit n, by multiplication: Granlund and
// Montgomery's unsigned division by invariant integers ("Division by
// invariant integers using multiplication", PLDI 1994, figure 4.1), exact for
// every n (the quotient, not an estimate); a 64-bit division per element would
// cost more than the Philox block.
struct Modulus {
  uint64_t d, m;
  int shift1, shift2;
  explicit Modulus(uint64_t divisor) : d(divisor) {
    int l = 0;  // ceil(log2 d)
    while (l < 64 && (uint64_t{1} << l) < d) ++l;
    const uint64_t two_l_minus_d = (l == 64 ? uint64_t{0} : uint64_t{1} << l) - d;  // 2^l - d, mod 2^64
    m = static_cast<uint64_t>((static_cast<unsigned __int128>(two_l_minus_d) << 64) / d) + 1;
    shift1 = l > 0 ? 1 : 0;
    shift2 = l > 0 ? l - 1 : 0;
  }
  uint64_t operator()(uint64_t n) const {
    const uint64_t t = static_cast<uint64_t>((static_cast<unsigned __int128>(m) * n) >> 64);
    const uint64_t q = (t + ((n - t) >> shift1)) >> shift2;
    return n - q * d;
  }
};

void random_kernel(const TsrKernelCall& call) {
  DLTensor& out = self_output(call);
  const int64_t from = int_arg(call, 1, "from"), to = int_arg(call, 2, "to");
  if (to <= from) invalid("random_ expects from < to, got from=" + std::to_string(from) + " to=" + std::to_string(to));
  const Stream st = stream_args(call, 3);
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    const auto put = [](char* dst, int64_t v) {
      if constexpr (std::is_same_v<T, bool>) {
        *reinterpret_cast<S*>(dst) = v != 0;
      } else if constexpr (kIsHalfLike<T>) {
        *reinterpret_cast<S*>(dst) = T(static_cast<float>(v));
      } else {
        *reinterpret_cast<S*>(dst) = static_cast<S>(v);
      }
    };
    const pb::Key key(st.seed);
    const Modulus mod(range);
    const auto one = [&](char** p, int64_t i) { put(p[0], philox::random_int(st.at(i), from, range)); };
    const auto batch = [&](char** p, int64_t i) {
      const pb::Words<kVecs> w = pb::generate<kVecs>(key, st.counter(i));
      alignas(64) uint64_t bits[kBatch];
      for (int v = 0; v < kVecs; ++v) {
        const pb::U x = pb::u64(w.x0[v], w.x1[v]);
        std::memcpy(bits + v * kLanes, &x, sizeof x);
      }
      // philox::random_int: from + u64 % range, wrapping.
      for (int k = 0; k < kBatch; ++k) {
        put(p[0] + k * sizeof(S), static_cast<int64_t>(static_cast<uint64_t>(from) + mod(bits[k])));
      }
    };
    indexed_loop<1, kBatch>(out, {sdk::IterOperand::of(out)}, one, batch);
  });
}

// Whether uniform_double(x0, x1) < p for the kBatch elements from counter first
// (philox::bernoulli), as bytes 0/1.
void bernoulli_batch(const pb::Key& key, uint64_t first, double p, uint8_t (&hit)[kBatch]) {
  const pb::Words<kVecs> w = pb::generate<kVecs>(key, first);
  for (int v = 0; v < kVecs; ++v) {
    const pb::I h = pb::uniform53(w.x0[v], w.x1[v]) < p;
    for (int l = 0; l < kLanes; ++l) hit[v * kLanes + l] = h[l] != 0;
  }
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
      const pb::Key key(st.seed);
      indexed_loop<1, kBatch>(
          out, {sdk::IterOperand::of(out)}, [&](char** q, int64_t i) { put(q[0], philox::bernoulli(st.at(i), prob)); },
          [&](char** q, int64_t i) {
            uint8_t hit[kBatch];
            bernoulli_batch(key, st.counter(i), prob, hit);
            for (int k = 0; k < kBatch; ++k) put(q[0] + k * sizeof(S), hit[k] != 0);
          });
    }
  });
}

// n 8-byte values of scratch, huge pages asked for (4 KiB pages' first-touch
// faults took longer than randperm's sort on 1M indices).
struct FreeScratch {
  void operator()(uint64_t* p) const { aligned_free(p); }
};
using Scratch = std::unique_ptr<uint64_t[], FreeScratch>;
Scratch scratch_values(int64_t n) {
  const size_t nbytes = static_cast<size_t>(n) * sizeof(uint64_t);
  auto* p = static_cast<uint64_t*>(aligned_malloc(nbytes));
  if (p == nullptr) fail(TSR_ERROR_OUT_OF_MEMORY, "randperm: out of memory for " + std::to_string(nbytes) + " bytes of scratch");
  prefer_huge_pages(p, nbytes);
  return Scratch(p);
}

void randperm_kernel(const TsrKernelCall& call) {
  const int64_t n = int_arg(call, 0, "n");
  const Stream st = stream_args(call, 1);
  DLTensor& out = output(call, 0, call.dtype);
  if (n < 0) invalid("randperm: n must be non-negative, got " + std::to_string(n));
  if (out.ndim != 1 || out.shape[0] != n) invalid("randperm: out must have shape [n]");
  if (call.dtype == TSR_DTYPE_BOOL) invalid("randperm does not support bool");
  if (n == 0) return;
  // Index k gets the 64-bit key of counter (offset + k); the permutation is the
  // indices by ascending (key, index). A sort, unlike Fisher-Yates, has a
  // parallel form: the cuda plugin radix-sorts the same pairs and gets the same
  // permutation.
  const int index_bits = n == 1 ? 1 : 64 - __builtin_clzll(static_cast<uint64_t>(n - 1));
  const auto pack = [index_bits](uint64_t key, int64_t index) {
    return (index_bits == 64 ? 0 : key >> index_bits << index_bits) | static_cast<uint64_t>(index);
  };
  // An int64 output that is dense holds the values itself (its pages are
  // touched once); otherwise a buffer does.
  const bool in_out = call.dtype == TSR_DTYPE_INT64 && (n == 1 || out.strides[0] == 1);
  const Scratch own = in_out ? Scratch() : scratch_values(n);
  const Scratch tmp = scratch_values(n);
  uint64_t* v = in_out ? reinterpret_cast<uint64_t*>(data_ptr(out)) : own.get();
  const pb::Key key(st.seed);
  parallel_for(n, kGrainExpensive, [&](int64_t begin, int64_t end) {
    int64_t k = begin;
    for (; end - k >= kBatch; k += kBatch) {
      const pb::Words<kVecs> w = pb::generate<kVecs>(key, st.counter(k));
      for (int u = 0; u < kVecs; ++u) {
        const pb::U x = pb::u64(w.x0[u], w.x1[u]);  // philox::randperm_key
        for (int l = 0; l < kLanes; ++l) {
          const int64_t j = k + u * kLanes + l;
          v[j] = pack(x[l], j);
        }
      }
    }
    for (; k < end; ++k) v[k] = pack(philox::randperm_key(st.at(k)), k);
  });
  sort_packed(v, tmp.get(), n, index_bits, [&st](int64_t index) { return philox::randperm_key(st.at(index)); });
  if (in_out) return;
  sdk::dispatch_dtype(call.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    if constexpr (!std::is_same_v<T, bool>) {
      char* base = data_ptr(out);
      const int64_t stride = out.strides[0] * static_cast<int64_t>(sizeof(S));
      for (int64_t k = 0; k < n; ++k) {
        const auto index = static_cast<int64_t>(v[k]);
        S e;
        if constexpr (kIsHalfLike<T>) {
          e = T(static_cast<float>(index));
        } else {
          e = static_cast<S>(index);
        }
        *reinterpret_cast<S*>(base + k * stride) = e;
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
      const pb::Key key(st.seed);
      indexed_loop<2, kBatch>(
          out, {sdk::IterOperand::of(out), sdk::IterOperand::of(in)},
          [&](char** q, int64_t i) {
            const bool drop = philox::bernoulli(st.at(i), p);
            const C x = C(*reinterpret_cast<const T*>(q[1]));
            *reinterpret_cast<T*>(q[0]) = drop ? T(C(0)) : T(x * scale);
          },
          [&](char** q, int64_t i) {
            uint8_t drop[kBatch];
            bernoulli_batch(key, st.counter(i), p, drop);
            T* dst = reinterpret_cast<T*>(q[0]);
            const T* src = reinterpret_cast<const T*>(q[1]);
            for (int k = 0; k < kBatch; ++k) dst[k] = drop[k] ? T(C(0)) : T(C(src[k]) * scale);
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
