// The parent's key-value store behind the bootstrap channel (channel.hpp): what ranks Set,
// Get (answered once the key exists), Add, Check and Delete, and the descriptors they hand
// over (SetFd, GetFd). Pure logic over frames, so it is tested without processes: handle()
// returns the replies to send, each to its rank.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launch/channel.hpp"

namespace pkb::launch {

class Store {
 public:
  struct Reply {
    int rank;
    Frame frame;  // frame.fd: a descriptor to attach (the store keeps owning it), or -1
  };

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();  // closes the descriptors it holds

  // Whether `op` is one of the store's (Set ... GetFd).
  static bool handles(Op op);
  // A store request from `rank`; the replies it completes (perhaps other ranks' waits).
  std::vector<Reply> handle(int rank, const Frame& f);
  size_t waiting() const { return waiters_.size(); }

 private:
  struct Waiter {
    int rank;
    Op op;  // Get or GetFd
    std::string key;
  };
  void wake(const std::string& key, std::vector<Reply>& out);

  std::map<std::string, std::string> kv_;
  std::map<std::string, int> fds_;
  std::vector<Waiter> waiters_;
};

}  // namespace pkb::launch
