// tessera/ops/indexing.h — indexing ops (index_select, gather, scatter, masked_fill, masked_select, take, embedding, one_hot): free functions.
// Included by tessera/tensor.h; the method forms are in indexing_methods.inc.
#pragma once

#include <tessera/tensor.h>

namespace tessera {

}  // namespace tessera
