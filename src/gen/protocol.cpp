#include "gen/protocol.hpp"

#include <cctype>
#include <cstdio>

namespace pkb::gen {

using json = nlohmann::json;

namespace {

std::string url_escape_path(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// The turns as the protocol's list of messages; `assistant` is the name of the model's role.
json turns(const Conversation& c, const char* assistant) {
  json list = json::array();
  for (auto& msg : c.messages)
    list.push_back({{"role", msg.role == Role::user ? "user" : assistant}, {"content", msg.text}});
  return list;
}

json body_for(const Model& m, const Conversation& c) {
  switch (m.provider.protocol) {
    case Protocol::openai_chat: {
      json messages = json::array({{{"role", "system"}, {"content", c.system}}});
      for (auto& t : turns(c, "assistant")) messages.push_back(t);
      json b = {{"model", m.id}, {"messages", messages}};
      b[m.provider.max_tokens_field] = m.max_tokens;
      if (!m.reasoning_effort.empty()) b["reasoning_effort"] = m.reasoning_effort;
      return b;
    }
    case Protocol::openai_responses: {
      // One question goes as plain text; a conversation as a list of role/content items.
      // store: false keeps prompts and answers off the provider's stored-response list.
      json input = c.messages.size() == 1 && c.messages[0].role == Role::user ? json(c.messages[0].text)
                                                                                : turns(c, "assistant");
      json b = {{"model", m.id},
                {"instructions", c.system},
                {"input", input},
                {"max_output_tokens", m.max_tokens},
                {"store", false}};
      if (!m.reasoning_effort.empty()) b["reasoning"] = {{"effort", m.reasoning_effort}};
      return b;
    }
    case Protocol::anthropic: {
      json b = {{"model", m.id}, {"max_tokens", m.max_tokens}, {"system", c.system}, {"messages", turns(c, "assistant")}};
      if (m.thinking_budget) b["thinking"] = {{"type", "enabled"}, {"budget_tokens", m.thinking_budget}};
      return b;
    }
    case Protocol::gemini: {
      json config = {{"maxOutputTokens", m.max_tokens}};
      if (m.thinking_budget) config["thinkingConfig"]["thinkingBudget"] = m.thinking_budget;
      if (!m.reasoning_effort.empty()) config["thinkingConfig"]["thinkingLevel"] = m.reasoning_effort;
      json contents = json::array();
      for (auto& msg : c.messages)
        contents.push_back({{"role", msg.role == Role::user ? "user" : "model"},
                            {"parts", json::array({{{"text", msg.text}}})}});
      return {{"systemInstruction", {{"parts", json::array({{{"text", c.system}}})}}},
              {"contents", contents},
              {"generationConfig", config}};
    }
  }
  return json::object();
}

const json& need(const json& j, const char* key, const char* what) {
  if (!j.is_object() || !j.contains(key)) throw MalformedResponse(std::string("no ") + what + " in the answer");
  return j[key];
}

int64_t count(const json& usage, const char* key) {
  return usage.is_object() && usage.contains(key) && usage[key].is_number() ? usage[key].get<int64_t>() : 0;
}

std::string text_of(const json& j) { return j.is_string() ? j.get<std::string>() : ""; }

Completion parse_json_completion(Protocol protocol, const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) throw MalformedResponse("the answer is not JSON (" + std::to_string(body.size()) + " bytes)");
  if (!j.is_object()) throw MalformedResponse("the answer is not a JSON object");
  Completion c;
  switch (protocol) {
    case Protocol::openai_chat: {
      const json& choices = need(j, "choices", "choices");
      if (!choices.is_array() || choices.empty()) throw MalformedResponse("no choices in the answer");
      const json& msg = need(choices[0], "message", "message");
      c.text = text_of(msg.value("content", json()));
      c.finish_reason = text_of(choices[0].value("finish_reason", json()));
      const json usage = j.value("usage", json());
      c.tokens_in = count(usage, "prompt_tokens");
      c.tokens_out = count(usage, "completion_tokens");
      break;
    }
    case Protocol::openai_responses: {
      const json& output = need(j, "output", "output");
      if (!output.is_array()) throw MalformedResponse("output is not a list");
      for (auto& item : output)
        if (item.value("type", "") == "message" && item.contains("content") && item["content"].is_array())
          for (auto& part : item["content"])
            if (part.value("type", "") == "output_text") c.text += text_of(part.value("text", json()));
      c.finish_reason = text_of(j.value("status", json()));
      if (j.contains("incomplete_details") && j["incomplete_details"].is_object())
        c.finish_reason += ": " + text_of(j["incomplete_details"].value("reason", json()));
      const json usage = j.value("usage", json());
      c.tokens_in = count(usage, "input_tokens");
      c.tokens_out = count(usage, "output_tokens");
      break;
    }
    case Protocol::anthropic: {
      const json& content = need(j, "content", "content");
      if (!content.is_array()) throw MalformedResponse("content is not a list");
      for (auto& block : content)
        if (block.value("type", "") == "text") c.text += text_of(block.value("text", json()));
      c.finish_reason = text_of(j.value("stop_reason", json()));
      const json usage = j.value("usage", json());
      c.tokens_in = count(usage, "input_tokens") + count(usage, "cache_read_input_tokens") +
                    count(usage, "cache_creation_input_tokens");
      c.tokens_out = count(usage, "output_tokens");
      break;
    }
    case Protocol::gemini: {
      const json candidates = j.value("candidates", json::array());
      if (!j.contains("candidates") && !j.contains("promptFeedback"))
        throw MalformedResponse("no candidates in the answer");
      if (!candidates.is_array()) throw MalformedResponse("candidates is not a list");
      if (candidates.empty()) {
        // A blocked prompt: an answer without text, saying why.
        c.finish_reason =
            "blocked: " + text_of(j.value("promptFeedback", json::object()).value("blockReason", json("unknown")));
      } else {
        const json& cand = candidates[0];
        if (cand.contains("content") && cand["content"].contains("parts"))
          for (auto& part : cand["content"]["parts"])
            if (!part.value("thought", false)) c.text += text_of(part.value("text", json()));
        c.finish_reason = text_of(cand.value("finishReason", json()));
      }
      const json usage = j.value("usageMetadata", json());
      c.tokens_in = count(usage, "promptTokenCount");
      c.tokens_out = count(usage, "candidatesTokenCount") + count(usage, "thoughtsTokenCount");
      break;
    }
  }
  return c;
}

}  // namespace

std::string Prompt::hash() const {
  uint64_t h = 1469598103934665603ull;
  for (const std::string* part : {&system, &user}) {
    for (unsigned char c : *part) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // keeps "ab"+"c" apart from "a"+"bc"
  }
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

HttpRequest build_request(const Model& m, const std::string& key, const Prompt& p) {
  return build_request(m, key, Conversation::of(p));
}

HttpRequest build_request(const Model& m, const std::string& key, const Conversation& c) {
  json body = body_for(m, c);
  body.merge_patch(m.extra);
  HttpRequest r;
  r.body = body.dump();
  r.headers = {"Content-Type: application/json"};
  const std::string& base = m.provider.base_url;
  switch (m.provider.protocol) {
    case Protocol::openai_chat:
      r.url = base + "/chat/completions";
      if (!key.empty()) r.headers.push_back("Authorization: Bearer " + key);
      break;
    case Protocol::openai_responses:
      r.url = base + "/responses";
      if (!key.empty()) r.headers.push_back("Authorization: Bearer " + key);
      break;
    case Protocol::anthropic:
      r.url = base + "/messages";
      if (!key.empty()) r.headers.push_back("x-api-key: " + key);
      r.headers.push_back("anthropic-version: 2023-06-01");
      break;
    case Protocol::gemini:
      // The key goes in a header, never in the URL, so no log line can carry it.
      r.url = base + "/models/" + url_escape_path(m.id) + ":generateContent";
      if (!key.empty()) r.headers.push_back("x-goog-api-key: " + key);
      break;
  }
  return r;
}

Completion parse_completion(Protocol protocol, const std::string& body) {
  try {
    return parse_json_completion(protocol, body);
  } catch (const json::exception& e) {
    throw MalformedResponse(std::string("unexpected shape: ") + e.what());
  }
}

std::string error_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_array() && !j.empty()) j = j[0];  // Gemini sometimes wraps the error in a list
  std::string msg;
  if (j.is_object()) {
    const json& e = j.contains("error") ? j["error"] : j;
    if (e.is_string())
      msg = e.get<std::string>();
    else if (e.is_object()) {
      msg = text_of(e.value("message", json()));
      std::string kind = text_of(e.value("type", json()));
      if (kind.empty()) kind = text_of(e.value("status", json()));
      if (!kind.empty()) msg = kind + (msg.empty() ? "" : ": " + msg);
    }
  }
  if (msg.empty()) msg = body.substr(0, 200);
  for (char& ch : msg)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
  return msg;
}

bool stops_the_model(long status, const std::string& body) {
  return status == 401 || status == 403 || status == 404 ||
         (status == 400 && body.find("API_KEY_INVALID") != std::string::npos);
}

std::string redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  const std::string mark = "[key]";
  for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + mark.size()))
    text.replace(at, secret.size(), mark);
  return text;
}

}  // namespace pkb::gen
