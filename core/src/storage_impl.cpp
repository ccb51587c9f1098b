// Where StorageImpl objects live (tessera/storage.h): a per-thread pool of
// their size, since every new tensor that owns memory makes one.
#include <tessera/storage.h>

#include "object_pool.h"

namespace tessera {

void* StorageImpl::operator new(size_t size) { return detail::pooled_new<sizeof(StorageImpl)>(size); }
void StorageImpl::operator delete(void* p, size_t size) noexcept { detail::pooled_delete<sizeof(StorageImpl)>(p, size); }

}  // namespace tessera
