// What goes to a model and what comes back, independent of the provider.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pkb::gen {

struct Prompt {
  std::string system, user;
  // 16 hex digits (64-bit FNV-1a of both parts): tells whether two samples saw the same prompt.
  std::string hash() const;
};

// A conversation of several turns (pkb agent): the system prompt, then messages that
// alternate user, assistant, user, ..., the last one the user's.
enum class Role { user, assistant };

struct Message {
  Role role = Role::user;
  std::string text;
};

struct Conversation {
  std::string system;
  std::vector<Message> messages;
  static Conversation of(const Prompt& p) { return {p.system, {{Role::user, p.user}}}; }
};

struct Completion {
  std::string text;  // the answer, reasoning left out
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;     // reasoning tokens included
  std::string finish_reason;  // the provider's word: stop, length, end_turn, MAX_TOKENS, ...
};

}  // namespace pkb::gen
