// The shape family's data movement: copy_ (also across devices), fill_, and the
// factories empty and arange, with their C++ API.
#include <tessera/autograd.h>
#include <tessera/error.h>
#include <tessera/stream.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "../abi_bridge.h"
#include "../checked_math.h"
#include "../allocation.h"
#include "../memory/pinned_host_allocator.h"
#include "../plugin_host.h"
#include "../structured.h"
#include "ops.h"

namespace tessera::ops {
namespace {
void check_copy(TsrError* err, std::string_view op, const TsrCopyRequest& req, const Tensor& src, Device to,
                const DeviceTypeEntry& actor) {
  if (err != nullptr)
    throw_abi_error(err, detail::str(op, ": copying ", req.nbytes, " bytes from ", src.device().str(),
                                     " to ", to.str(), " (plugin '", actor.plugin_name, "') failed"));
}
}  // namespace

// Ordering (docs/streams.md): the copy runs on the current stream of the device
// side (of the destination between two devices of one type, after that stream
// waited for the source's current stream). The host then waits for the copy
// when host memory is involved, so the host's bytes are free (host to device)
// or final (device to host) when this returns — unless `non_blocking` and the
// host side is pinned memory of the device's type: then an event on the copy's
// stream keeps the pinned block from reuse until the copy is done.
bool transfer_into(std::string_view op, const Tensor& c, const Tensor& out, bool non_blocking) {
  const DeviceTypeEntry& s = device_entry(c.device());
  const DeviceTypeEntry& d = device_entry(out.device());
  const Device to = out.device();
  TsrCopyRequest req{};
  req.struct_size = sizeof(TsrCopyRequest);
  req.nbytes = c.nbytes();
  req.dst = out.data_ptr();
  req.src = c.data_ptr();
  req.dst_device_index = to.index();
  req.src_device_index = c.device().index();
  const DeviceTypeEntry* actor;
  Device side;                     // the device whose stream orders the copy
  const StorageImpl* host = nullptr;  // the host side's storage
  // Memory of an asynchronous device is final only on its stream, also when
  // the host can address it: such a device copies its own side.
  const bool s_plain = s.host_accessible() && !s.has(TSR_DEVICE_CAP_ASYNC);
  const bool d_plain = d.host_accessible() && !d.has(TSR_DEVICE_CAP_ASYNC);
  if (s.id == d.id) {
    req.kind = TSR_COPY_DEVICE_TO_DEVICE;
    actor = &d;
    side = to;
  } else if (s.host_accessible() && (s_plain || !d_plain)) {
    // Host memory to the device; from an asynchronous device's memory once its stream is done with it.
    if (!s_plain) current_stream(c.device()).synchronize();
    req.kind = TSR_COPY_HOST_TO_DEVICE;
    actor = &d;
    side = to;
    host = c.storage().get();
  } else if (d.host_accessible()) {
    req.kind = TSR_COPY_DEVICE_TO_HOST;
    actor = &s;
    side = c.device();
    host = out.storage().get();
  } else {
    return false;  // two hops: the caller goes through the host
  }
  if (d.no_storage() || c.nbytes() == 0) return true;
  const Stream stream = current_stream(side);
  const bool peer = req.kind == TSR_COPY_DEVICE_TO_DEVICE && c.device() != to;
  const bool async = actor->has(TSR_DEVICE_CAP_ASYNC);
  if (peer && async) stream.wait_event(current_stream(c.device()).record_event());
  req.stream = stream.handle();
  check_copy(call_plugin([&] { return actor->desc.copy(actor->desc.context, &req); }), op, req, c, to, *actor);
  if (peer && async) current_stream(c.device()).wait_event(stream.record_event());  // src's later writes wait
  if (async && host != nullptr) {
    if (non_blocking && is_pinned_storage(*host, actor->id)) {
      memory::pinned_allocators::find(actor->id)->record_use(host->data(), side.index(), stream.handle());
    } else {
      stream.synchronize();
    }
  }
  return true;
}

Tensor transfer(std::string_view op, const Tensor& src, Device to, bool non_blocking) {
  const DeviceTypeEntry& s = device_entry(src.device());
  const DeviceTypeEntry& d = device_entry(to);
  TSR_CHECK(!s.no_storage(), ValueError, op, ": cannot copy data out of a tensor on device type '", s.name,
            "', which holds no data (", dtype_name(src.scalar_type()), src.sizes(), ")");
  const Tensor c = src.contiguous();
  if (s.id != d.id && !s.host_accessible() && !d.host_accessible())  // two hops: device -> host -> device
    return transfer(op, transfer(op, c, Device()), to);
  // To the host without waiting: the result is pinned memory of the source's type (as PyTorch does).
  const bool pinned_out = non_blocking && d.host_accessible() && s.has(TSR_DEVICE_CAP_ASYNC) &&
                          s.desc.host_allocate != nullptr && !s.no_storage();
  Tensor out = pinned_out ? empty_pinned(c.sizes(), c.scalar_type(), s) : empty_on(c.sizes(), c.scalar_type(), to);
  transfer_into(op, c, out, non_blocking);
  return out;
}

namespace {
void copy_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  Tensor src = c.tensor_arg(1);
  check_writable(c.op(), self);
  const DimVector shape = broadcast_shapes(c.op(), self.sizes(), src.sizes());
  TSR_CHECK(IntArrayRef(shape).equals(self.sizes()), ValueError, c.op().name(), ": source of shape ", src.sizes(),
            " cannot be broadcast to the destination's shape ", self.sizes());
  c.device = self.device();
  if (src.device() != self.device()) {
    src = transfer(c.op().name(), src, self.device());
  } else if (memory_overlap(self, src) == MemoryOverlap::kPartial) {
    // Source and destination share memory (judged by addresses: views of one
    // storage or separate imports of one buffer) but not element for element:
    // read from a snapshot, as a copy of separate memory would.
    src = src.clone();
  }
  c.add_aliased_output(self);
  c.set_tensor(0, self);
  c.set_tensor(1, src.sizes().equals(self.sizes()) ? src : src.expand(self.sizes()));
  TsrValue nb{};
  nb.tag = TSR_VALUE_BOOL;
  nb.as.b = c.arg(2).b ? 1 : 0;
  c.set_value(2, nb);
  c.dispatch_dtype = src.scalar_type();
}

void fill_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  check_writable(c.op(), self);
  c.device = self.device();
  c.add_aliased_output(self);
  c.set_tensor(0, self);
  const Scalar value = c.arg(1).to_scalar();
  check_value_fits(c.op(), value, self.scalar_type());
  c.set_scalar(1, value, value.is_bool() ? kBool : value.is_integral() ? kLong : kDouble);
  c.dispatch_dtype = self.scalar_type();
}

