// c10d::Store over the bootstrap channel, so gloo rendezvouses through the parent.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "launch/client.hpp"

namespace pkb::comm {

class HubStore : public c10d::Store {
 public:
  explicit HubStore(launch::Client& client) : client_(client) {}

  c10::intrusive_ptr<c10d::Store> clone() override { return c10::make_intrusive<HubStore>(client_); }
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  // Blocks until the keys exist; the parent's watchdog, not this call, bounds the wait.
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { wait(keys); }

 private:
  launch::Client& client_;
};

}  // namespace pkb::comm
