// Meta-versus-cpu cases of the ternary ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_ternary_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
