// Meta-versus-cpu cases of the unary ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_unary_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
