// Autograd from Python: Tensor's autograd properties and methods, the backward
// graph's nodes, hooks, grad-mode guards, backward/grad, custom functions and
// gradcheck. The Python-facing API (tessera.autograd, tessera.no_grad, ...) is
// python/tessera/autograd.py over the private functions here.
//
// GIL: backward, grad and gradcheck release the GIL while the engine runs, and
// every Python callable the engine calls (hooks, a custom Function's backward,
// gradcheck's function) takes it back (nb::gil_scoped_acquire). Python objects
// held by C++ closures are released under the GIL (PyRef), since the engine
// may drop a closure on a thread that does not hold it.
#include "common.h"

#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/tuple.h>

#include <tessera/autograd.h>
#include <tessera/autograd/function.h>
#include <tessera/autograd/gradcheck.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tessera::python {

using autograd::Node;
using OptTensor = std::optional<Tensor>;

namespace {

// A strong reference to a Python object that may be dropped without the GIL.
class PyRef {
 public:
  explicit PyRef(nb::handle h) : obj_(h.ptr()) { Py_XINCREF(obj_); }
  ~PyRef() {
    if (obj_ == nullptr || !Py_IsInitialized()) return;  // at exit the interpreter owns it
    PyGILState_STATE s = PyGILState_Ensure();
    Py_DECREF(obj_);
    PyGILState_Release(s);
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  nb::handle get() const { return obj_; }

 private:
  PyObject* obj_;
};

OptTensor opt(const Tensor& t) { return t.defined() ? OptTensor(t) : std::nullopt; }
Tensor unopt(const OptTensor& t) { return t ? *t : Tensor(); }

std::vector<Tensor> unopt_list(const std::vector<OptTensor>& v) {
  std::vector<Tensor> out;
  out.reserve(v.size());
  for (const auto& t : v) out.push_back(unopt(t));
  return out;
}

nb::list opt_list(const std::vector<Tensor>& v) {
  nb::list l;
  for (const Tensor& t : v) l.append(t.defined() ? nb::cast(t) : nb::none());
  return l;
}

// One Tensor, or a sequence of Tensors (or None for "no gradient"), as a list;
// `what` names the caller in the TypeError.
std::vector<Tensor> tensors_from(nb::handle obj, const char* what) {
  std::vector<Tensor> out;
  if (obj.is_none()) return out;
  if (nb::isinstance<Tensor>(obj)) {
    out.push_back(nb::cast<Tensor>(obj));
    return out;
  }
  if (!PySequence_Check(obj.ptr()))
    throw nb::type_error((std::string(what) + ": expected a Tensor or a sequence of Tensors, got " +
                          nb::cast<std::string>(nb::str(obj.type().attr("__name__")))).c_str());
  for (nb::handle item : nb::iter(obj)) {
    if (item.is_none()) {
      out.emplace_back();
    } else if (nb::isinstance<Tensor>(item)) {
      out.push_back(nb::cast<Tensor>(item));
    } else {
      throw nb::type_error((std::string(what) + ": expected Tensors (or None), got " +
                            nb::cast<std::string>(nb::str(item.type().attr("__name__")))).c_str());
    }
  }
  return out;
}

// The Python side of a removable hook (PyTorch's RemovableHandle).
struct RemovableHandle {
  autograd::HookHandle handle;
  void remove() { handle.remove(); }
};

// A grad-mode guard held between __enter__ and __exit__ of a Python context
// manager. Guards are thread-local state: one made on a thread is undone only
// on that thread (a guard dropped elsewhere, e.g. an abandoned generator
// collected on another thread, is leaked rather than corrupting that thread).
class ModeGuard {
 public:
  enum Kind { kNoGrad, kEnableGrad, kInference };
  ModeGuard(Kind kind, bool flag) : thread_(std::this_thread::get_id()) {
    switch (kind) {
      case kNoGrad: no_grad_ = new autograd::NoGradGuard(); break;
      case kEnableGrad: enable_grad_ = new autograd::EnableGradGuard(); break;
      case kInference: inference_ = new autograd::InferenceMode(flag); break;
    }
  }
  ModeGuard(const ModeGuard&) = delete;
  ModeGuard& operator=(const ModeGuard&) = delete;
  ~ModeGuard() {
    if (std::this_thread::get_id() == thread_) exit();
  }
  void exit() {
    if (std::this_thread::get_id() != thread_)
      throw nb::value_error("a grad-mode context was exited on another thread than the one that entered it");
    delete no_grad_;
    delete enable_grad_;
    delete inference_;
    no_grad_ = nullptr;
    enable_grad_ = nullptr;
    inference_ = nullptr;
  }

