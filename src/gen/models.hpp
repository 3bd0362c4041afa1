// The models table (models.toml): providers (where requests go, which wire protocol, which
// environment variable holds the key) and models (a provider, its model id, token and
// reasoning settings). --model takes a table key or "provider:model-id".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkb::gen {

enum class Protocol { openai_chat, openai_responses, anthropic, gemini };

const char* protocol_name(Protocol p);

struct Provider {
  std::string name;
  Protocol protocol = Protocol::openai_chat;
  std::string base_url;                         // up to the version: https://api.openai.com/v1
  std::string api_key_env;                      // "" for servers that need no key
  std::string max_tokens_field = "max_tokens";  // OpenAI's own API wants max_completion_tokens
  int64_t max_tokens = 32768;                   // for models that do not say
};

struct Model {
  std::string name;  // as given to --model
  Provider provider;
  std::string id;                // the provider's name for the model
  int64_t max_tokens = 0;        // output tokens, reasoning included
  std::string reasoning_effort;  // OpenAI reasoning effort; Gemini thinking level
  int64_t thinking_budget = 0;   // Anthropic and Gemini thinking tokens (0: off / default)
  // Merged into every request body (RFC 7386: null removes a field).
  nlohmann::json extra = nlohmann::json::object();
  // Sampling, unset: the provider's defaults (pkb generate --temperature, --top-p, --seed).
  std::optional<double> temperature, top_p;
  std::optional<int64_t> seed;  // OpenAI chat and Gemini take one; the others have none
  // USD per million tokens (input_usd_per_mtok, output_usd_per_mtok); unset: no cost is told.
  std::optional<double> input_price, output_price;
  // The cost of a request's tokens, when the model has prices.
  std::optional<double> cost_usd(int64_t tokens_in, int64_t tokens_out) const;
  // Whether the protocol takes a sampling seed.
  bool takes_seed() const;
};

class ModelTable {
 public:
  // Throws GenError naming the file and line.
  static ModelTable load(const std::string& path);

  // A table key, else "provider:model-id". The base URL comes from `base_url` when given,
  // else $PKB_<PROVIDER>_BASE_URL, else the table. Throws GenError.
  Model resolve(const std::string& name, const std::string& base_url = "") const;

  // The environment variables that hold the providers' keys (they never reach a rank).
  std::vector<std::string> key_variables() const;

 private:
  std::string path_;
  std::map<std::string, Provider> providers_;
  std::map<std::string, Model> models_;
};

// PKB_OPENAI_BASE_URL for "openai", PKB_OPENAI_RESPONSES_BASE_URL for "openai-responses".
std::string base_url_variable(const std::string& provider);

// The key from the model's variable ("" when it needs none). Throws GenError naming the
// variable when it is unset; the key itself never appears in any message.
std::string api_key(const Model& m);

// The model's name made safe for a folder name.
std::string model_slug(const std::string& name);

}  // namespace pkb::gen
