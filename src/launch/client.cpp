#include "launch/client.hpp"

#include <cstdlib>
#include <stdexcept>
#include <system_error>
#include <poll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include <nlohmann/json.hpp>

namespace pkb::launch {

Client& Client::from_env() {
  static Client* client = [] {
    const char* fd = std::getenv("PKB_BOOTSTRAP_FD");
    if (!fd) throw std::runtime_error("pkb worker started without PKB_BOOTSTRAP_FD: workers are started by pkb itself");
    return new Client(std::atoi(fd));
  }();
  return *client;
}

namespace {

// Polls `sock` without sleeping until it is readable or `seconds` have passed.
void spin_until_readable(int sock, double seconds) {
  timespec t0{}, t{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pollfd p{sock, POLLIN, 0};
  do {
    if (poll(&p, 1, 0) != 0) return;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds);
}

}  // namespace

Frame Client::request(Op op, std::string payload, int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  send_frame(sock_, Frame{op, std::move(payload), fd});
  Frame reply;
  while (!reader_.next(reply)) {
    if (spin_s_ > 0) spin_until_readable(sock_, spin_s_);
    if (!reader_.read_some(sock_))
      throw std::system_error(ECONNRESET, std::generic_category(), "pkb parent closed the bootstrap channel");
  }
  return reply;
}

void Client::event(Op op, const std::string& payload) {
  std::lock_guard<std::mutex> lock(mu_);
  send_frame(sock_, Frame{op, payload, -1});
}

std::string Client::hello(int rank) { return request(Op::Hello, std::to_string(rank)).payload; }

void Client::set(const std::string& key, const std::string& value) { request(Op::Set, pack({ns_ + key, value})); }

std::string Client::get(const std::string& key) { return get_from(ns_, key); }

std::string Client::get_from(const std::string& ns, const std::string& key) {
  return request(Op::Get, ns + key).payload;
}

int64_t Client::add(const std::string& key, int64_t delta) {
  return std::stoll(request(Op::Add, pack({ns_ + key, std::to_string(delta)})).payload);
}

bool Client::check(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  for (auto& k : keys) full.push_back(ns_ + k);
  return request(Op::Check, pack(full)).payload == "1";
}

bool Client::erase(const std::string& key) { return request(Op::Delete, ns_ + key).payload == "1"; }

int64_t Client::num_keys() { return std::stoll(request(Op::NumKeys, "").payload); }

void Client::set_fd(const std::string& key, int fd) { request(Op::SetFd, ns_ + key, fd); }

int Client::get_fd(const std::string& key) { return get_fd_from(ns_, key); }

int Client::get_fd_from(const std::string& ns, const std::string& key) {
  Frame f = request(Op::GetFd, ns + key);
  if (f.fd < 0) throw std::runtime_error("bootstrap: no descriptor came with key " + ns + key);
  return f.fd;
}

void Client::barrier(int world) {
  std::string tag = "pkb/barrier/" + std::to_string(collective_seq_++);
  if (add(tag, 1) == world) set(tag + "/done", "");
  get(tag + "/done");
}

std::vector<std::string> Client::all_gather(int rank, int world, const std::string& blob) {
  std::string tag = "pkb/allgather/" + std::to_string(collective_seq_++) + "/";
  set(tag + std::to_string(rank), blob);
  std::vector<std::string> all;
  for (int r = 0; r < world; ++r) all.push_back(r == rank ? blob : get(tag + std::to_string(r)));
  return all;
}

std::vector<void*> Client::map_shared(const std::string& name, int rank, int world, size_t bytes) {
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    throw std::system_error(errno, std::generic_category(), "ftruncate of " + name);
  }
  set_fd(name + "/" + std::to_string(rank), fd);
  std::vector<void*> maps;
  for (int r = 0; r < world; ++r) {
    int peer = r == rank ? fd : get_fd(name + "/" + std::to_string(r));
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, peer, 0);
    if (peer != fd) close(peer);
    if (p == MAP_FAILED) {
      int e = errno;
      for (void* m : maps) munmap(m, bytes);
      close(fd);
      throw std::system_error(e, std::generic_category(), "mmap of rank " + std::to_string(r) + "'s " + name);
    }
    maps.push_back(p);
  }
  close(fd);
  return maps;
}

void Client::phase(const std::string& name, int trial) {
  nlohmann::json j = {{"phase", name}, {"trial", trial}};
  if (!problem_.empty()) j["problem"] = problem_;
  event(Op::Phase, j.dump());
}

void Client::result(const std::string& json) { event(Op::Result, json); }

void Client::part(const std::string& json) { event(Op::Part, json); }

void Client::error(const std::string& kind, const std::string& message) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the parent orders ranks' errors by it
  event(Op::Error, nlohmann::json{{"kind", kind}, {"message", message}, {"t", ts.tv_sec + ts.tv_nsec * 1e-9}}.dump());
}

}  // namespace pkb::launch
