// Python bindings of the reduction ops (tessera/ops/reduction.h): methods and module functions.
// Arguments follow torch: dim is None, an int or a sequence of ints; out= takes a
// tensor that receives the result and is returned; max/min with a dim return a
// (values, indices) named tuple like torch.return_types.
#include "common.h"

#include <cmath>
#include <string>

namespace tessera::python {
namespace {

using OptDType = std::optional<DType>;
std::optional<ScalarType> unwrap(const OptDType& d) { return d ? std::optional<ScalarType>(d->type) : std::nullopt; }

// None: every dim (an empty list, which the ops read as "all").
std::vector<int64_t> dims_of(nb::handle dim, const char* op) {
  if (dim.is_none()) return {};
  if (PyBool_Check(dim.ptr())) throw nb::type_error((std::string(op) + "(): dim must be an int or a sequence of ints, not bool").c_str());
  return sizes_from_object(dim, op);
}

// keepdim with dim=None keeps every dim: name them all explicitly.
std::vector<int64_t> all_dims(const Tensor& t) {
  std::vector<int64_t> d(static_cast<size_t>(t.dim()));
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int64_t>(i);
  return d;
}

std::vector<int64_t> dims_for(const Tensor& t, nb::handle dim, const char* op) {
  std::vector<int64_t> d = dims_of(dim, op);
  return d.empty() ? all_dims(t) : d;
}

Tensor& out_tensor(nb::handle out) { return tensor_arg(out, "out="); }

// The out= protocol: compute, copy into out (checked), return out itself.
template <typename F>
nb::object with_out(nb::handle out, F compute_into) {
  if (out.is_none()) return nb::cast(compute_into(static_cast<Tensor*>(nullptr)));
  Tensor& o = out_tensor(out);
  compute_into(&o);
  return nb::borrow(out);
}

nb::object g_max_type, g_min_type;  // namedtuple types (values, indices)

nb::object pair(const nb::object& type, std::tuple<Tensor, Tensor> r) {
  return type(nb::cast(std::move(std::get<0>(r))), nb::cast(std::move(std::get<1>(r))));
}

double norm_p(nb::handle p) {
  if (p.is_none()) return 2.0;
  if (PyUnicode_Check(p.ptr())) {
    const std::string s = nb::cast<std::string>(p);
    if (s == "fro") return 2.0;
    throw nb::value_error(("norm(): unsupported p='" + s + "' (expected a number or 'fro')").c_str());
  }
  if (PyBool_Check(p.ptr()) || !(PyLong_Check(p.ptr()) || PyFloat_Check(p.ptr()) || PyNumber_Check(p.ptr())))
    throw nb::type_error("norm(): p must be a number or 'fro'");
  return double_of(p, "norm(): p");
}

Scalar correction_of(const std::optional<bool>& unbiased, nb::handle correction, const char* op) {
  if (unbiased && !correction.is_none())
    throw nb::type_error((std::string(op) + "(): pass either unbiased or correction, not both").c_str());
  if (unbiased) return Scalar(int64_t{*unbiased ? 1 : 0});
  if (correction.is_none()) return Scalar(int64_t{1});
  if (PyBool_Check(correction.ptr()) || !PyNumber_Check(correction.ptr()))
    throw nb::type_error((std::string(op) + "(): correction must be a number").c_str());
  if (PyLong_Check(correction.ptr())) return Scalar(int64_of(correction, (std::string(op) + "(): correction").c_str()));
  return Scalar(double_of(correction, (std::string(op) + "(): correction").c_str()));
}

// ---- one implementation per op, shared by the method and the module function ----

// sum without out= (bound before sum_out_impl's overload, which requires out).
// dim is read by sizes_from_object: unlike dims_of, a bool is taken as an int.
Tensor sum_impl(const Tensor& t, nb::handle dim, bool keepdim, const OptDType& dtype) {
  if (dim.is_none()) {
    if (keepdim) {
      std::vector<int64_t> all(static_cast<size_t>(t.dim()));
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
      return t.sum(all, true, unwrap(dtype));
    }
    return t.sum(unwrap(dtype));
  }
  return t.sum(sizes_from_object(dim, "sum"), keepdim, unwrap(dtype));
}

nb::object mean_impl(const Tensor& t, nb::handle dim, bool keepdim, const OptDType& dtype, nb::handle out) {
  const auto d = keepdim ? dims_for(t, dim, "mean") : dims_of(dim, "mean");
  return with_out(out, [&](Tensor* o) { return o ? mean_out(*o, t, d, keepdim, unwrap(dtype)) : mean(t, d, keepdim, unwrap(dtype)); });
}
nb::object sum_out_impl(const Tensor& t, nb::handle dim, bool keepdim, const OptDType& dtype, nb::handle out) {
  const auto d = keepdim ? dims_for(t, dim, "sum") : dims_of(dim, "sum");
  return with_out(out, [&](Tensor* o) { return o ? sum_out(*o, t, d, keepdim, unwrap(dtype)) : sum(t, d, keepdim, unwrap(dtype)); });
}
nb::object prod_impl(const Tensor& t, nb::handle dim, bool keepdim, const OptDType& dtype, nb::handle out) {
  const auto d = keepdim ? dims_for(t, dim, "prod") : dims_of(dim, "prod");
  return with_out(out, [&](Tensor* o) { return o ? prod_out(*o, t, d, keepdim, unwrap(dtype)) : prod(t, d, keepdim, unwrap(dtype)); });
}
template <bool IsMax>
nb::object amax_impl(const Tensor& t, nb::handle dim, bool keepdim, nb::handle out) {
  const char* name = IsMax ? "amax" : "amin";
  const auto d = keepdim ? dims_for(t, dim, name) : dims_of(dim, name);
  return with_out(out, [&](Tensor* o) {
    if (o) return IsMax ? amax_out(*o, t, d, keepdim) : amin_out(*o, t, d, keepdim);
    return IsMax ? amax(t, d, keepdim) : amin(t, d, keepdim);
  });
}
template <bool IsMax>
nb::object max_impl(const Tensor& t, nb::handle dim, bool keepdim, nb::handle out) {
  if (dim.is_none()) {
    if (keepdim) throw nb::type_error(IsMax ? "max(): keepdim needs a dim" : "min(): keepdim needs a dim");
    return with_out(out, [&](Tensor* o) -> Tensor {
      Tensor r = IsMax ? max(t) : min(t);
      if (o) o->copy_(r);  // checked like out= elsewhere through the shape test below
      return r;
    });
  }
  if (!PyLong_Check(dim.ptr()) || PyBool_Check(dim.ptr()))
    throw nb::type_error(IsMax ? "max(): dim must be an int" : "min(): dim must be an int");
  const int64_t d = int64_of(dim, IsMax ? "max(): dim" : "min(): dim");
  const nb::object& type = IsMax ? g_max_type : g_min_type;
  if (out.is_none()) return pair(type, IsMax ? max(t, d, keepdim) : min(t, d, keepdim));
  nb::sequence seq = nb::borrow<nb::sequence>(out);
  if (nb::len(seq) != 2) throw nb::type_error("max/min(): out= must be a (values, indices) pair of tensors");
  Tensor& v = tensor_arg(seq[0], "out=[0] (values)");
  Tensor& i = tensor_arg(seq[1], "out=[1] (indices)");
  if (IsMax) {
    max_out(v, i, t, d, keepdim);
  } else {
    min_out(v, i, t, d, keepdim);
  }
  return type(seq[0], seq[1]);
}
template <bool IsMax>
nb::object arg_impl(const Tensor& t, std::optional<int64_t> dim, bool keepdim, nb::handle out) {
  return with_out(out, [&](Tensor* o) {
    if (o) return IsMax ? argmax_out(*o, t, dim, keepdim) : argmin_out(*o, t, dim, keepdim);
    return IsMax ? argmax(t, dim, keepdim) : argmin(t, dim, keepdim);
  });
}
template <bool IsAny>
nb::object any_impl(const Tensor& t, nb::handle dim, bool keepdim, nb::handle out) {
  const char* name = IsAny ? "any" : "all";
  const auto d = keepdim ? dims_for(t, dim, name) : dims_of(dim, name);
  return with_out(out, [&](Tensor* o) {
    if (o) return IsAny ? any_out(*o, t, d, keepdim) : all_out(*o, t, d, keepdim);
    return IsAny ? any(t, d, keepdim) : all(t, d, keepdim);
  });
}
template <bool IsStd>
nb::object var_impl(const Tensor& t, nb::handle dim, std::optional<bool> unbiased, bool keepdim, nb::handle correction,
                    nb::handle out) {
  const char* name = IsStd ? "std" : "var";
  const auto d = keepdim ? dims_for(t, dim, name) : dims_of(dim, name);
  const Scalar c = correction_of(unbiased, correction, name);
  return with_out(out, [&](Tensor* o) {
    if (o) return IsStd ? std_out(*o, t, d, c, keepdim) : var_out(*o, t, d, c, keepdim);
    return IsStd ? tessera::std(t, d, c, keepdim) : var(t, d, c, keepdim);
  });
}
nb::object norm_impl(const Tensor& t, nb::handle p, nb::handle dim, bool keepdim, nb::handle out) {
  const double pv = norm_p(p);
  const auto d = keepdim ? dims_for(t, dim, "norm") : dims_of(dim, "norm");
  return with_out(out, [&](Tensor* o) { return o ? norm_out(*o, t, pv, d, keepdim) : norm(t, pv, d, keepdim); });
}
nb::object logsumexp_impl(const Tensor& t, nb::handle dim, bool keepdim, nb::handle out) {
  const auto d = keepdim ? dims_for(t, dim, "logsumexp") : dims_of(dim, "logsumexp");
  return with_out(out, [&](Tensor* o) { return o ? logsumexp_out(*o, t, d, keepdim) : logsumexp(t, d, keepdim); });
}
template <bool IsSum>
nb::object scan_impl(const Tensor& t, int64_t dim, const OptDType& dtype, nb::handle out) {
  return with_out(out, [&](Tensor* o) {
    if (o) return IsSum ? cumsum_out(*o, t, dim, unwrap(dtype)) : cumprod_out(*o, t, dim, unwrap(dtype));
    return IsSum ? cumsum(t, dim, unwrap(dtype)) : cumprod(t, dim, unwrap(dtype));
  });
}

}  // namespace

void register_reduction_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  // torch.return_types-like named tuples: r.values, r.indices, and unpacking.
  nb::module_ rt = m.def_submodule("return_types", "Named tuples returned by max/min with a dim");
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  g_max_type = namedtuple("max", nb::make_tuple("values", "indices"));
  g_min_type = namedtuple("min", nb::make_tuple("values", "indices"));
  g_max_type.attr("__module__") = "tessera.return_types";
  g_min_type.attr("__module__") = "tessera.return_types";
  rt.attr("max") = g_max_type;
  rt.attr("min") = g_min_type;

