// Random ops, driven by the counter-based Philox generator. The core keeps the
// generator state (seed, offset); the C++ API reserves one counter per output
// element from the generator and passes (seed, offset) to the op as int
// arguments, so an op's result is a pure function of its arguments — the same
// on every device and for every thread split.
//
// Kernel-backed (structured): uniform_, normal_, random_, bernoulli_.float,
// bernoulli_.Tensor, randperm, dropout. rand, randn, randint, bernoulli are API
// compositions (empty + the in-place op).
#include <tessera/error.h>
#include <tessera/tensor.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>

#include "../structured.h"
#include "ops.h"

namespace tessera::ops {
namespace {

// The seed and offset arguments, at positions i and i + 1.
void set_stream(StructuredCall& c, int i) {
  c.set_int(i, c.arg(i).i);
  c.set_int(i + 1, c.arg(i + 1).i);
}

void check_floating(const StructuredCall& c, ScalarType t) {
  TSR_CHECK(is_floating_type(t), TypeError, c.op().name(), ": expected a floating dtype, got ", dtype_name(t));
}

// Self is written in place: it is the kernel's output and argument 0.
void inplace_self(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  check_writable(c.op(), self);
  c.device = self.device();
  c.add_aliased_output(self);
  c.set_tensor(0, self);
  c.dispatch_dtype = self.scalar_type();
}

void uniform_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  check_floating(c, self.scalar_type());
  const double from = c.arg(1).d, to = c.arg(2).d;
  TSR_CHECK(std::isfinite(from) && std::isfinite(to), ValueError, c.op().name(), ": from and to must be finite, got ",
            from, " and ", to);
  TSR_CHECK(from <= to, ValueError, c.op().name(), ": expects from <= to, got from=", from, " to=", to);
  inplace_self(c);
  c.set_float(1, from);
  c.set_float(2, to);
  set_stream(c, 3);
}

void normal_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  check_floating(c, self.scalar_type());
  const double mean = c.arg(1).d, std_ = c.arg(2).d;
  TSR_CHECK(std_ >= 0.0, ValueError, c.op().name(), ": expects std >= 0, got std=", std_);
  inplace_self(c);
  c.set_float(1, mean);
  c.set_float(2, std_);
  set_stream(c, 3);
}

// The integers exactly representable by t: [lo, hi].
void representable(ScalarType t, double& lo, double& hi) {
  switch (t) {
    case kBool: lo = 0; hi = 1; return;
    case kByte: lo = 0; hi = 255; return;
    case kChar: lo = -128; hi = 127; return;
    case kShort: lo = -32768; hi = 32767; return;
    case kInt: lo = -2147483648.0; hi = 2147483647.0; return;
    case kHalf: lo = -2048; hi = 2048; return;
    case kBFloat16: lo = -256; hi = 256; return;
    case kFloat: lo = -16777216.0; hi = 16777216.0; return;
    case kDouble: lo = -9007199254740992.0; hi = 9007199254740992.0; return;
    default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; return;
  }
}

void random_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const int64_t from = c.arg(1).i, to = c.arg(2).i;
  TSR_CHECK(from < to, ValueError, c.op().name(), ": expects from < to, got from=", from, " to=", to);
  double lo, hi;
  representable(self.scalar_type(), lo, hi);
  TSR_CHECK(static_cast<double>(from) >= lo && static_cast<double>(to - 1) <= hi, ValueError, c.op().name(),
            ": the range [", from, ", ", to, ") does not fit dtype ", dtype_name(self.scalar_type()));
  inplace_self(c);
  c.set_int(1, from);
  c.set_int(2, to);
  set_stream(c, 3);
}

void bernoulli_float_meta(StructuredCall& c) {
  const double p = c.arg(1).d;
  TSR_CHECK(p >= 0.0 && p <= 1.0, ValueError, c.op().name(), ": expects 0 <= p <= 1, got p=", p);
  inplace_self(c);
  c.set_float(1, p);
  set_stream(c, 2);
}

