// Python bindings of the shape family: the views (view, reshape, permute,
// transpose, narrow, slice, select, squeeze, ...), copies and fills (contiguous,
// clone, copy_, fill_, zero_; in place, returning self), the factories empty and
// arange (with requires_grad=), and the ops of tessera/ops/shape.h (cat, stack,
// split, flip, roll, pad, tril, ...) as methods and module functions.
// split/chunk return tuples (as torch does); out= is accepted where torch has it.
#include "common.h"

namespace tessera::python {
namespace {

using OptDType = std::optional<DType>;

nb::tuple as_tuple(const std::vector<Tensor>& parts) {
  nb::list l;
  for (const Tensor& t : parts) l.append(nb::cast(t));
  return nb::tuple(l);
}

// split_size_or_sections: an int, or a sequence of sizes.
std::vector<Tensor> split_any(const Tensor& t, nb::handle sizes, int64_t dim) {
  if (PyLong_Check(sizes.ptr()) && !PyBool_Check(sizes.ptr())) return split(t, int64_of(sizes, "split(): split_size"), dim);
  return split_with_sizes(t, sizes_from_object(sizes, "split"), dim);
}


// Trailing *ints or one sequence (t.flip(0, 1), t.flip((0, 1)), t.repeat(2, 3)).
std::vector<int64_t> ints_of(const nb::args& args, const char* what) { return sizes_from_args(args, what); }

std::optional<double> pad_value(nb::handle v) {
  if (v.is_none()) return std::nullopt;
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True ? 1.0 : 0.0;
  return double_of(v, "pad(): value");
}

}  // namespace

void register_shape_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  // Views: metadata only, sharing storage.
  cls.def("view", [](const Tensor& t, nb::args a) { return t.view(sizes_from_args(a, "view")); })
      .def("reshape", [](const Tensor& t, nb::args a) { return t.reshape(sizes_from_args(a, "reshape")); })
      .def("permute", [](const Tensor& t, nb::args a) { return t.permute(sizes_from_args(a, "permute")); })
      .def("expand", [](const Tensor& t, nb::args a) { return t.expand(sizes_from_args(a, "expand")); })
      .def("transpose", &Tensor::transpose, nb::arg("dim0"), nb::arg("dim1"))
      .def("t", &Tensor::t)
      .def("narrow", &Tensor::narrow, nb::arg("dim"), nb::arg("start"), nb::arg("length"))
      .def("slice", &Tensor::slice, nb::arg("dim") = 0, nb::arg("start") = nb::none(), nb::arg("end") = nb::none(),
           nb::arg("step") = 1)
      .def("as_strided", [](const Tensor& t, nb::handle size, nb::handle stride, std::optional<int64_t> offset) {
        return t.as_strided(sizes_from_object(size, "as_strided"), sizes_from_object(stride, "as_strided"), offset);
      }, nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = nb::none())
      .def("select", &Tensor::select, nb::arg("dim"), nb::arg("index"))
      .def("squeeze", [](const Tensor& t, std::optional<int64_t> d) { return d ? t.squeeze(*d) : t.squeeze(); },
           nb::arg("dim") = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze, nb::arg("dim"))
      .def("flatten", &Tensor::flatten, nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);

