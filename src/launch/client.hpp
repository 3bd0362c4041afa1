// A rank's end of the bootstrap channel (see channel.hpp). Thread-safe: one request at a
// time; gloo's threads and the rank's main thread share it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "launch/channel.hpp"

namespace pkb::launch {

class Client {
 public:
  // The socket the parent handed over (PKB_BOOTSTRAP_FD).
  static Client& from_env();
  explicit Client(int sock) : sock_(sock) {}

  std::string hello(int rank);  // the job description

  // Every key this client writes or waits on is under `ns` ("j/" for pkb eval's judge
  // ranks, "c/" for its candidate ranks, "" for jobs of one kind): ranks of one kind run
  // their collectives apart from the other's, and the parent lets each write only its own.
  void set_namespace(std::string ns) { ns_ = std::move(ns); }
  const std::string& name_space() const { return ns_; }
  // Reads of another namespace's keys (a judge reading its candidate rank's, and back).
  std::string get_from(const std::string& ns, const std::string& key);
  int get_fd_from(const std::string& ns, const std::string& key);

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);  // blocks until the key exists
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::vector<std::string>& keys);
  bool erase(const std::string& key);
  int64_t num_keys();
  void set_fd(const std::string& key, int fd);
  int get_fd(const std::string& key);  // a new descriptor, owned by the caller

  // Store-built collectives over all `world` ranks; every rank calls them in the same order.
  void barrier(int world);
  std::vector<std::string> all_gather(int rank, int world, const std::string& blob);
  // Every rank's `bytes` of fresh, zero-filled shared memory (a memfd each, passed through the
  // store under `name`), mapped here in rank order; the caller unmaps them. No barrier: a rank
  // may still be mapping when this returns elsewhere.
  std::vector<void*> map_shared(const std::string& name, int rank, int world, size_t bytes);

  // One-way events. A rank that runs several problems in turn names the one at hand
  // (set_problem), and every later phase event carries it.
  void set_problem(const std::string& slug) { problem_ = slug; }
  void phase(const std::string& name, int trial = -1);
  void result(const std::string& json);
  // A rank that runs several problems in turn: one problem's report, sent as it ends, so a
  // crash in a later one loses none of it.
  void part(const std::string& json);
  void error(const std::string& kind, const std::string& message);
  // Replies polled without sleeping for up to `seconds` (then awaited as usual); 0: off.
  // The thread keeps its CPU and its caches: what it does next starts warm.
  void spin_while_waiting(double seconds) { spin_s_ = seconds; }

 private:
  double spin_s_ = 0;
  Frame request(Op op, std::string payload, int fd = -1);
  void event(Op op, const std::string& payload);

  std::mutex mu_;
  std::string ns_, problem_;
  int sock_;
  FrameReader reader_;
  int64_t collective_seq_ = 0;
};

}  // namespace pkb::launch
