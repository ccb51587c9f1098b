// Meta-versus-cpu cases of the shape ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_shape_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
