// Meta-versus-cpu cases of the linalg ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_linalg_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
