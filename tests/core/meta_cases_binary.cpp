// Meta-versus-cpu cases of the binary ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_binary_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
