#include "gen/models.hpp"

#include <cctype>
#include <cstdlib>
#include <set>

#include "gen/error.hpp"
#include "io/toml_reader.hpp"

namespace pkb::gen {

namespace {

nlohmann::json to_json(const toml::node& n) {
  if (auto t = n.as_table()) {
    nlohmann::json j = nlohmann::json::object();
    for (auto& [k, v] : *t) j[std::string(k.str())] = to_json(v);
    return j;
  }
  if (auto a = n.as_array()) {
    nlohmann::json j = nlohmann::json::array();
    for (auto& v : *a) j.push_back(to_json(v));
    return j;
  }
  if (n.is_string()) return *n.value<std::string>();
  if (n.is_integer()) return *n.value<int64_t>();
  if (n.is_floating_point()) return *n.value<double>();
  if (n.is_boolean()) return *n.value<bool>();
  return nullptr;  // dates and times: no request field takes one
}

Protocol protocol_from(const io::TomlReader& r, const toml::table& t, const std::string& where) {
  std::string p = r.str(t, "protocol", where, true);
  for (Protocol x : {Protocol::openai_chat, Protocol::openai_responses, Protocol::anthropic, Protocol::gemini})
    if (p == protocol_name(x)) return x;
  r.fail(*t.get("protocol"),
         "unknown protocol '" + p + "' in " + where + "; use openai-chat, openai-responses, anthropic or gemini");
}

}  // namespace

std::vector<std::string> ModelTable::key_variables() const {
  std::vector<std::string> out;
  for (auto& [name, p] : providers_)
    if (!p.api_key_env.empty()) out.push_back(p.api_key_env);
  return out;
}

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::openai_chat: return "openai-chat";
    case Protocol::openai_responses: return "openai-responses";
    case Protocol::anthropic: return "anthropic";
    case Protocol::gemini: return "gemini";
  }
  return "?";
}

ModelTable ModelTable::load(const std::string& path) {
  io::TomlReader r(path);
  const toml::table& doc = r.doc();
  r.only_keys(doc, {"providers", "models"}, "the top level");
  ModelTable table;
  table.path_ = path;
  const toml::table* providers = r.table(doc, "providers", "the top level");
  if (!providers) throw GenError(path + ": no [providers.<name>] tables; see the models.toml in pkb's root");
  for (auto& [k, v] : *providers) {
    std::string name(k.str()), where = "[providers." + name + "]";
    const toml::table* t = v.as_table();
    if (!t) r.fail(v, where + " must be a table");
    r.only_keys(*t, {"protocol", "base_url", "api_key_env", "max_tokens_field", "max_tokens"}, where);
    Provider p;
    p.name = name;
    p.protocol = protocol_from(r, *t, where);
    p.base_url = r.str(*t, "base_url", where, true);
    p.api_key_env = r.str(*t, "api_key_env", where, false);
    if (t->contains("max_tokens_field")) p.max_tokens_field = r.str(*t, "max_tokens_field", where, true);
    p.max_tokens = r.count(*t, "max_tokens", where, p.max_tokens);
    table.providers_[name] = p;
  }
  if (const toml::table* models = r.table(doc, "models", "the top level")) {
    for (auto& [k, v] : *models) {
      std::string name(k.str()), where = "[models.\"" + name + "\"]";
      const toml::table* t = v.as_table();
      if (!t) r.fail(v, where + " must be a table");
      r.only_keys(*t,
                  {"provider", "model", "max_tokens", "reasoning_effort", "thinking_budget", "extra",
                   "input_usd_per_mtok", "output_usd_per_mtok"},
                  where);
      Model m;
      m.name = name;
      std::string provider = r.str(*t, "provider", where, true);
      auto it = table.providers_.find(provider);
      if (it == table.providers_.end()) r.fail(*t->get("provider"), where + ": no [providers." + provider + "]");
      m.provider = it->second;
      m.id = r.str(*t, "model", where, true);
      m.max_tokens = r.count(*t, "max_tokens", where, m.provider.max_tokens);
      m.reasoning_effort = r.str(*t, "reasoning_effort", where, false);
      m.thinking_budget = r.count(*t, "thinking_budget", where, 0);
      for (auto [key, price] : {std::pair{"input_usd_per_mtok", &m.input_price}, {"output_usd_per_mtok", &m.output_price}})
        if (const toml::node* n = t->get(key)) {
          double v = r.real(*n, where + "." + key);
          if (v < 0) r.fail(*n, where + "." + key + " must be a price, >= 0 (USD per million tokens)");
          *price = v;
        }
      if (m.input_price.has_value() != m.output_price.has_value())
        r.fail(*t, where + " gives one price; give both input_usd_per_mtok and output_usd_per_mtok");
      if (const toml::node* extra = t->get("extra")) {
        if (!extra->is_table()) r.fail(*extra, where + ".extra must be a table of request fields");
        m.extra = to_json(*extra);
      }
      if (m.provider.protocol == Protocol::anthropic && !m.reasoning_effort.empty())
        r.fail(*t->get("reasoning_effort"), where + ": anthropic takes thinking_budget, not reasoning_effort");
      if ((m.provider.protocol == Protocol::openai_chat || m.provider.protocol == Protocol::openai_responses) &&
          m.thinking_budget)
        r.fail(*t->get("thinking_budget"), where + ": OpenAI protocols take reasoning_effort, not thinking_budget");
      table.models_[name] = m;
    }
  }
  return table;
}