  // Each op twice: as a method (self) and as a module function (input).
  const auto both = [&](const char* name, auto fn, auto... extra) {
    cls.def(name, fn, extra...);
    m.def(name, fn, nb::arg("input"), extra...);
  };
  // sum: first without out=, then the overload that requires it.
  cls.def("sum", &sum_impl, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
          nb::arg("dtype") = nb::none());
  m.def("sum", &sum_impl, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
        nb::arg("dtype") = nb::none());
  both("sum", &sum_out_impl, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("dtype") = nb::none(), nb::arg("out"));
  both("mean", &mean_impl, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("dtype") = nb::none(), nb::arg("out") = nb::none());
  both("prod", &prod_impl, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("dtype") = nb::none(), nb::arg("out") = nb::none());
  both("max", &max_impl<true>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("min", &max_impl<false>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("argmax", &arg_impl<true>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("argmin", &arg_impl<false>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("amax", &amax_impl<true>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("amin", &amax_impl<false>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("any", &any_impl<true>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("all", &any_impl<false>, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("var", &var_impl<false>, nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(),
       nb::arg("keepdim") = false, nb::kw_only(), nb::arg("correction") = nb::none(), nb::arg("out") = nb::none());
  both("std", &var_impl<true>, nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(),
       nb::arg("keepdim") = false, nb::kw_only(), nb::arg("correction") = nb::none(), nb::arg("out") = nb::none());
  both("norm", &norm_impl, nb::arg("p") = "fro", nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
       nb::kw_only(), nb::arg("out") = nb::none());
  both("logsumexp", &logsumexp_impl, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
       nb::arg("out") = nb::none());
  both("cumsum", &scan_impl<true>, nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none(),
       nb::arg("out") = nb::none());
  both("cumprod", &scan_impl<false>, nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none(),
       nb::arg("out") = nb::none());
  // In place: return self (the same Python object).
  cls.def("cumsum_", [](nb::handle self, int64_t dim, const OptDType& dtype) {
    nb::cast<Tensor&>(self).cumsum_(dim, unwrap(dtype));
    return nb::borrow(self);
  }, nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none());
  cls.def("cumprod_", [](nb::handle self, int64_t dim, const OptDType& dtype) {
    nb::cast<Tensor&>(self).cumprod_(dim, unwrap(dtype));
    return nb::borrow(self);
  }, nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none());
}

}  // namespace tessera::python
