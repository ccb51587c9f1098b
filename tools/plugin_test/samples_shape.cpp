// Samples of the shape family's kernels (docs/ops/shape.md): copy_ between
// dtypes and layouts, _cat over layouts and dims, fill_ with values each dtype holds, tril/triu over
// diagonals and batches, arange over starts, ends and steps.
#include "samples.h"

#include <cmath>

namespace tessera::kit {

void add_shape_samples() {
  // copy_(self, src, non_blocking): the kernel runs for src's dtype into any self.
  register_samples("copy_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const ScalarType t = ctx.dtype;
    for (ScalarType dst : {t, kDouble, kLong, kBool, kHalf, kFloat}) {
      // Float to integer of NaN or out-of-range values is unspecified (docs/ops/shape.md): small finite values there.
      const Domain d = is_floating_type(t) && !is_floating_type(dst) && dst != kBool ? Domain::Small : Domain::Any;
      for (int layout = 0; layout < 4; ++layout) {
        Sample s;
        TensorInput src = layout == 0   ? contiguous(random_tensor(ctx.rng, {37}, t, d))
                          : layout == 1 ? transposed(ctx.rng, {5, 6}, t, d)
                          : layout == 2 ? expanded(ctx.rng, {5, 6}, t, d, 0)
                                        : reversed(ctx.rng, {5, 6}, t, d);
        const std::vector<int64_t> shape = layout == 0 ? std::vector<int64_t>{37} : std::vector<int64_t>{5, 6};
        TensorInput self = layout == 3 ? sliced(ctx.rng, shape, dst, Domain::Small)
                                       : contiguous(random_tensor(ctx.rng, shape, dst, Domain::Small));
        s.name = std::string(dtype_text(t)) + " " + src.layout + " into " + dtype_text(dst) + " " + self.layout;
        s.args = {SampleArg::tensor(std::move(self)), SampleArg::tensor(std::move(src)), SampleArg::boolean(false)};
        out.push_back(std::move(s));
      }
    }
    Sample z;
    z.name = "0-d into 0-d";
    z.args = {SampleArg::tensor(contiguous(random_tensor(ctx.rng, {}, t, Domain::Any))),
              SampleArg::tensor(contiguous(random_tensor(ctx.rng, {}, t, Domain::Any))), SampleArg::boolean(false)};
    out.push_back(std::move(z));
    return out;
  });
  register_samples("fill_", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const ScalarType t = ctx.dtype;
    std::vector<SampleArg> values = {SampleArg::integer(0), SampleArg::integer(1), SampleArg::boolean(true)};
    if (is_floating_type(t)) {
      for (double v : {-2.5, 1e-40, std::nan(""), double(INFINITY), -0.0}) values.push_back(SampleArg::real(v));
    } else if (t != kBool) {
      values.push_back(SampleArg::integer(t == kByte ? 255 : -7));
    }
    for (const SampleArg& v : values) {
      for (int layout = 0; layout < 3; ++layout) {
        Sample s;
        TensorInput self = layout == 0   ? contiguous(random_tensor(ctx.rng, {1027}, t, Domain::Any))
                           : layout == 1 ? transposed(ctx.rng, {5, 6}, t, Domain::Any)
                                         : sliced(ctx.rng, {5, 6}, t, Domain::Any);
        s.name = self.layout + " " + v.text();
        s.args = {SampleArg::tensor(std::move(self)), v};
        out.push_back(std::move(s));
      }
    }
    return out;
  });
  // _cat(tensors, dim): every layout among the inputs, dims first/middle/last,
  // a negative dim, an input empty along dim, a list of one.
  register_samples("_cat", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const ScalarType t = ctx.dtype;
    const auto add = [&](std::vector<TensorInput> list, int64_t dim) {
      Sample s;
      for (const TensorInput& in : list) s.name += (s.name.empty() ? "" : " + ") + SampleArg::tensor(in).text();
      s.name += ", dim " + std::to_string(dim);
      s.args = {SampleArg::tensor_list(std::move(list)), SampleArg::integer(dim)};
      out.push_back(std::move(s));
    };
    add({contiguous(random_tensor(ctx.rng, {5, 6}, t)), contiguous(random_tensor(ctx.rng, {5, 3}, t))}, 1);
    add({contiguous(random_tensor(ctx.rng, {4, 3, 2}, t)), contiguous(random_tensor(ctx.rng, {4, 1, 2}, t)),
         contiguous(random_tensor(ctx.rng, {4, 5, 2}, t))}, 1);
    add({contiguous(random_tensor(ctx.rng, {37}, t)), contiguous(random_tensor(ctx.rng, {1027}, t))}, 0);
    add({contiguous(random_tensor(ctx.rng, {2, 300}, t)), contiguous(random_tensor(ctx.rng, {2, 700}, t))}, -1);
    add({transposed(ctx.rng, {5, 6}, t, Domain::Any), contiguous(random_tensor(ctx.rng, {5, 2}, t))}, 1);
    add({sliced(ctx.rng, {5, 6}, t, Domain::Any), reversed(ctx.rng, {5, 6}, t, Domain::Any)}, 0);
    add({expanded(ctx.rng, {5, 6}, t, Domain::Any, 0), contiguous(random_tensor(ctx.rng, {5, 6}, t))}, 1);
    add({contiguous(random_tensor(ctx.rng, {5, 0}, t)), contiguous(random_tensor(ctx.rng, {5, 4}, t))}, 1);
    add({contiguous(random_tensor(ctx.rng, {3, 4}, t))}, 0);
    return out;
  });
  for (const char* op : {"tril", "triu"}) {
    register_samples(op, [](const SampleContext& ctx) {
      std::vector<Sample> out;
      for (int64_t diag : {0, 1, -2, 9, -9}) {
        for (int layout = 0; layout < 4; ++layout) {
          Sample s;
          TensorInput self = layout == 0   ? contiguous(random_tensor(ctx.rng, {5, 7}, ctx.dtype, Domain::Any))
                             : layout == 1 ? contiguous(random_tensor(ctx.rng, {3, 4, 6}, ctx.dtype, Domain::Any))
                             : layout == 2 ? transposed(ctx.rng, {5, 7}, ctx.dtype, Domain::Any)
                                           : sliced(ctx.rng, {5, 7}, ctx.dtype, Domain::Any);
          s.name = SampleArg::tensor(self).text() + ", diagonal " + std::to_string(diag);
          s.args = {SampleArg::tensor(std::move(self)), SampleArg::integer(diag)};
          out.push_back(std::move(s));
        }
      }
      return out;
    });
  }
  // arange(start, end, step, *, dtype, device): a factory; the dtype is the case's.
  register_samples("arange", [](const SampleContext& ctx) {
    std::vector<Sample> out;
    const bool fl = is_floating_type(ctx.dtype);
    struct R {
      double start, end, step;
    };
    std::vector<R> ranges = {{0, 10, 1}, {5, 5, 1}, {10, 0, -3}, {2, 100, 7}, {0, 1100, 1}};
    if (fl) ranges.push_back({-3, 7.5, 0.5});
    if (ctx.dtype == kByte || ctx.dtype == kChar) ranges = {{0, 10, 1}, {5, 5, 1}, {10, 0, -3}, {2, 100, 7}};
    for (const R& r : ranges) {
      Sample s;
      auto num = [&](double v) {
        return v == std::floor(v) ? SampleArg::integer(static_cast<int64_t>(v)) : SampleArg::real(v);
      };
      s.args = {num(r.start), num(r.end), num(r.step), SampleArg::scalar_type(ctx.dtype), SampleArg::device()};
      s.name = "arange(" + s.args[0].text() + ", " + s.args[1].text() + ", " + s.args[2].text() + ")";
      out.push_back(std::move(s));
    }
    return out;
  });
}

}  // namespace tessera::kit
