// tessera/serialize.h — named tensors (state dicts) and their .npz files.
//
// A StateDict is an insertion-ordered map from a dotted name ("fc1.weight") to a
// Tensor: what nn::Module::state_dict() returns and load_state_dict() takes.
//
// save() and load() read and write the NumPy .npz format, so that a state dict
// written here is read by numpy.load and one written by numpy.savez is read
// here (docs/nn.md has the full format):
//   - a zip archive (entries stored; deflated entries are read too), one member
//     "<key>.npy" per entry, in the dict's order;
//   - each member a .npy file, format version 1.0 (2.0 and 3.0 are read too),
//     holding a little-endian, C-order array whose dtype descr is one of
//     '<f4' '<f8' '<f2' '|b1' '|u1' '|i1' '<i2' '<i4' '<i8';
//   - bfloat16 tensors (NumPy has no bfloat16) are written as '<f4', which holds
//     every bfloat16 value exactly; load() gives float32 back and
//     Module::load_state_dict casts to the parameter's dtype.
//
// Threading: a StateDict is a plain value (not synchronized; copies share the
// tensors, not the map). save/load may run on several threads at once on
// different files.
#pragma once

#include <tessera/tensor.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera {

/// An insertion-ordered map name -> Tensor. Copies share the tensors.
class StateDict {
 public:
  using value_type = std::pair<std::string, Tensor>;
  using const_iterator = std::vector<value_type>::const_iterator;

  StateDict() = default;
  StateDict(std::initializer_list<value_type> items);

  /// Adds `key` at the end, or replaces the tensor of an existing key in place
  /// (its position is kept). ValueError for an empty key or an undefined tensor.
  void insert(std::string key, Tensor tensor);
  /// The tensor of `key`, or null when absent. The pointer is valid until the
  /// next insert or erase.
  const Tensor* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  /// The tensor of `key`; ValueError naming the key (and the keys present) when absent.
  const Tensor& at(std::string_view key) const;
  /// Removes `key`; returns whether it was present.
  bool erase(std::string_view key);

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  /// The keys in order.
  std::vector<std::string> keys() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::vector<value_type> items_;
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;  // key -> position in items_
};

/// Writes `dict` to `path` as an .npz file (see the file comment), replacing any
/// file there (the archive is written to a temporary file and renamed, so a
/// failed save leaves the old file). Tensors on other devices are copied to the
/// host; views are written as their values. ValueError naming the path on an I/O
/// failure or a key containing '/' or '\0'.
void save(const std::string& path, const StateDict& dict);

/// Reads an .npz file into a StateDict of cpu tensors (keys without ".npy", in
/// the archive's order; bool elements are 0 or 1, any nonzero byte reading as
/// true). ValueError naming the file (and the member) when: the file is missing
/// or unreadable, it is not a zip archive, a member is not named *.npy or is
/// neither stored nor deflated, a .npy header is malformed or truncated, the
/// dtype is unsupported (e.g. big-endian, complex, object), the array is in
/// Fortran order, or the data is shorter than the shape says. Safe on untrusted
/// files: nothing is allocated beyond what the file's bytes can hold.
StateDict load(const std::string& path);

}  // namespace tessera
