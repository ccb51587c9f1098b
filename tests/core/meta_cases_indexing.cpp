// Meta-versus-cpu cases of the indexing ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_indexing_cases(CaseMap&) {}

}  // namespace tessera::meta_cases