 private:
  std::thread::id thread_;
  autograd::NoGradGuard* no_grad_ = nullptr;
  autograd::EnableGradGuard* enable_grad_ = nullptr;
  autograd::InferenceMode* inference_ = nullptr;
};

// A custom Function call's node, seen from Python. Function.apply holds it
// strongly until the outputs are wired; the ctx keeps only a weak reference
// (the node's backward closure holds the ctx, so a strong one would be a cycle
// Python's collector cannot see through C++).
class CustomNode {
 public:
  CustomNode(const std::string& name, nb::handle backward) {
    auto fn = std::make_shared<PyRef>(backward);
    strong_ = autograd::make_node<autograd::CustomFunctionNode>(
        name, [fn](autograd::AutogradContext*, autograd::variable_list grads) -> autograd::variable_list {
          nb::gil_scoped_acquire gil;
          nb::object r = nb::borrow(fn->get())(opt_list(grads));
          return tensors_from(r, "Function.backward");
        });
    weak_ = strong_;
  }
  // The node, kept alive by the returned pointer for the caller's use.
  std::shared_ptr<autograd::CustomFunctionNode> get() const {
    auto p = weak_.lock();
    if (!p)
      throw AutogradError("Function ctx: the function's node is gone (the outputs and their graph were freed)");
    return p;
  }
  void prepare(const std::vector<Tensor>& inputs) { autograd::prepare_custom(get(), inputs); }
  std::vector<Tensor> wire(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
    return autograd::detail_wire_custom(get(), inputs, outputs);
  }
  void drop() { strong_.reset(); }

