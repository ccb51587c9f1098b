// tessera/storage.h — a block of device memory shared by a tensor and its views.
//
// Ownership: intrusive reference count (thread-safe). The storage frees its memory
// through its deleter exactly once, when the last reference goes. Storage made by
// a plugin's device holds a reference to that plugin, so the plugin's library
// stays loaded while the storage lives (ABI rule 9). A storage of a device with
// no memory ("meta") has a null data pointer and only a byte count.
#pragma once

#include <tessera/device.h>
#include <tessera/ref_counted.h>
#include <tessera/stream.h>

#include <atomic>
#include <boost/intrusive_ptr.hpp>
#include <cstddef>
#include <cstdint>

namespace tessera {

/// A loaded plugin (defined in the plugin host); reference-counted.
class PluginRecord;
void intrusive_ptr_add_ref(PluginRecord* p);
void intrusive_ptr_release(PluginRecord* p);
using PluginRef = boost::intrusive_ptr<PluginRecord>;

class StorageImpl : public detail::RefCounted<StorageImpl> {
 public:
  /// Frees `self.data()`; called once from the destructor; must not throw.
  using Deleter = void (*)(StorageImpl& self) noexcept;

  StorageImpl(void* data, size_t nbytes, Device device, Deleter deleter, void* deleter_context,
              PluginRef owner, bool read_only = false)
      : data_(data), nbytes_(nbytes), device_(device), read_only_(read_only), deleter_(deleter),
        deleter_context_(deleter_context), owner_(std::move(owner)) {}
  ~StorageImpl() {
    if (deleter_ != nullptr) deleter_(*this);
  }
  StorageImpl(const StorageImpl&) = delete;
  // Allocated from a per-thread cache: tiny ops create one per output.
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size) noexcept;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  void* deleter_context() const { return deleter_context_; }
  /// Tells who owns the memory (the core compares it with its own deleters).
  Deleter deleter() const { return deleter_; }
  /// The plugin whose device the memory belongs to (kept loaded while this storage
  /// lives); null for from_blob memory. DLPack imports hold their device type's plugin.
  PluginRecord* owner() const { return owner_.get(); }
  /// Moves the plugin reference out (the allocator keeps it with a cached block).
  PluginRef& owner_ref() { return owner_; }
  /// The stream the memory was allocated on, on an asynchronous device: its
  /// deleter frees it in that stream's order. Null for the default stream (and
  /// always on synchronous devices). The storage keeps the stream alive.
  StreamImpl* stream() const { return stream_.get(); }
  void set_stream(boost::intrusive_ptr<StreamImpl> stream) { stream_ = std::move(stream); }
  /// Read-only memory (e.g. imported from a read-only DLPack producer): in-place
  /// ops and copies into it fail with ValueError.
  bool read_only() const { return read_only_; }

  /// Version counter shared by all views, bumped by every in-place write.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  /// Core-internal: a block from the per-thread small-block cache, which may go
  /// back to a tensor cache with its tensor (core/src/tensor_cache.h).
  bool recyclable() const { return recyclable_; }
  void set_recyclable() { recyclable_ = true; }
  /// Core-internal, for a storage handed out again by the tensor cache: its
  /// size (same size class) and a fresh version counter.
  void reuse(size_t nbytes) {
    nbytes_ = nbytes;
    version_.store(0, std::memory_order_relaxed);
  }

 private:
  // Ordered so the object fills one 64-byte cache line: version_ sits in the
  // reference count's padding, the flags next to device_.
  std::atomic<uint32_t> version_{0};
  void* data_;
  size_t nbytes_;
  Device device_;
  bool read_only_;
  bool recyclable_ = false;
  Deleter deleter_;
  void* deleter_context_;
  PluginRef owner_;
  boost::intrusive_ptr<StreamImpl> stream_;
};

using Storage = boost::intrusive_ptr<StorageImpl>;

}  // namespace tessera