void bernoulli_tensor_meta(StructuredCall& c) {
  const Tensor& self = c.tensor_arg(0);
  const Tensor& p = c.tensor_arg(1);
  common_device(c, {0, 1});
  check_floating(c, p.scalar_type());
  const DimVector shape = broadcast_shapes(c.op(), self.sizes(), p.sizes());
  TSR_CHECK(self.sizes().equals(shape), ValueError, c.op().name(), ": p of shape ", p.sizes(),
            " cannot be broadcast to self's shape ", self.sizes());
  inplace_self(c);
  c.set_tensor(1, cast_and_expand(snapshot_if_overlapping(p, self), kDouble, self.sizes()));
  set_stream(c, 2);
}

void randperm_meta(StructuredCall& c) {
  const int64_t n = c.arg(0).i;
  TSR_CHECK(n >= 0, ValueError, c.op().name(), ": n must be non-negative, got ", n);
  const ScalarType dtype = c.arg(3).is_none() ? kLong : c.arg(3).dtype;
  TSR_CHECK(dtype != kBool, TypeError, c.op().name(), ": dtype bool is not supported");
  double lo, hi;
  representable(dtype, lo, hi);
  TSR_CHECK(n == 0 || static_cast<double>(n - 1) <= hi, ValueError, c.op().name(), ": n=", n,
            " is too large for dtype ", dtype_name(dtype));
  TSR_CHECK(c.arg(4).tag == IValue::Tag::Device, ValueError, c.op().name(), ": a device is required");
  c.device = c.arg(4).device;
  c.add_output({n}, dtype);
  c.set_int(0, n);
  set_stream(c, 1);
  c.dispatch_dtype = dtype;
}

void dropout_meta(StructuredCall& c) {
  const Tensor& input = c.tensor_arg(0);
  check_floating(c, input.scalar_type());
  const double p = c.arg(1).d;
  TSR_CHECK(p >= 0.0 && p <= 1.0, ValueError, c.op().name(), ": dropout probability has to be between 0 and 1, got ",
            p);
  c.device = input.device();
  c.add_output(input.sizes(), input.scalar_type());
  c.set_tensor(0, input);
  c.set_float(1, p);
  TsrValue t{};
  t.tag = TSR_VALUE_BOOL;
  t.as.b = c.arg(2).b ? 1 : 0;
  c.set_value(2, t);
  set_stream(c, 3);
  c.dispatch_dtype = input.scalar_type();
}

constexpr char kFamily[] = "random";

#define TSR_RANDOM_OP(fn, schema, flags, meta) constinit OpHandle op_##fn{structured(kFamily, schema, flags, meta)};
TSR_RANDOM_OP(uniform_, "uniform_(Tensor(a!) self, float from=0, float to=1, *, int seed, int offset) -> Tensor(a!)",
              kInPlace, &uniform_meta)
TSR_RANDOM_OP(normal_, "normal_(Tensor(a!) self, float mean=0, float std=1, *, int seed, int offset) -> Tensor(a!)",
              kInPlace, &normal_meta)
TSR_RANDOM_OP(random_, "random_(Tensor(a!) self, int from, int to, *, int seed, int offset) -> Tensor(a!)", kInPlace,
              &random_meta)
TSR_RANDOM_OP(bernoulli_float_, "bernoulli_.float(Tensor(a!) self, float p=0.5, *, int seed, int offset) -> Tensor(a!)",
              kInPlace, &bernoulli_float_meta)
TSR_RANDOM_OP(bernoulli_tensor_, "bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, int seed, int offset) -> Tensor(a!)",
              kInPlace, &bernoulli_tensor_meta)
TSR_RANDOM_OP(randperm,
              "randperm(int n, *, int seed, int offset, ScalarType? dtype=None, Device? device=None) -> Tensor",
              kFactory, &randperm_meta)
TSR_RANDOM_OP(dropout, "dropout(Tensor input, float p, bool train, *, int seed, int offset) -> Tensor", 0,
              &dropout_meta)
