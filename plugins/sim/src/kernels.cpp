// sim's kernels (kernels.hpp): capture the CPU kernels, queue their calls.
#include "kernels.hpp"

#include "cpu/src/kernels.hpp"  // the CPU plugin's family registrars (tessera_cpu_kernels)

#include <tessera/sdk/checked.hpp>
#include <tessera/sdk/dtype.hpp>

#include <cstddef>
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace tessera::sim {

namespace {

[[noreturn]] void invalid(const std::string& message) { throw sdk::Error(TSR_ERROR_INVALID_ARGUMENT, message); }

// ---------------------------------------------------------------------------
// Capturing the CPU plugin's kernels
// ---------------------------------------------------------------------------

struct Captured {
  std::string op;
  uint64_t dtype_mask;
  TsrKernelFn fn;
  void* context;
};

struct Capture {
  std::vector<Captured> kernels;
  const sdk::Host* host;  // the real host, for log lines
};

Capture& capture_of(TsrHostContext context) { return *reinterpret_cast<Capture*>(context); }

TsrError* capture_register_device_type(TsrHostContext, const TsrDeviceTypeDesc*) {
  return sdk::make_error(TSR_ERROR_INTERNAL, "sim: a CPU kernel registrar tried to register a device type");
}

TsrError* capture_register_kernel(TsrHostContext context, const TsrKernelDesc* desc) {
  return sdk::guard([&] {
    if (desc == nullptr || desc->struct_size < offsetof(TsrKernelDesc, context) + sizeof(desc->context) ||
        desc->op_name == nullptr || desc->fn == nullptr) {
      throw sdk::Error(TSR_ERROR_INTERNAL, "sim: a CPU kernel registrar passed a malformed TsrKernelDesc");
    }
    capture_of(context).kernels.push_back({desc->op_name, desc->dtype_mask, desc->fn, desc->context});
  });
}

void capture_log(TsrHostContext context, int32_t level, const char* message) {
  capture_of(context).host->log(level, message);
}

// ---------------------------------------------------------------------------
// A deep copy of a TsrKernelCall: everything the kernel will read, owned by
// the work item (the host's call and everything it points to are borrowed only
// until the wrapper returns). Device memory is not copied: the tensors' data
// pointers stay, as a real device's kernel arguments do.
// ---------------------------------------------------------------------------

bool copyable_tag(TsrValueTag tag) {
  switch (tag) {
    case TSR_VALUE_NONE: case TSR_VALUE_TENSOR: case TSR_VALUE_INT: case TSR_VALUE_FLOAT: case TSR_VALUE_BOOL:
    case TSR_VALUE_INT_LIST: case TSR_VALUE_DTYPE: case TSR_VALUE_STRING: case TSR_VALUE_TENSOR_LIST:
      return true;
    default:
      return false;  // a tag from a newer ABI: sim cannot know what it points to
  }
}

TsrError* no_allocate_output(TsrCallHandle, size_t, TsrDType, int32_t, const int64_t*, DLTensor**) {
  return sdk::make_error(TSR_ERROR_INVALID_ARGUMENT,
                         "sim: allocate_output is not available to a queued kernel (sim runs kernels with "
                         "data-dependent outputs on the calling thread)");
}

class CallCopy {
 public:
  CallCopy(const TsrKernelCall& call, void* kernel_context) {
    call_.struct_size = sizeof(TsrKernelCall);
    op_name_ = call.op_name != nullptr ? call.op_name : "?";
    call_.op_name = op_name_.c_str();
    call_.kernel_context = kernel_context;
    call_.device_index = call.device_index;
    call_.dtype = call.dtype;
    call_.stream = call.stream;
    args_.reserve(call.num_args);
    for (size_t i = 0; i < call.num_args; ++i) args_.push_back(copy_value(call.args[i]));  // checked: i < num_args
    outputs_.reserve(call.num_outputs);
    for (size_t i = 0; i < call.num_outputs; ++i)
      outputs_.push_back(*copy_tensor(&call.outputs[i]));  // checked: i < num_outputs
    call_.args = args_.empty() ? nullptr : args_.data();
    call_.num_args = args_.size();
    call_.outputs = outputs_.empty() ? nullptr : outputs_.data();
    call_.num_outputs = outputs_.size();
    call_.handle = nullptr;  // no data-dependent output reaches a queued kernel
    call_.allocate_output = &no_allocate_output;
    // The host's workspace is valid only during its call, on its thread: a
    // queued kernel has none (a kernel needing scratch would ask for it in the
    // wrapper, on the calling thread, and carry the pointer in its work item:
    // the host frees it in stream order, after the work queued on the stream).
    call_.workspace = nullptr;
  }
  CallCopy(const CallCopy&) = delete;  // call_ points into the members
  CallCopy& operator=(const CallCopy&) = delete;

  const TsrKernelCall& call() const { return call_; }

 private:
  const DLTensor* copy_tensor(const DLTensor* t) {
    if (t == nullptr) return nullptr;
    DLTensor& c = tensors_.emplace_back(*t);
    if (t->ndim > 0) {
      std::vector<int64_t>& dims = arrays_.emplace_back(size_t(2) * size_t(t->ndim));
      if (t->shape != nullptr) std::memcpy(dims.data(), t->shape, sizeof(int64_t) * size_t(t->ndim));
      if (t->strides != nullptr) std::memcpy(dims.data() + t->ndim, t->strides, sizeof(int64_t) * size_t(t->ndim));
      c.shape = t->shape != nullptr ? dims.data() : nullptr;
      c.strides = t->strides != nullptr ? dims.data() + t->ndim : nullptr;
    }
    return &c;
  }

  TsrValue copy_value(const TsrValue& v) {
    TsrValue c = v;
    switch (v.tag) {
      case TSR_VALUE_TENSOR:
        c.as.tensor = copy_tensor(v.as.tensor);
        break;
      case TSR_VALUE_INT_LIST:
        if (v.as.int_list.size > 0) {
          c.as.int_list.data = arrays_.emplace_back(v.as.int_list.data, v.as.int_list.data + v.as.int_list.size).data();
        }
        break;
      case TSR_VALUE_STRING:
        if (v.as.string != nullptr) c.as.string = strings_.emplace_back(v.as.string).c_str();
        break;
      case TSR_VALUE_TENSOR_LIST: {
        std::vector<const DLTensor*>& list = lists_.emplace_back();
        for (size_t i = 0; i < v.as.tensor_list.size; ++i) list.push_back(copy_tensor(v.as.tensor_list.data[i]));
        c.as.tensor_list.data = list.data();
        break;
      }
      default:
        break;  // scalars, dtypes, none: held by value
    }
    return c;
  }

  TsrKernelCall call_{};
  std::string op_name_;
  std::vector<TsrValue> args_;
  std::vector<DLTensor> outputs_;
  // Deques: an element never moves once added, so the pointers taken above stay valid.
  std::deque<DLTensor> tensors_;
  std::deque<std::vector<int64_t>> arrays_;  // shapes and strides, int lists
  std::deque<std::string> strings_;
  std::deque<std::vector<const DLTensor*>> lists_;
};

/// A queued kernel: the CPU kernel, run by the stream's worker on a copy of the call.
class KernelWork final : public Work {
 public:
  KernelWork(const SimKernel& kernel, const TsrKernelCall& call, std::string where)
      : kernel_(kernel), copy_(call, kernel.cpu_context), where_(std::move(where)) {}
  bool is_launch() const override { return true; }
  void run() override {
    TsrError* err = kernel_.cpu_fn(&copy_.call());
    if (err == nullptr) return;
    // Reported by the stream's next synchronizing call, naming the op.
    sdk::Error e(err->code, "sim: kernel " + where_ + " failed on its stream's worker: " +
                                (err->message != nullptr ? err->message : ""));
    err->destroy(err);
    throw e;
  }

 private:
  const SimKernel& kernel_;
  CallCopy copy_;
  std::string where_;
};

// ---------------------------------------------------------------------------
// What a call reads and writes, for the checker
// ---------------------------------------------------------------------------

/// The bytes a tensor's elements span, [lowest, highest + itemsize), negative
/// strides included. Strided tensors count their whole span (a view of every
/// other column spans the columns between too), so the checker may see an
/// overlap between interleaved views that touch different elements.
void add_range(const DLTensor* t, int32_t device, bool write, std::vector<MemoryRange>& out) {
  if (t == nullptr || t->data == nullptr || t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr)) return;
  int64_t n = 0;
  if (sdk::checked::numel(t->ndim, t->shape, &n) || n == 0) return;
  const int64_t item = (int64_t(t->dtype.bits) * int64_t(t->dtype.lanes) + 7) / 8;
  int64_t lo = 0, hi = 0;  // element offsets of the lowest and highest element
  if (t->strides == nullptr) {
    hi = n - 1;
  } else {
    for (int32_t d = 0; d < t->ndim; ++d) {
      int64_t reach;
      if (t->shape[d] <= 1) continue;
      if (sdk::checked::mul(t->shape[d] - 1, t->strides[d], &reach)) return;
      if ((reach < 0 ? sdk::checked::add(lo, reach, &lo) : sdk::checked::add(hi, reach, &hi))) return;
    }
  }
  int64_t lo_bytes, end_bytes;
  if (sdk::checked::mul(lo, item, &lo_bytes) || sdk::checked::mul(hi + 1, item, &end_bytes)) return;
  const uintptr_t first = reinterpret_cast<uintptr_t>(t->data) + static_cast<uintptr_t>(t->byte_offset);
  out.push_back({device, first + static_cast<uintptr_t>(lo_bytes), first + static_cast<uintptr_t>(end_bytes), write});
}

/// Outputs are written, tensor arguments read (for an in-place op the output
/// is also an argument: read and written by the same launch). Writes come
/// first, so that a conflict is reported as the write it usually is.
std::vector<MemoryRange> accesses(const TsrKernelCall& call) {
  std::vector<MemoryRange> ranges;
  for (size_t i = 0; i < call.num_outputs; ++i)
    add_range(&call.outputs[i], call.device_index, true, ranges);  // checked: i < num_outputs
  for (size_t i = 0; i < call.num_args; ++i) {
    const TsrValue& v = call.args[i];  // checked: i < num_args
    if (v.tag == TSR_VALUE_TENSOR) {
      add_range(v.as.tensor, call.device_index, false, ranges);
    } else if (v.tag == TSR_VALUE_TENSOR_LIST) {
      for (size_t k = 0; k < v.as.tensor_list.size; ++k)
        add_range(v.as.tensor_list.data[k], call.device_index, false, ranges);
    }
  }
  return ranges;
}

/// Whether the call must run on the calling thread: an output the kernel
/// allocates through allocate_output (data-dependent shape: data NULL and
/// ndim 0, ABI H13), valid only during the host's call on its thread; or an
/// argument whose tag sim cannot copy.
bool needs_calling_thread(const TsrKernelCall& call) {
  for (size_t i = 0; i < call.num_outputs; ++i)
    if (call.outputs[i].data == nullptr && call.outputs[i].ndim == 0) return true;  // checked: i < num_outputs
  for (size_t i = 0; i < call.num_args; ++i)
    if (!copyable_tag(call.args[i].tag)) return true;  // checked: i < num_args
  return false;
}

// ---------------------------------------------------------------------------
// The wrapper registered for every op on "sim"
// ---------------------------------------------------------------------------

// The workspace slot of an inline call: the CPU kernel receives a copy of the
// host's call (with its own kernel_context), and the host accepts only its
// very call, so this forwards to the host with the original.
thread_local const TsrKernelCall* t_inline_copy = nullptr;
thread_local const TsrKernelCall* t_inline_original = nullptr;

TsrError* inline_workspace(const TsrKernelCall* call, size_t nbytes, void** ptr) {
  if (call == nullptr || call != t_inline_copy) {
    return sdk::make_error(TSR_ERROR_INVALID_ARGUMENT, "sim: workspace called with another call than the kernel's");
  }
  const TsrKernelCall* original = t_inline_original;
  if (original->struct_size < offsetof(TsrKernelCall, workspace) + sizeof(original->workspace) ||
      original->workspace == nullptr) {
    return sdk::make_error(TSR_ERROR_UNIMPLEMENTED, "sim: the host offers no kernel workspace (ABI < 1.2)");
  }
  return original->workspace(original, nbytes, ptr);
}

TsrError* sim_kernel(const TsrKernelCall* call) {
  return sdk::guard([&] {
    if (call == nullptr || call->struct_size < offsetof(TsrKernelCall, allocate_output) + sizeof(call->allocate_output))
      invalid("sim kernel called with a NULL or too small TsrKernelCall");
    if (call->num_args > 0 && call->args == nullptr) invalid("sim kernel: args is NULL");
    if (call->num_outputs > 0 && call->outputs == nullptr) invalid("sim kernel: outputs is NULL");
    const SimKernel& kernel = *static_cast<const SimKernel*>(call->kernel_context);
    Sim& sim = *kernel.sim;
    const std::shared_ptr<Stream> stream = sim.stream(call->device_index, call->stream);
    const std::string where = kernel.op + "(" + sdk::dtype_name(call->dtype) + ")";
    const std::vector<MemoryRange> ranges = accesses(*call);
    if (!needs_calling_thread(*call)) {
      // The usual case: copy the call into a work item, queue it, return.
      sim.enqueue(*stream, where, ranges, std::make_unique<KernelWork>(kernel, *call, where + " on " + stream->name()));
      return;
    }
    // Data-dependent outputs: wait for the stream, then run the CPU kernel
    // here, with the host's call (its allocate_output handle is valid only now,
    // on this thread), as a CUDA kernel's host would read the count back first.
    sim.run_inline(*stream, where, ranges, [&] {
      TsrKernelCall c{};
      std::memcpy(&c, call, std::min(call->struct_size, sizeof c));
      c.struct_size = sizeof c;
      c.kernel_context = kernel.cpu_context;
      c.workspace = &inline_workspace;
      t_inline_copy = &c;
      t_inline_original = call;
      TsrError* err = kernel.cpu_fn(&c);
      t_inline_copy = t_inline_original = nullptr;
      sdk::throw_if_error(err);
    });
  });
}

}  // namespace

void register_kernels(const sdk::Host& host, Sim& sim, std::deque<SimKernel>& kernels) {
  Capture capture;
  capture.host = &host;
  TsrHostApi api{};
  api.struct_size = sizeof(TsrHostApi);
  api.host_version = {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR};
  api.context = reinterpret_cast<TsrHostContext>(&capture);
  api.register_device_type = &capture_register_device_type;
  api.register_kernel = &capture_register_kernel;
  api.log = &capture_log;
  const sdk::Host cpu_host(&api);
  cpu::register_kernels(cpu_host, cpu::select_kernel_isa());
  for (const Captured& c : capture.kernels) {
    SimKernel& entry = kernels.emplace_back(SimKernel{&sim, c.op, c.dtype_mask, c.fn, c.context});
    host.register_kernel(entry.op.c_str(), "sim", entry.dtype_mask, &sim_kernel, &entry);
  }
}

}  // namespace tessera::sim
