// Where StorageImpl objects live (tessera/storage.h): a per-thread pool of
// their size, since every new tensor that owns memory makes one.
#include <tessera/storage.h>

#include "object_pool.h"

namespace tessera {

// Every tensor that owns memory has one: keep it to one cache line (storage.h).
static_assert(sizeof(StorageImpl) <= 64, "StorageImpl grew beyond a cache line");

void* StorageImpl::operator new(size_t size) { return detail::pooled_new<sizeof(StorageImpl)>(size); }
void StorageImpl::operator delete(void* p, size_t size) noexcept { detail::pooled_delete<sizeof(StorageImpl)>(p, size); }

}  // namespace tessera
