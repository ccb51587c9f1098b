// Meta-versus-cpu cases of the random ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_random_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