#undef TSR_RANDOM_OP

}  // namespace

void declare_random_ops() {
  declare_now({&op_uniform_, &op_normal_, &op_random_, &op_bernoulli_float_, &op_bernoulli_tensor_, &op_randperm,
               &op_dropout});
}

}  // namespace tessera::ops

// ---- generators and the C++ API ----
namespace tessera {

struct Generator::State {
  std::mutex mutex;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

Generator::Generator(uint64_t seed) : state_(std::make_shared<State>()) { state_->seed = seed; }

Generator& Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->seed = seed;
  state_->offset = 0;
  return *this;
}

uint64_t Generator::seed() {
  std::random_device rd;
  const uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  manual_seed(s);
  return s;
}

uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->seed;
}

uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->offset;
}

void Generator::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->offset = offset;
}

Tensor Generator::get_state() const {
  uint64_t words[2];
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    words[0] = state_->seed;
    words[1] = state_->offset;
  }
  Tensor t = empty({16}, TensorOptions(kByte));
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (int w = 0; w < 2; ++w)
    for (int b = 0; b < 8; ++b) p[w * 8 + b] = static_cast<uint8_t>(words[w] >> (8 * b));
  return t;
}

Generator& Generator::set_state(const Tensor& state) {
  TSR_CHECK(state.defined() && state.scalar_type() == kByte && state.dim() == 1 && state.numel() == 16, ValueError,
            "Generator.set_state: expected a uint8 tensor of 16 elements (from get_state)");
  const std::vector<int64_t> bytes = state.to_vector<int64_t>();
  uint64_t words[2] = {0, 0};
  for (int w = 0; w < 2; ++w)
    for (int b = 0; b < 8; ++b) words[w] |= static_cast<uint64_t>(bytes[static_cast<size_t>(w * 8 + b)]) << (8 * b);
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->seed = words[0];
  state_->offset = words[1];
  return *this;
}

std::pair<uint64_t, uint64_t> Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const uint64_t at = state_->offset;
  state_->offset += n;
  return {state_->seed, at};
}

Generator& default_generator() {
  static Generator g;
  return g;
}
Generator& manual_seed(uint64_t seed) { return default_generator().manual_seed(seed); }
uint64_t seed() { return default_generator().seed(); }
uint64_t initial_seed() { return default_generator().initial_seed(); }

namespace {

using V = IValue;

Generator& pick(std::optional<Generator>& g) { return g ? *g : default_generator(); }

// Calls an in-place random op on self with n = self.numel() counters reserved.
Tensor& fill_random(Tensor& self, const Operator& op, std::initializer_list<IValue> params, Generator& g) {
  const auto [seed, offset] = g.reserve(static_cast<uint64_t>(self.numel()));
  const int64_t s = static_cast<int64_t>(seed), o = static_cast<int64_t>(offset);
  IValue args[6];
  args[0] = V::of(self);
  int n = 1;
  for (const IValue& v : params) args[n++] = v;
  args[n++] = V::of(s);
  args[n++] = V::of(o);
  Tensor out;
  Frame frame{args, n, &out, 1};
  Dispatcher::instance().call(op, frame);
  return self;
}

Tensor floating_empty(const char* op, IntArrayRef size, const TensorOptions& options) {
  const ScalarType t = options.dtype_or(kDefaultFloat);
  TSR_CHECK(is_floating_type(t), TypeError, op, ": expected a floating dtype, got ", dtype_name(t));
  return empty(size, options.dtype(t));
}

}  // namespace

