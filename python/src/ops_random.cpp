// Python bindings of the random ops (tessera/ops/random.h): the Generator class,
// seeding functions, factories (rand, randn, randint, randperm), bernoulli,
// dropout and the in-place methods.
#include "common.h"

namespace tessera::python {

namespace {

using OptGen = std::optional<Generator>;
using OptDType = std::optional<DType>;

Generator& gen_or_default(const OptGen& g) { return g ? const_cast<Generator&>(*g) : default_generator(); }


}  // namespace

void register_random_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  nb::class_<Generator>(m, "Generator")
      .def(nb::init<uint64_t>(), nb::arg("seed") = Generator::kDefaultSeed)
      .def("manual_seed", [](nb::handle self, uint64_t seed) {
        nb::cast<Generator&>(self).manual_seed(seed);
        return nb::borrow(self);
      }, nb::arg("seed"))
      .def("seed", &Generator::seed)
      .def("initial_seed", &Generator::initial_seed)
      .def("get_offset", &Generator::offset)
      .def("set_offset", &Generator::set_offset, nb::arg("offset"))
      .def("get_state", &Generator::get_state)
      .def("set_state", [](nb::handle self, const Tensor& state) {
        nb::cast<Generator&>(self).set_state(state);
        return nb::borrow(self);
      }, nb::arg("new_state"));
  m.attr("default_generator") = default_generator();
  m.def("manual_seed", [](uint64_t seed) { return manual_seed(seed); }, nb::arg("seed"));
  m.def("seed", []() { return seed(); });
  m.def("initial_seed", []() { return initial_seed(); });

  m.def("rand", [](nb::args size, const OptGen& g, const OptDType& dtype, const DeviceArg& device) {
    return rand(sizes_from_args(size, "rand"), g, options(dtype, device));
  }, nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
        nb::arg("device") = nb::none());
  m.def("randn", [](nb::args size, const OptGen& g, const OptDType& dtype, const DeviceArg& device) {
    return randn(sizes_from_args(size, "randn"), g, options(dtype, device));
  }, nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
        nb::arg("device") = nb::none());
  m.def("randint", [](int64_t high, nb::handle size, const OptGen& g, const OptDType& dtype,
                      const DeviceArg& device) {
    return randint(high, sizes_from_object(size, "randint"), g, options(dtype, device));
  }, nb::arg("high"), nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(),
        nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none());
  m.def("randint", [](int64_t low, int64_t high, nb::handle size, const OptGen& g, const OptDType& dtype,
                      const DeviceArg& device) {
    return randint(low, high, sizes_from_object(size, "randint"), g, options(dtype, device));
  }, nb::arg("low"), nb::arg("high"), nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(),
        nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none());
  m.def("randperm", [](int64_t n, const OptGen& g, const OptDType& dtype, const DeviceArg& device) {
    return randperm(n, g, options(dtype, device));
  }, nb::arg("n"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("dtype") = nb::none(),
        nb::arg("device") = nb::none());
  m.def("bernoulli", [](const Tensor& input, const OptGen& g) { return bernoulli(input, g); }, nb::arg("input"),
        nb::kw_only(), nb::arg("generator") = nb::none());
  m.def("bernoulli", [](const Tensor& input, double p, const OptGen& g) { return bernoulli(input, p, g); },
        nb::arg("input"), nb::arg("p"), nb::kw_only(), nb::arg("generator") = nb::none());
  m.def("dropout", [](const Tensor& input, double p, bool train, const OptGen& g) {
    return dropout(input, p, train, g);
  }, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("train") = true, nb::kw_only(), nb::arg("generator") = nb::none());

  cls.def("uniform_", [](nb::handle self, double from, double to, const OptGen& g) {
        return in_place(self, [&](Tensor& t) { t.uniform_(from, to, gen_or_default(g)); });
      }, nb::arg("from") = 0.0, nb::arg("to") = 1.0, nb::kw_only(), nb::arg("generator") = nb::none())
      .def("normal_", [](nb::handle self, double mean, double std, const OptGen& g) {
        return in_place(self, [&](Tensor& t) { t.normal_(mean, std, gen_or_default(g)); });
      }, nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::kw_only(), nb::arg("generator") = nb::none())
      .def("random_", [](nb::handle self, int64_t to, const OptGen& g) {
        return in_place(self, [&](Tensor& t) { t.random_(0, to, gen_or_default(g)); });
      }, nb::arg("to"), nb::kw_only(), nb::arg("generator") = nb::none())
      .def("random_", [](nb::handle self, int64_t from, int64_t to, const OptGen& g) {
        return in_place(self, [&](Tensor& t) { t.random_(from, to, gen_or_default(g)); });
      }, nb::arg("from"), nb::arg("to"), nb::kw_only(), nb::arg("generator") = nb::none())
      .def("bernoulli_", [](nb::handle self, const Tensor& p, const OptGen& g) {
        return in_place(self, [&](Tensor& t) { t.bernoulli_(p, gen_or_default(g)); });
      }, nb::arg("p"), nb::kw_only(), nb::arg("generator") = nb::none())
      .def("bernoulli_", [](nb::handle self, double p, const OptGen& g) {
        return in_place(self, [&](Tensor& t) { t.bernoulli_(p, gen_or_default(g)); });
      }, nb::arg("p") = 0.5, nb::kw_only(), nb::arg("generator") = nb::none())
      .def("bernoulli", [](const Tensor& t, const OptGen& g) { return bernoulli(t, g); }, nb::kw_only(),
           nb::arg("generator") = nb::none());
}

}  // namespace tessera::python
