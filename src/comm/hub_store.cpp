#include "comm/hub_store.hpp"

namespace pkb::comm {

void HubStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  client_.set(key, std::string(value.begin(), value.end()));
}

std::vector<uint8_t> HubStore::get(const std::string& key) {
  std::string v = client_.get(key);
  return std::vector<uint8_t>(v.begin(), v.end());
}

int64_t HubStore::add(const std::string& key, int64_t value) { return client_.add(key, value); }

bool HubStore::deleteKey(const std::string& key) { return client_.erase(key); }

bool HubStore::check(const std::vector<std::string>& keys) { return client_.check(keys); }

int64_t HubStore::getNumKeys() { return client_.num_keys(); }

void HubStore::wait(const std::vector<std::string>& keys) {
  for (auto& k : keys) client_.get(k);
}

}  // namespace pkb::comm