void arange_meta(StructuredCall& c) {
  const Scalar start = c.arg(0).to_scalar(), end = c.arg(1).to_scalar(), step = c.arg(2).to_scalar();
  const bool all_int = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const ScalarType dtype = c.arg(3).is_none() ? (all_int ? kLong : kDefaultFloat) : c.arg(3).dtype;
  TSR_CHECK(dtype != kBool, TypeError, "arange: dtype bool is not supported");
  TSR_CHECK(c.arg(4).tag == IValue::Tag::Device, ValueError, "arange: a device is required");
  c.device = c.arg(4).device;
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  TSR_CHECK(std::isfinite(s) && std::isfinite(e) && std::isfinite(st), ValueError,
            "arange: start, end and step must be finite, got ", start, ", ", end, ", ", step);
  TSR_CHECK(st != 0, ValueError, "arange: step must be nonzero");
  int64_t n;
  if (all_int) {
    // Exact for every int64 triple: len(range(start, end, step)). The distance
    // and |step| are taken in uint64, where they always fit.
    const int64_t a = start.to_long(), b = end.to_long(), k = step.to_long();
    TSR_CHECK((k > 0 && b >= a) || (k < 0 && b <= a), ValueError, "arange: upper bound ", end, " and lower bound ",
              start, " are inconsistent with the sign of step ", step);
    const uint64_t dist = k > 0 ? uint64_t(b) - uint64_t(a) : uint64_t(a) - uint64_t(b);
    const uint64_t mag = k > 0 ? uint64_t(k) : uint64_t(0) - uint64_t(k);
    const uint64_t count = dist == 0 ? 0 : (dist - 1) / mag + 1;
    TSR_CHECK(count <= uint64_t(std::numeric_limits<int64_t>::max()), ValueError, "arange(", start, ", ", end, ", ",
              step, "): ", count, " elements, more than int64 can count");
    n = static_cast<int64_t>(count);
  } else {
    TSR_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError, "arange: upper bound ", end, " and lower bound ",
              start, " are inconsistent with the sign of step ", step);
    // (e - s) / st may be inf or beyond int64, where converting is undefined.
    const double count = std::ceil((e - s) / st);
    TSR_CHECK(count < 9223372036854775808.0, ValueError, "arange(", start, ", ", end, ", ", step, "): ", count,
              " elements, more than int64 can count");
    n = static_cast<int64_t>(count);
  }
  c.add_output({n}, dtype);
  const ScalarType as = (is_floating_type(dtype) || !all_int) ? kDouble : kLong;
  c.set_scalar(0, start, as);
  c.set_scalar(1, end, as);
  c.set_scalar(2, step, as);
  c.dispatch_dtype = dtype;
}