Model ModelTable::resolve(const std::string& name, const std::string& base_url) const {
  Model m;
  if (auto it = models_.find(name); it != models_.end()) {
    m = it->second;
  } else if (size_t colon = name.find(':'); colon != std::string::npos && colon > 0 && colon + 1 < name.size()) {
    std::string provider = name.substr(0, colon);
    auto p = providers_.find(provider);
    if (p == providers_.end()) {
      std::string list;
      for (auto& [k, v] : providers_) list += (list.empty() ? "" : ", ") + k;
      throw GenError("unknown provider '" + provider + "' in --model " + name + "; " + path_ + " has " + list);
    }
    m.name = name;
    m.provider = p->second;
    m.id = name.substr(colon + 1);
    m.max_tokens = m.provider.max_tokens;
  } else {
    std::string list;
    for (auto& [k, v] : models_) list += (list.empty() ? "" : ", ") + k;
    throw GenError("unknown model '" + name + "'; use one of " + list + " (" + path_ + "), or provider:model-id");
  }
  if (!base_url.empty()) {
    m.provider.base_url = base_url;
  } else if (const char* env = std::getenv(base_url_variable(m.provider.name).c_str()); env && *env) {
    m.provider.base_url = env;
  }
  while (!m.provider.base_url.empty() && m.provider.base_url.back() == '/') m.provider.base_url.pop_back();
  return m;
}

std::optional<double> Model::cost_usd(int64_t tokens_in, int64_t tokens_out) const {
  if (!input_price || !output_price) return std::nullopt;
  return (tokens_in * *input_price + tokens_out * *output_price) / 1e6;
}

bool Model::takes_seed() const {
  return provider.protocol == Protocol::openai_chat || provider.protocol == Protocol::gemini;
}

std::string base_url_variable(const std::string& provider) {
  std::string v = "PKB_";
  for (char c : provider) v += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
  return v + "_BASE_URL";
}

std::string api_key(const Model& m) {
  if (m.provider.api_key_env.empty()) return "";
  const char* key = std::getenv(m.provider.api_key_env.c_str());
  if (!key || !*key)
    throw GenError(m.provider.api_key_env + " is not set; export it with your " + m.provider.name + " API key (model " +
                   m.name + ")");
  return key;
}

std::string model_slug(const std::string& name) {
  std::string s;
  for (char c : name) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
    if (keep)
      s += c;
    else if (s.empty() || s.back() != '_')
      s += '_';
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  return s.empty() ? "model" : s;
}

}  // namespace pkb::gen
