#include "launch/store.hpp"

#include <unistd.h>

namespace pkb::launch {

Store::~Store() {
  for (auto& [k, fd] : fds_) close(fd);
}

bool Store::handles(Op op) {
  switch (op) {
    case Op::Set: case Op::Get: case Op::Add: case Op::Check: case Op::Delete: case Op::NumKeys: case Op::SetFd:
    case Op::GetFd:
      return true;
    default:
      return false;
  }
}

std::vector<Store::Reply> Store::handle(int rank, const Frame& f) {
  std::vector<Reply> out;
  auto reply = [&](Op op, std::string payload) { out.push_back({rank, Frame{op, std::move(payload), -1}}); };
  switch (f.op) {
    case Op::Set: {
      auto p = unpack(f.payload);
      kv_[p.at(0)] = p.size() > 1 ? p[1] : "";
      reply(Op::Ok, "");
      wake(p.at(0), out);
      break;
    }
    case Op::Get:
      waiters_.push_back({rank, Op::Get, f.payload});
      wake(f.payload, out);
      break;
    case Op::Add: {
      auto p = unpack(f.payload);
      int64_t v = (kv_.count(p.at(0)) ? std::stoll(kv_[p[0]]) : 0) + std::stoll(p.at(1));
      kv_[p[0]] = std::to_string(v);
      reply(Op::Value, std::to_string(v));
      wake(p[0], out);
      break;
    }
    case Op::Check: {
      bool all = true;
      for (auto& k : unpack(f.payload)) all = all && (kv_.count(k) || fds_.count(k));
      reply(Op::Value, all ? "1" : "0");
      break;
    }
    case Op::Delete:
      reply(Op::Value, kv_.erase(f.payload) ? "1" : "0");
      break;
    case Op::NumKeys:
      reply(Op::Value, std::to_string(kv_.size()));
      break;
    case Op::SetFd:
      if (f.fd >= 0) {
        if (fds_.count(f.payload)) close(fds_[f.payload]);
        fds_[f.payload] = f.fd;
      }
      reply(Op::Ok, "");
      if (f.fd >= 0) wake(f.payload, out);
      break;
    case Op::GetFd:
      waiters_.push_back({rank, Op::GetFd, f.payload});
      wake(f.payload, out);
      break;
    default:
      break;
  }
  return out;
}

void Store::wake(const std::string& key, std::vector<Reply>& out) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->key == key && it->op == Op::Get && kv_.count(key)) {
      out.push_back({it->rank, Frame{Op::Value, kv_[key], -1}});
    } else if (it->key == key && it->op == Op::GetFd && fds_.count(key)) {
      out.push_back({it->rank, Frame{Op::Ok, "", fds_[key]}});
    } else {
      ++it;
      continue;
    }
    it = waiters_.erase(it);
  }
}

}  // namespace pkb::launch
