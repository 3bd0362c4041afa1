#include "launch/channel.hpp"

#include <cerrno>
#include <cstring>
#include <system_error>

#include <sys/socket.h>
#include <unistd.h>

namespace pkb::launch {

namespace {

constexpr size_t kHeader = 8;  // op (u32) + payload length (u32)
constexpr uint32_t kMaxPayload = 256u << 20;

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
uint32_t get_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

}  // namespace

std::string pack(const std::vector<std::string>& parts) {
  std::string s;
  for (auto& p : parts) {
    put_u32(s, static_cast<uint32_t>(p.size()));
    s += p;
  }
  return s;
}

std::vector<std::string> unpack(const std::string& payload) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i + 4 <= payload.size()) {
    uint32_t n = get_u32(payload.data() + i);
    i += 4;
    if (i + n > payload.size()) break;
    parts.emplace_back(payload.substr(i, n));
    i += n;
  }
  return parts;
}

std::string encode(const Frame& f) {
  std::string s;
  put_u32(s, static_cast<uint32_t>(f.op));
  put_u32(s, static_cast<uint32_t>(f.payload.size()));
  return s + f.payload;
}

ssize_t send_bytes(int sock, const char* bytes, size_t n, int fd, int flags) {
  struct iovec iov{const_cast<char*>(bytes), n};
  struct msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  return sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
}

void send_frame(int sock, const Frame& f) {
  std::string bytes = encode(f);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send_bytes(sock, bytes.data() + off, bytes.size() - off, off == 0 ? f.fd : -1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("bootstrap send");
    }
    off += static_cast<size_t>(n);
  }
}

bool FrameReader::read_some(int sock) {
  char data[65536];
  struct iovec iov{data, sizeof(data)};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
  struct msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    if (errno == ECONNRESET) return false;
    throw_errno("bootstrap receive");
  }
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t k = 0; k < count; ++k) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
      fds_.push_back(fd);
    }
  }
  if (n == 0) return false;
  buf_.append(data, static_cast<size_t>(n));
  return true;
}

bool FrameReader::next(Frame& out) {
  if (buf_.size() < kHeader) return false;
  uint32_t len = get_u32(buf_.data() + 4);
  if (len > kMaxPayload) throw std::runtime_error("bootstrap frame of " + std::to_string(len) + " bytes: corrupt channel");
  if (buf_.size() < kHeader + len) return false;
  out.op = static_cast<Op>(get_u32(buf_.data()));
  out.payload = buf_.substr(kHeader, len);
  out.fd = -1;
  if ((out.op == Op::SetFd || out.op == Op::Ok) && !fds_.empty()) {
    out.fd = fds_.front();
    fds_.erase(fds_.begin());
  }
  buf_.erase(0, kHeader + len);
  return true;
}

}  // namespace pkb::launch