 private:
  std::shared_ptr<autograd::CustomFunctionNode> strong_;
  std::weak_ptr<autograd::CustomFunctionNode> weak_;
};

// gradcheck's function: the Python callable with the inputs unpacked, its
// result (a Tensor or a sequence of them) as a list.
autograd::GradcheckFn python_fn(nb::handle fn) {
  auto ref = std::make_shared<PyRef>(fn);
  return [ref](const autograd::variable_list& xs) -> autograd::variable_list {
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (const Tensor& x : xs) args.append(x.defined() ? nb::cast(x) : nb::none());
    nb::object r = nb::borrow(ref->get())(*nb::tuple(args));
    return tensors_from(r, "gradcheck: the function's result");
  };
}

}  // namespace

void register_autograd(nb::module_& m, nb::class_<Tensor>& cls) {
  // ---- the graph ----
  nb::class_<Node>(m, "Node", "A node of the backward graph (a tensor's grad_fn).")
      .def("name", &Node::name)
      .def_prop_ro("next_functions", [](const Node& n) {
        nb::list l;
        for (const autograd::Edge& e : n.next_edges())
          l.append(nb::make_tuple(e.function ? nb::cast(e.function) : nb::none(), e.input_nr));
        return nb::tuple(l);
      })
      .def("__repr__", [](const Node& n) {
        return "<" + n.name() + " object at 0x" + [&] {
          char buf[32];
          std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(&n)));
          return std::string(buf);
        }() + ">";
      });

  nb::class_<RemovableHandle>(m, "RemovableHandle", "Removes a registered hook (also as a context manager).")
      .def("remove", &RemovableHandle::remove)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](RemovableHandle& h, nb::args) { h.remove(); });

  // ---- Tensor ----
  cls.def_prop_rw(
         "requires_grad", [](const Tensor& t) { return t.requires_grad(); },
         [](Tensor& t, bool v) { t.requires_grad_(v); })
      .def("requires_grad_", [](nb::handle self, bool v) { return in_place(self, [&](Tensor& t) { t.requires_grad_(v); }); },
           nb::arg("requires_grad") = true)
      .def_prop_ro("is_leaf", [](const Tensor& t) { return t.is_leaf(); })
      .def_prop_ro("grad_fn", [](const Tensor& t) { return t.grad_fn(); })
      .def_prop_ro("output_nr", [](const Tensor& t) { return t.output_nr(); })
      .def_prop_ro("_version", [](const Tensor& t) { return t._version(); })
      .def_prop_ro("retains_grad", [](const Tensor& t) { return t.retains_grad(); })
      .def("is_inference", [](const Tensor& t) { return t.is_inference(); })
      .def("retain_grad", [](const Tensor& t) {
        nb::gil_scoped_release nogil;  // may wait for a node's mutex held by a backward calling into Python
        t.retain_grad();
      })
      .def("detach", [](const Tensor& t) { return t.detach(); })
      .def("detach_", [](nb::handle self) { return in_place(self, [](Tensor& t) { t.detach_(); }); })
      .def(
          "backward",
          [](const Tensor& t, const OptTensor& gradient, std::optional<bool> retain_graph, bool create_graph,
             nb::handle inputs) {
            std::vector<Tensor> in = tensors_from(inputs, "backward: inputs");
            nb::gil_scoped_release nogil;
            t.backward(unopt(gradient), retain_graph, create_graph, in);
          },
          nb::arg("gradient") = nb::none(), nb::arg("retain_graph") = nb::none(), nb::arg("create_graph") = false,
          nb::arg("inputs") = nb::none())
      .def(
          "register_hook",
          [](const Tensor& t, nb::callable fn) {
            auto ref = std::make_shared<PyRef>(fn);
            auto hook = [ref](const Tensor& g) -> Tensor {
              nb::gil_scoped_acquire gil;
              nb::object r = nb::borrow(ref->get())(g);
              if (r.is_none()) return Tensor();
              if (!nb::isinstance<Tensor>(r))
                throw nb::type_error(("a tensor hook must return a Tensor or None, got " +
                                      nb::cast<std::string>(nb::str(r.type().attr("__name__")))).c_str());
              return nb::cast<Tensor>(r);
            };
            nb::gil_scoped_release nogil;
            return RemovableHandle{t.register_hook(std::move(hook))};
          },
          nb::arg("hook"))
      .def(
          "register_post_accumulate_grad_hook",
          [](const Tensor& t, nb::callable fn) {
            auto ref = std::make_shared<PyRef>(fn);
            auto hook = [ref](const Tensor& leaf) {
              nb::gil_scoped_acquire gil;
              nb::borrow(ref->get())(leaf);
            };
            nb::gil_scoped_release nogil;
            return RemovableHandle{t.register_post_accumulate_grad_hook(std::move(hook))};
          },
          nb::arg("hook"));

  // Python subclasses of Tensor (nn.Parameter): an instance of `type` holding
  // a detached alias of `data` (same storage, no history), like PyTorch's
  // Tensor._make_subclass.
  cls.def_static(
      "_make_subclass",
      [](nb::type_object type, const Tensor& data, bool requires_grad) {
        if (!PyType_Check(type.ptr()) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type.ptr()),
                                                            reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr())))
          throw nb::type_error("_make_subclass: the type must be a subclass of tessera.Tensor");
        Tensor t = data.detach();
        if (requires_grad) t.requires_grad_(true);
        nb::object inst = nb::inst_alloc(type);
        new (nb::inst_ptr<Tensor>(inst)) Tensor(std::move(t));
        nb::inst_mark_ready(inst);
        return inst;
      },
      nb::arg("cls"), nb::arg("data"), nb::arg("requires_grad") = false);

  // .grad with a getter, a setter and a deleter (del t.grad clears it), which
  // def_prop_rw cannot express: a builtins.property over three functions.
  {
    nb::object getter = nb::cpp_function([](const Tensor& t) { return opt(t.grad()); }, nb::arg("self"));
    nb::object setter = nb::cpp_function([](Tensor& t, const OptTensor& g) { t.set_grad(unopt(g)); },
                                         nb::arg("self"), nb::arg("value").none());
    nb::object deleter = nb::cpp_function([](Tensor& t) { t.set_grad(Tensor()); }, nb::arg("self"));
    cls.attr("grad") = nb::module_::import_("builtins")
                           .attr("property")(getter, setter, deleter,
                                             "The accumulated gradient (None until a backward reaches this tensor).");
  }

  // ---- engine ----
  m.def(
      "_backward",
      [](nb::handle tensors, nb::handle grad_tensors, std::optional<bool> retain_graph, bool create_graph,
         nb::handle inputs) {
        std::vector<Tensor> ts = tensors_from(tensors, "backward: tensors");
        std::vector<Tensor> gs = tensors_from(grad_tensors, "backward: grad_tensors");
        std::vector<Tensor> in = tensors_from(inputs, "backward: inputs");
        nb::gil_scoped_release nogil;
        autograd::backward(ts, gs, retain_graph, create_graph, in);
      },
      nb::arg("tensors"), nb::arg("grad_tensors") = nb::none(), nb::arg("retain_graph") = nb::none(),
      nb::arg("create_graph") = false, nb::arg("inputs") = nb::none());
  m.def(
      "_grad",
      [](nb::handle outputs, nb::handle inputs, nb::handle grad_outputs, std::optional<bool> retain_graph,
         bool create_graph, bool allow_unused) {
        std::vector<Tensor> outs = tensors_from(outputs, "grad: outputs");
        std::vector<Tensor> in = tensors_from(inputs, "grad: inputs");
        std::vector<Tensor> gos = tensors_from(grad_outputs, "grad: grad_outputs");
        std::vector<Tensor> r;
        {
          nb::gil_scoped_release nogil;
          r = autograd::grad(outs, in, gos, retain_graph, create_graph, allow_unused);
        }
        return nb::tuple(opt_list(r));
      },
      nb::arg("outputs"), nb::arg("inputs"), nb::arg("grad_outputs") = nb::none(),
      nb::arg("retain_graph") = nb::none(), nb::arg("create_graph") = false, nb::arg("allow_unused") = false);

  // ---- modes ----
  m.def("is_grad_enabled", &autograd::is_grad_enabled);
  m.def("_set_grad_enabled", &autograd::set_grad_enabled, nb::arg("enabled"));
  m.def("is_inference_mode_enabled", &autograd::is_inference_mode_enabled);
  m.def("_is_anomaly_enabled", &autograd::is_anomaly_enabled);
  m.def("_set_anomaly_enabled", &autograd::set_anomaly_enabled, nb::arg("enabled"));
  nb::class_<ModeGuard>(m, "_ModeGuard")
      .def_static("no_grad", []() { return new ModeGuard(ModeGuard::kNoGrad, false); }, nb::rv_policy::take_ownership)
      .def_static("enable_grad", []() { return new ModeGuard(ModeGuard::kEnableGrad, true); },
                  nb::rv_policy::take_ownership)
      .def_static("inference_mode", [](bool on) { return new ModeGuard(ModeGuard::kInference, on); },
                  nb::arg("enabled"), nb::rv_policy::take_ownership)
      .def("exit", &ModeGuard::exit);

  // ---- custom functions ----
  nb::class_<CustomNode>(m, "_CustomNode")
      .def(nb::init<const std::string&, nb::handle>(), nb::arg("name"), nb::arg("backward"))
      .def("prepare", &CustomNode::prepare, nb::arg("inputs"))
      .def("wire", &CustomNode::wire, nb::arg("inputs"), nb::arg("outputs"))
      .def("drop", &CustomNode::drop)
      .def("node", [](const CustomNode& c) { return std::static_pointer_cast<Node>(c.get()); })
      .def("save_for_backward",
           [](CustomNode& c, const std::vector<OptTensor>& ts) { c.get()->context().save_for_backward(unopt_list(ts)); },
           nb::arg("tensors"))
      .def("saved_tensors",
           [](const CustomNode& c) { return nb::tuple(opt_list(c.get()->context().get_saved_variables())); })
      .def("mark_non_differentiable",
           [](CustomNode& c, const std::vector<Tensor>& ts) { c.get()->context().mark_non_differentiable(ts); },
           nb::arg("outputs"))
      .def("set_materialize_grads", [](CustomNode& c, bool v) { c.get()->context().set_materialize_grads(v); },
           nb::arg("value"))
      .def("needs_input_grad", [](const CustomNode& c, size_t i) { return c.get()->context().needs_input_grad(i); },
           nb::arg("i"));

  // ---- gradcheck ----
  auto options = [](double eps, double atol, double rtol, bool raise_exception) {
    autograd::GradcheckOptions o;
    o.eps = eps;
    o.atol = atol;
    o.rtol = rtol;
    o.raise_exception = raise_exception;
    return o;
  };
  m.def(
      "_gradcheck",
      [options](nb::callable fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol,
                bool raise_exception, bool check_undefined_grad) {
        autograd::GradcheckOptions o = options(eps, atol, rtol, raise_exception);
        o.check_undefined_grad = check_undefined_grad;
        autograd::GradcheckFn f = python_fn(fn);
        nb::gil_scoped_release nogil;
        return autograd::gradcheck(f, inputs, o);
      },
      nb::arg("fn"), nb::arg("inputs"), nb::arg("eps"), nb::arg("atol"), nb::arg("rtol"), nb::arg("raise_exception"),
      nb::arg("check_undefined_grad") = false);
  m.def(
      "_gradgradcheck",
      [options](nb::callable fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol,
                bool raise_exception, uint64_t seed) {
        const autograd::GradcheckOptions o = options(eps, atol, rtol, raise_exception);
        autograd::GradcheckFn f = python_fn(fn);
        nb::gil_scoped_release nogil;
        return autograd::gradgradcheck(f, inputs, o, seed);
      },
      nb::arg("fn"), nb::arg("inputs"), nb::arg("eps"), nb::arg("atol"), nb::arg("rtol"), nb::arg("raise_exception"),
      nb::arg("seed") = 0);
}

}  // namespace tessera::python
