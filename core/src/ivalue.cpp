// IValue, the boxed argument of a dispatched call (tessera/dispatcher.h).
#include <tessera/dispatcher.h>
#include <tessera/error.h>

namespace tessera {

Scalar IValue::to_scalar() const {
  switch (tag) {
    case Tag::Int: return Scalar(i);
    case Tag::Double: return Scalar(d);
    case Tag::Bool: return Scalar(b);
    default: throw InternalError("IValue is not a scalar");
  }
}

}  // namespace tessera
