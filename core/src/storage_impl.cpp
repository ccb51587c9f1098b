// Where StorageImpl objects live (tessera/storage.h): a per-thread pool of
// their size, since every new tensor that owns memory makes one.
#include <tessera/storage.h>

#include "object_pool.h"

namespace tessera {

void* StorageImpl::operator new(size_t size) {
  return size == sizeof(StorageImpl) ? detail::ThreadCachedPool<sizeof(StorageImpl)>::allocate() : ::operator new(size);
}
void StorageImpl::operator delete(void* p, size_t size) noexcept {
  if (size == sizeof(StorageImpl)) {
    detail::ThreadCachedPool<sizeof(StorageImpl)>::deallocate(p);
  } else {
    ::operator delete(p);
  }
}

}  // namespace tessera