void empty_kernel(const Operator& op, DispatchKeySet, Frame& f, void*) {
  TSR_CHECK(f.args[2].tag == IValue::Tag::Device, ValueError, op.name(), ": a device is required");
  const ScalarType dtype = f.args[1].is_none() ? kDefaultFloat : f.args[1].dtype;
  try {
    f.outputs[0] = empty_on(f.args[0].int_list(), dtype, f.args[2].device);
  } catch (const OutOfMemoryError& e) {
    rethrow_out_of_memory(op, e);
  }
}

constexpr char kFamily[] = "shape";

constinit OpHandle op_copy_{structured(kFamily,
    "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", kInPlace, &copy_meta)};
constinit OpHandle op_fill_{structured(kFamily,
    "fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", kInPlace, &fill_meta)};
constinit OpHandle op_arange{structured(kFamily,
    "arange(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
    kFactory, &arange_meta)};
constinit OpHandle op_empty{composite(kFamily,
    "empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", kFactory, &empty_kernel)};

}  // namespace

void declare_shape_copy_ops() { declare_now({&op_copy_, &op_fill_, &op_arange, &op_empty}); }

}  // namespace tessera::ops

// ---- C++ API ----
namespace tessera {

using V = IValue;

Tensor& Tensor::fill_(const Scalar& value) {
  return ops::call_inplace(*this, ops::op_fill_(), {V::of(*this), V::of(value)});
}
Tensor& Tensor::zero_() { return fill_(0); }
Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  // A non-blocking byte copy between devices goes straight into this tensor's
  // memory (the op's path would stage it through a temporary and wait).
  if (non_blocking && defined() && src.defined() && src.device() != device() &&
      src.scalar_type() == scalar_type() && src.sizes().equals(sizes()) && is_contiguous() &&
      !storage()->read_only() && !(autograd::is_grad_enabled() && (requires_grad() || src.requires_grad())) &&
      !device_entry(src.device()).no_storage() && !device_entry(device()).no_storage()) {
    if (ops::transfer_into("copy_", src.contiguous(), *this, /*non_blocking=*/true)) {
      storage()->bump_version();
      return *this;
    }
  }
  return ops::call_inplace(*this, ops::op_copy_(), {V::of(*this), V::of(src), V::of(non_blocking)});
}

Tensor empty(IntArrayRef size, const TensorOptions& o) {
  return ops::call(ops::op_empty(), {V::of(size), V::of(o.dtype_or(kDefaultFloat)), V::of(o.device_or_cpu())});
}
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& o) {
  TSR_CHECK(size.size() == stride.size(), ValueError, "empty_strided: sizes ", size, " and strides ", stride,
            " differ in length");
  bool empty_tensor = false;
  for (size_t i = 0; i < size.size(); ++i) {
    TSR_CHECK(size[i] >= 0 && stride[i] >= 0, ValueError, "empty_strided: negative size or stride");
    if (size[i] == 0) empty_tensor = true;
  }
  int64_t lo = 0, hi = 0, span = 0;
  TSR_CHECK(empty_tensor || (!checked::extent(size, stride, lo, hi) && !checked::add(hi, 1, span)), ValueError,
            "empty_strided: sizes ", size, " and strides ", stride, " reach beyond int64");
  return empty({span}, o).as_strided(size, stride, 0);
}
Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  return ops::call(ops::op_arange(), {V::of(start), V::of(end), V::of(step),
                                      o.dtype_opt() ? V::of(*o.dtype_opt()) : V::none(), V::of(o.device_or_cpu())});
}

}  // namespace tessera
