#include "eval/protocol.hpp"

#include "launch/client.hpp"

namespace pkb::eval::protocol {

using json = nlohmann::json;

std::string message_key(int rank, int seq) { return "pair/" + std::to_string(rank) + "/" + std::to_string(seq); }

bool is_message(const std::string& key) {
  return key.rfind(std::string(kCandidates) + "pair/", 0) == 0 || key.rfind(std::string(kJudges) + "pair/", 0) == 0;
}

void Pair::send(const std::string& type, json body) {
  body["type"] = type;
  client_.set(message_key(rank_, sent_++), body.dump());
}

json Pair::receive_any() {
  const char* ns = me_ == Side::judge ? kCandidates : kJudges;
  json m = json::parse(client_.get_from(ns, message_key(rank_, received_++)), nullptr, false);
  if (!m.is_object() || !m.value("type", json()).is_string())
    throw ProtocolError("message " + std::to_string(received_ - 1) + " is not a pkb message");
  return m;
}

json Pair::receive(const std::string& type) {
  json m = receive_any();
  if (m["type"] != type)
    throw ProtocolError("expected a '" + type + "' message, got '" + m["type"].get<std::string>() + "'");
  return m;
}

}  // namespace pkb::eval::protocol