Tensor rand(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options) {
  Tensor t = floating_empty("rand", size, options);
  return t.uniform_(0, 1, pick(generator));
}
Tensor randn(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options) {
  Tensor t = floating_empty("randn", size, options);
  return t.normal_(0, 1, pick(generator));
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> generator,
               const TensorOptions& options) {
  Tensor t = empty(size, options.dtype(options.dtype_or(kLong)));
  return t.random_(low, high, pick(generator));
}
Tensor randint(int64_t high, IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options) {
  return randint(0, high, size, generator, options);
}
Tensor randperm(int64_t n, std::optional<Generator> generator, const TensorOptions& options) {
  TSR_CHECK(n >= 0, ValueError, "randperm: n must be non-negative, got ", n);
  const auto [seed, offset] = pick(generator).reserve(static_cast<uint64_t>(n));
  const int64_t s = static_cast<int64_t>(seed), o = static_cast<int64_t>(offset);
  const std::optional<ScalarType> dtype = options.dtype_opt();
  return ops::call(ops::op_randperm(), {V::of(n), V::of(s), V::of(o), dtype ? V::of(*dtype) : V::none(),
                                        V::of(options.device_or_cpu())});
}
Tensor bernoulli(const Tensor& self, std::optional<Generator> generator) {
  TSR_CHECK(self.defined(), ValueError, "bernoulli: undefined tensor argument");
  TSR_CHECK(self.is_floating_point(), TypeError, "bernoulli: expected a floating tensor of probabilities, got ",
            dtype_name(self.scalar_type()));
  Tensor out = empty_like(self);
  return out.bernoulli_(self, pick(generator));
}
Tensor bernoulli(const Tensor& self, double p, std::optional<Generator> generator) {
  Tensor out = empty_like(self);
  return out.bernoulli_(p, pick(generator));
}
Tensor dropout(const Tensor& input, double p, bool train, std::optional<Generator> generator) {
  TSR_CHECK(input.defined(), ValueError, "dropout: undefined tensor argument");
  TSR_CHECK(p >= 0.0 && p <= 1.0, ValueError, "dropout: dropout probability has to be between 0 and 1, got ", p);
  TSR_CHECK(input.is_floating_point(), TypeError, "dropout: expected a floating tensor, got ",
            dtype_name(input.scalar_type()));
  if (!train || p == 0.0 || input.numel() == 0) return input;
  const auto [seed, offset] = pick(generator).reserve(static_cast<uint64_t>(input.numel()));
  const int64_t s = static_cast<int64_t>(seed), o = static_cast<int64_t>(offset);
  return ops::call(ops::op_dropout(), {V::of(input), V::of(p), V::of(train), V::of(s), V::of(o)});
}

Tensor& Tensor::uniform_(double from, double to) { return uniform_(from, to, default_generator()); }
Tensor& Tensor::uniform_(double from, double to, const Generator& generator) {
  Generator g = generator;
  return fill_random(*this, ops::op_uniform_(), {V::of(from), V::of(to)}, g);
}
Tensor& Tensor::normal_(double mean, double std) { return normal_(mean, std, default_generator()); }
Tensor& Tensor::normal_(double mean, double std, const Generator& generator) {
  Generator g = generator;
  return fill_random(*this, ops::op_normal_(), {V::of(mean), V::of(std)}, g);
}
Tensor& Tensor::random_(int64_t from, int64_t to) { return random_(from, to, default_generator()); }
Tensor& Tensor::random_(int64_t from, int64_t to, const Generator& generator) {
  Generator g = generator;
  return fill_random(*this, ops::op_random_(), {V::of(from), V::of(to)}, g);
}
Tensor& Tensor::bernoulli_(double p) { return bernoulli_(p, default_generator()); }
Tensor& Tensor::bernoulli_(double p, const Generator& generator) {
  Generator g = generator;
  return fill_random(*this, ops::op_bernoulli_float_(), {V::of(p)}, g);
}
Tensor& Tensor::bernoulli_(const Tensor& p) { return bernoulli_(p, default_generator()); }
Tensor& Tensor::bernoulli_(const Tensor& p, const Generator& generator) {
  Generator g = generator;
  return fill_random(*this, ops::op_bernoulli_tensor_(), {V::of(p)}, g);
}
Tensor Tensor::bernoulli() const { return tessera::bernoulli(*this); }
Tensor Tensor::bernoulli(const Generator& generator) const { return tessera::bernoulli(*this, generator); }

}  // namespace tessera