  // Copies and fills; in-place: return self (the same Python object, as PyTorch does).
  cls.def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone)
      .def("fill_", [](nb::handle self, const Scalar& v) { Tensor& t = nb::cast<Tensor&>(self); t.fill_(v); return nb::borrow(self); }, nb::arg("value"))
      .def("zero_", [](nb::handle self) { Tensor& t = nb::cast<Tensor&>(self); t.zero_(); return nb::borrow(self); })
      .def("copy_", [](nb::handle self, const Tensor& src, bool non_blocking) {
        Tensor& t = nb::cast<Tensor&>(self);
        t.copy_(src, non_blocking);
        return nb::borrow(self);
      }, nb::arg("src"), nb::arg("non_blocking") = false);

  // Factories: empty(*size) and arange(end) / arange(start, end, step), with requires_grad=.
  m.def("empty", [](nb::args size, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(empty(sizes_from_args(size, "empty"), options(dtype, device)), rg);
  }, nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("arange", [](const Scalar& end, const OptDType& dtype, const DeviceArg& device, bool rg) {
    return grad_if(arange(end, options(dtype, device)), rg);
  }, nb::arg("end"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("arange", [](const Scalar& start, const Scalar& end, const Scalar& step, const OptDType& dtype,
                     const DeviceArg& device, bool rg) {
    return grad_if(arange(start, end, step, options(dtype, device)), rg);
  }, nb::arg("start"), nb::arg("end"), nb::arg("step") = 1, nb::kw_only(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);

  // ---- the ops of tessera/ops/shape.h ----
  for (const char* name : {"cat", "concat", "concatenate"}) {
    m.def(name, [](const std::vector<Tensor>& tensors, int64_t dim, nb::handle out) {
      return with_out(out, [&] { return cat(tensors, dim); }, [&](Tensor& o) { cat_out(o, tensors, dim); });
    }, nb::arg("tensors"), nb::arg("dim") = 0, nb::kw_only(), nb::arg("out") = nb::none());
  }
  m.def("stack", [](const std::vector<Tensor>& tensors, int64_t dim, nb::handle out) {
    return with_out(out, [&] { return stack(tensors, dim); }, [&](Tensor& o) { stack_out(o, tensors, dim); });
  }, nb::arg("tensors"), nb::arg("dim") = 0, nb::kw_only(), nb::arg("out") = nb::none());
  m.def("split", [](const Tensor& t, nb::handle sizes, int64_t dim) { return as_tuple(split_any(t, sizes, dim)); },
        nb::arg("tensor"), nb::arg("split_size_or_sections"), nb::arg("dim") = 0);
  m.def("chunk", [](const Tensor& t, int64_t chunks, int64_t dim) { return as_tuple(chunk(t, chunks, dim)); },
        nb::arg("input"), nb::arg("chunks"), nb::arg("dim") = 0);
  m.def("flip", [](const Tensor& t, nb::handle dims) { return flip(t, sizes_from_object(dims, "flip")); },
        nb::arg("input"), nb::arg("dims"));
  m.def("roll", [](const Tensor& t, nb::handle shifts, nb::handle dims) {
    const std::vector<int64_t> d = dims.is_none() ? std::vector<int64_t>{} : sizes_from_object(dims, "roll");
    return roll(t, sizes_from_object(shifts, "roll"), d);
  }, nb::arg("input"), nb::arg("shifts"), nb::arg("dims") = nb::none());
  m.def("tile", [](const Tensor& t, nb::handle dims) { return tile(t, sizes_from_object(dims, "tile")); },
        nb::arg("input"), nb::arg("dims"));
  m.def("repeat", [](const Tensor& t, nb::handle repeats) { return repeat(t, sizes_from_object(repeats, "repeat")); },
        nb::arg("input"), nb::arg("repeats"));
  m.def("pad", [](const Tensor& t, nb::handle p, const std::string& mode, nb::handle value) {
    return pad(t, sizes_from_object(p, "pad"), mode, pad_value(value));
  }, nb::arg("input"), nb::arg("pad"), nb::arg("mode") = "constant", nb::arg("value") = nb::none());
  m.def("tril", [](const Tensor& t, int64_t k, nb::handle out) {
    return with_out(out, [&] { return tril(t, k); }, [&](Tensor& o) { tril_out(o, t, k); });
  }, nb::arg("input"), nb::arg("diagonal") = 0, nb::kw_only(), nb::arg("out") = nb::none());
  m.def("triu", [](const Tensor& t, int64_t k, nb::handle out) {
    return with_out(out, [&] { return triu(t, k); }, [&](Tensor& o) { triu_out(o, t, k); });
  }, nb::arg("input"), nb::arg("diagonal") = 0, nb::kw_only(), nb::arg("out") = nb::none());

  cls.def("split", [](const Tensor& t, nb::handle sizes, int64_t dim) { return as_tuple(split_any(t, sizes, dim)); },
          nb::arg("split_size"), nb::arg("dim") = 0)
      .def("chunk", [](const Tensor& t, int64_t chunks, int64_t dim) { return as_tuple(t.chunk(chunks, dim)); },
           nb::arg("chunks"), nb::arg("dim") = 0)
      .def("flip", [](const Tensor& t, nb::args dims) { return t.flip(ints_of(dims, "flip")); })
      .def("roll", [](const Tensor& t, nb::handle shifts, nb::handle dims) {
        const std::vector<int64_t> d = dims.is_none() ? std::vector<int64_t>{} : sizes_from_object(dims, "roll");
        return t.roll(sizes_from_object(shifts, "roll"), d);
      }, nb::arg("shifts"), nb::arg("dims") = nb::none())
      .def("repeat", [](const Tensor& t, nb::args reps) { return t.repeat(ints_of(reps, "repeat")); })
      .def("tile", [](const Tensor& t, nb::args dims) { return t.tile(ints_of(dims, "tile")); })
      .def("pad", [](const Tensor& t, nb::handle p, const std::string& mode, nb::handle value) {
        return t.pad(sizes_from_object(p, "pad"), mode, pad_value(value));
      }, nb::arg("pad"), nb::arg("mode") = "constant", nb::arg("value") = nb::none())
      .def("tril", &Tensor::tril, nb::arg("diagonal") = 0)
      .def("triu", &Tensor::triu, nb::arg("diagonal") = 0)
      .def("tril_", [](nb::handle self, int64_t k) { nb::cast<Tensor&>(self).tril_(k); return nb::borrow(self); },
           nb::arg("diagonal") = 0)
      .def("triu_", [](nb::handle self, int64_t k) { nb::cast<Tensor&>(self).triu_(k); return nb::borrow(self); },
           nb::arg("diagonal") = 0);
}

}  // namespace tessera::python
