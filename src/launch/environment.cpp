#include "launch/environment.hpp"

#include <algorithm>
#include <cctype>
#include <map>

extern char** environ;

namespace pkb::launch {

namespace {

// Names a rank may inherit: exact names, and prefixes ending in '_'.
const char* const kAllowed[] = {
    "PATH", "LD_LIBRARY_PATH", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME", "PYTHONPATH", "PYTHONHOME",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CC", "CXX", "LC_", "CUDA_", "NCCL_", "NVIDIA_", "NVSHMEM_", "GLOO_", "TORCH_",
    "PYTORCH_", "TRITON_", "OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "PKB_", "CUBLAS_", "CUDNN_", "UCX_"};

bool allowed(const std::string& name) {
  for (const char* a : kAllowed) {
    std::string p(a);
    if (p.back() == '_' ? name.rfind(p, 0) == 0 : name == p) return true;
  }
  return false;
}

}  // namespace

bool is_secret_name(const std::string& name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"})
    if (up.find(word) != std::string::npos) return true;
  return up == "AWS_SHARED_CREDENTIALS_FILE" || up == "GOOGLE_APPLICATION_CREDENTIALS" || up == "NETRC";
}

std::vector<std::string> rank_environment(const std::vector<std::string>& parent, const EnvPolicy& policy,
                                          const std::vector<std::pair<std::string, std::string>>& set) {
  std::map<std::string, std::string> vars;
  for (auto& kv : parent) {
    size_t eq = kv.find('=');
    std::string name = kv.substr(0, eq);
    if (name.empty()) continue;
    bool passed = std::find(policy.pass.begin(), policy.pass.end(), name) != policy.pass.end();
    bool denied = std::find(policy.deny.begin(), policy.deny.end(), name) != policy.deny.end();
    if (policy.isolate && !passed && (denied || is_secret_name(name) || !allowed(name))) continue;
    vars[name] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  if (!policy.scratch.empty()) {
    for (const char* v : {"HOME", "TMPDIR", "PKB_SCRATCH"}) vars[v] = policy.scratch;
    // Triton's kernel cache too, unless pkb names one in `set` (a folder per candidate):
    // never the user's, which every candidate would share.
    vars["TRITON_CACHE_DIR"] = policy.scratch + "/triton-cache";
  }
  for (auto& [k, v] : set) vars[k] = v;
  std::vector<std::string> out;
  for (auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace pkb::launch
