// nonzero: the indices of the non-zero elements, in row-major order, as an
// int64 [n, ndim] tensor whose size is only known after looking at the data.
//
// Two passes over fixed chunks of the row-major element order: count each
// chunk's non-zeros (in parallel), allocate the output once through the host's
// allocate_output (on the calling thread, as the ABI requires), then write each
// chunk's indices at its prefix-sum offset (in parallel).
#include "isa.hpp"
#include "common.hpp"
#include "kernels.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tessera::cpu { inline namespace TSR_CPU_ISA {
namespace {

constexpr int64_t kChunk = 65536;  // elements per counting/writing chunk

// "Non-zero" as copy_ to bool sees it: NaN counts, -0.0 does not.
template <typename T>
inline bool is_nonzero(storage_t<T> x) {
  if constexpr (kIsHalfLike<T>) {
    return (x.bits & 0x7fffu) != 0;
  } else {
    return x != 0;
  }
}

template <typename T>
void nonzero_typed(const TsrKernelCall& call, const DLTensor& self) {
  using S = storage_t<T>;
  const int32_t nd = self.ndim;
  // Row-major order is the contract, so no reordering: only size-1 dims are
  // dropped and mergeable dims merged, which keeps the visiting order.
  const sdk::StridedIter<1> it(nd, self.shape, {sdk::IterOperand::of(self)}, sdk::IterOrder::kRowMajor);
  const int64_t n = it.numel();
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const auto chunk_end = [&](int64_t c) { return std::min(n, (c + 1) * kChunk); };

  std::vector<int64_t> offset(static_cast<size_t>(chunks + 1), 0);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t count = 0;
      it.for_range(c * kChunk, chunk_end(c), [&count](char** p, const int64_t* s, int64_t len) {
        if (s[0] == static_cast<int64_t>(sizeof(S))) {
          const S* x = reinterpret_cast<const S*>(p[0]);
          for (int64_t i = 0; i < len; ++i) count += is_nonzero<T>(x[i]);
        } else {
          for (int64_t i = 0; i < len; ++i) count += is_nonzero<T>(*reinterpret_cast<const S*>(p[0] + i * s[0]));
        }
      });
      offset[static_cast<size_t>(c + 1)] = count;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) offset[static_cast<size_t>(c + 1)] += offset[static_cast<size_t>(c)];
  const int64_t total = offset[static_cast<size_t>(chunks)];

  const int64_t shape[2] = {total, nd};
  DLTensor* out = nullptr;
  sdk::throw_if_error(call.allocate_output(call.handle, 0, TSR_DTYPE_INT64, 2, shape, &out));
  if (out == nullptr) fail(TSR_ERROR_INTERNAL, "allocate_output succeeded but returned no tensor");
  if (total == 0 || nd == 0) return;
  int64_t* indices = reinterpret_cast<int64_t*>(data_ptr(*out));

  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<int64_t> index(static_cast<size_t>(nd));
    for (int64_t c = c0; c < c1; ++c) {
      // The multi-index of the chunk's first element; then an odometer
      // advanced once per element (amortized O(1)).
      int64_t rest = c * kChunk;
      for (int32_t d = nd - 1; d >= 0; --d) {
        index[static_cast<size_t>(d)] = rest % self.shape[d];
        rest /= self.shape[d];
      }
      int64_t* o = indices + offset[static_cast<size_t>(c)] * nd;
      it.for_range(c * kChunk, chunk_end(c), [&](char** p, const int64_t* s, int64_t len) {
        for (int64_t i = 0; i < len; ++i) {
          if (is_nonzero<T>(*reinterpret_cast<const S*>(p[0] + i * s[0]))) {
            for (int32_t d = 0; d < nd; ++d) *o++ = index[static_cast<size_t>(d)];
          }
          for (int32_t d = nd - 1; d >= 0; --d) {
            if (++index[static_cast<size_t>(d)] < self.shape[d]) break;
            index[static_cast<size_t>(d)] = 0;
          }
        }
      });
    }
  });
}

void nonzero_kernel(const TsrKernelCall& call) {
  const DLTensor& self = tensor_arg(call, 0, "self", call.dtype);
  if (call.outputs == nullptr || call.num_outputs < 1) invalid("nonzero needs one (unallocated) output");
  if (call.struct_size < offsetof(TsrKernelCall, allocate_output) + sizeof(call.allocate_output) ||
      call.allocate_output == nullptr) {
    invalid("nonzero needs TsrKernelCall.allocate_output (its output size depends on the data)");
  }
  sdk::dispatch_dtype(call.dtype, [&](auto tag) { nonzero_typed<typename decltype(tag)::type>(call, self); });
}

}  // namespace

void register_indexing_nonzero_kernels(const sdk::Host& host) {
  static constexpr KernelRegistration kTable[] = {
      {"nonzero", kAllMask, &kernel_entry<&nonzero_kernel>},
  };
  register_kernels(host, kTable);
}

}}  // namespace tessera::cpu::TSR_CPU_ISA
