// What a rank process's environment holds. Candidates are model-written code, often run
// from a shell that holds API keys: ranks start from an allow-list (what CUDA, NCCL, gloo,
// libtorch, Python and pkb itself read), never from everything the parent has, and no
// variable whose name says it holds a secret gets through unless the user passes it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pkb::launch {

struct EnvPolicy {
  bool isolate = true;            // false (--no-sandbox): the parent's environment, whole
  std::vector<std::string> pass;  // --pass-env NAME: kept on purpose, secret or not
  std::vector<std::string> deny;  // names that always go (models.toml's key variables)
  // HOME, TMPDIR and PKB_SCRATCH (what the sandbox lets a rank write) point here, and
  // TRITON_CACHE_DIR inside it ("": left as they are).
  std::string scratch;
};

// *KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL* (any case), and the
// standard credentials-file variables (AWS_SHARED_CREDENTIALS_FILE, GOOGLE_APPLICATION_...).
bool is_secret_name(const std::string& name);

// "KEY=VALUE" entries: `parent` (the same form) filtered by `policy`, then `set` on top
// (pkb's own variables, always kept).
std::vector<std::string> rank_environment(const std::vector<std::string>& parent, const EnvPolicy& policy,
                                          const std::vector<std::pair<std::string, std::string>>& set);

// The environment of this process in that form.
std::vector<std::string> current_environment();

}  // namespace pkb::launch
