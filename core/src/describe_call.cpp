// describe_call: a dispatched call as text, for error messages.
#include <tessera/dispatcher.h>

#include <sstream>
#include <string>

namespace tessera {

std::string describe_call(const Operator& op, const Frame& frame) {
  std::ostringstream os;
  os << op.name() << "(";
  const auto& args = op.schema().arguments;
  for (int i = 0; i < frame.num_args; ++i) {
    if (i) os << ", ";
    if (i < int(args.size())) os << args[i].name << "=";
    const IValue& v = frame.args[i];
    switch (v.tag) {
      case IValue::Tag::None: os << "None"; break;
      case IValue::Tag::Tensor:
        if (!v.tensor->defined()) {
          os << "<undefined tensor>";
        } else {
          os << dtype_name(v.tensor->scalar_type()) << v.tensor->sizes() << " " << v.tensor->device().str();
        }
        break;
      case IValue::Tag::Int: os << v.i; break;
      case IValue::Tag::Double: os << v.d; break;
      case IValue::Tag::Bool: os << (v.b ? "True" : "False"); break;
      case IValue::Tag::IntList: os << v.int_list(); break;
      case IValue::Tag::ScalarType: os << dtype_name(v.dtype); break;
      case IValue::Tag::String: os << '"' << v.string() << '"'; break;
      case IValue::Tag::Device: os << v.device.str(); break;
      case IValue::Tag::TensorList: os << "<" << v.tensors.size << " tensors>"; break;
    }
  }
  os << ")";
  return os.str();
}

}  // namespace tessera
