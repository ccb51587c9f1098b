// StateDict: an insertion-ordered name -> Tensor map (tessera/serialize.h).
#include <tessera/serialize.h>

namespace tessera {

StateDict::StateDict(std::initializer_list<value_type> items) {
  for (const auto& [k, v] : items) insert(k, v);
}

void StateDict::insert(std::string key, Tensor tensor) {
  TSR_CHECK(!key.empty(), ValueError, "StateDict.insert: the key is empty");
  TSR_CHECK(tensor.defined(), ValueError, "StateDict.insert: the tensor of '", key, "' is undefined");
  if (auto it = index_.find(key); it != index_.end()) {
    items_[it->second].second = std::move(tensor);
    return;
  }
  index_.emplace(key, items_.size());
  items_.emplace_back(std::move(key), std::move(tensor));
}

const Tensor* StateDict::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

const Tensor& StateDict::at(std::string_view key) const {
  if (const Tensor* t = find(key)) return *t;
  std::string present;
  for (const auto& [k, v] : items_) present += (present.empty() ? "" : ", ") + k;
  throw ValueError(detail::str("StateDict: no key '", key, "' (keys: ", present.empty() ? "none" : present, ")"));
}

bool StateDict::erase(std::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  const size_t pos = it->second;
  index_.erase(it);
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(pos));
  for (auto& [k, i] : index_)
    if (i > pos) --i;
  return true;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

}  // namespace tessera
