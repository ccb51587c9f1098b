// Meta-versus-cpu cases of the nn ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_nn_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
