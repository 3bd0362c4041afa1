// The bootstrap channel between the parent and one rank: length-prefixed frames over a
// Unix stream socket; a frame may carry one file descriptor (SCM_RIGHTS).
//
// Ranks ask, the parent answers: a key-value store with blocking gets (the NCCL unique
// id, gloo's rendezvous, barriers, small all-gathers), a store of file descriptors
// (symmetric-heap handles), and one-way events (phase changes, results, errors).
#pragma once

#include <cstdint>
#include <sys/types.h>
#include <string>
#include <vector>

namespace pkb::launch {

enum class Op : uint32_t {
  // rank -> parent, answered
  Hello = 1,  // -> Job (the job description, JSON)
  Set,        // key, value -> Ok
  Get,        // key -> Value, once the key exists
  Add,        // key, int64 delta -> Value (int64, the new value)
  Check,      // keys -> Value ("1" or "0")
  Delete,     // key -> Value ("1" if it existed)
  NumKeys,    // -> Value (int64)
  SetFd,      // key + fd -> Ok
  GetFd,      // key -> Ok + fd, once the key exists
  // rank -> parent, one way
  Phase = 100,  // JSON {"phase": ..., "trial": n}
  Result,       // JSON, the rank's result
  Error,        // JSON {"kind": ..., "message": ...}: the rank is about to exit non-zero
  Part,         // JSON: a rank that runs several problems in turn, one's report as it ends
  // parent -> rank
  Job = 200,
  Ok,
  Value,
};

struct Frame {
  Op op{};
  std::string payload;
  int fd = -1;  // attached descriptor, or -1
};

// Payload helpers: a list of strings, each length-prefixed.
std::string pack(const std::vector<std::string>& parts);
std::vector<std::string> unpack(const std::string& payload);

// Encodes a frame header + payload.
std::string encode(const Frame& f);

// One sendmsg of bytes[0, n), with `fd` attached when fd >= 0 (pass it only with a frame's
// first byte). Returns what sendmsg returns.
ssize_t send_bytes(int sock, const char* bytes, size_t n, int fd, int flags);

// Sends a whole frame on a blocking socket (the fd, if any, with its first byte).
// Throws std::system_error.
void send_frame(int sock, const Frame& f);

// Incremental decoder: the parent reads non-blocking, ranks read blocking.
class FrameReader {
 public:
  // Reads what is there. Returns false when the peer closed the socket.
  bool read_some(int sock);
  // Next complete frame, if any (descriptors are matched to SetFd frames in order).
  bool next(Frame& out);

 private:
  std::string buf_;
  std::vector<int> fds_;
};

}  // namespace pkb::launch
