// A candidate in a rank: its shared object, checked against the solution ABI, and the
// pkb_ctx it is handed (include/pkb/solution.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "launch/fork_server.hpp"
#include "pkb/solution.h"
#include "spec/spec.hpp"

namespace pkb::heap {
class Heap;
}
namespace pkb::launch {
class Client;
}
namespace pkb::rank {
struct Rank;
}

namespace pkb::eval {

// A candidate loaded into a rank, whatever its language: pkb calls it through the pkb_ctx
// and pkb_tensor arrays of the C ABI. A .cu or .cpp candidate is a shared object
// (NativeCandidate); a .py candidate runs in an embedded Python (src/python/).
class Candidate {
 public:
  virtual ~Candidate() = default;
  virtual int init(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, const std::vector<pkb_tensor>& out) = 0;
  virtual int run(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) = 0;
  virtual void finalize(pkb_ctx* ctx) = 0;
  // What a non-zero return of `entry` (pkb_init, pkb_run) means: "pkb_run returned 3", or
  // "pkb_run raised an exception" for Python.
  virtual std::string returned(const char* entry, int rc) const {
    return std::string(entry) + " returned " + std::to_string(rc);
  }
  // Whether the candidate hands back tensors of its own, which pkb copies into its output
  // buffers inside the call (an original-format module's `solution`; eval/output_copy.hpp):
  // charged to it, and alike to the reference it is timed beside.
  virtual bool copies_outputs() const { return false; }
  // The host time (us) pkb spent inside the last run on that copy; 0 where there is none.
  virtual double adapter_us() const { return 0; }
};

// The shared object of a .cu or .cpp candidate, checked against the solution ABI.
class NativeCandidate : public Candidate {
 public:
  // Loads the library. Throws rank::RankError(rank::ErrorKind::abi, ...) when an entry point is missing
  // or the ABI version differs.
  explicit NativeCandidate(const std::string& library);
  NativeCandidate(const NativeCandidate&) = delete;
  NativeCandidate& operator=(const NativeCandidate&) = delete;

  int init(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, const std::vector<pkb_tensor>& out) override;
  int run(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) override;
  void finalize(pkb_ctx* ctx) override;

 private:
  void* handle_ = nullptr;
  pkb_init_fn init_ = nullptr;
  pkb_run_fn run_ = nullptr;
  pkb_finalize_fn finalize_ = nullptr;
};

// What the sandbox must grant a candidate that is about to be loaded, and whether its
// runtime starts programs of its own (Triton runs ptxas and a C compiler).
struct LoadNeeds {
  std::vector<std::string> read, write;
  std::vector<std::string> exec;  // the only programs it may run (processes == true)
  bool processes = false;
};

// Before the sandbox: gets what loading `library` needs ready (for a .py candidate, the
// embedded interpreter with torch, and Triton on CUDA) and says what the sandbox must grant.
// Throws rank::RankError(rank::ErrorKind::abi, ...) when this pkb cannot run that kind of candidate.
LoadNeeds prepare_candidate(const std::string& library, bool cuda);
// In the fork server of a .py candidate's ranks (launch/fork_server.hpp), before any fork:
// the interpreter started and torch imported once for all of them, with CPython's before-
// and after-fork calls as the hooks (empty where the interpreter did not start). A rank
// that finds the interpreter or the import failed tries again and reports what failed.
launch::ForkHooks preload_python();
// The same on a candidate rank of pkb eval; for a module in the original's format
// (is_original) also its torch.distributed process group over the rank's bootstrap channel,
// symmetric memory in the rank's heap and its prebuilt extensions (python_plugin.hpp).
LoadNeeds prepare_candidate(const std::string& library, rank::Rank& r);

// Whether the build step left `library` marked as a module in the original's format.
bool is_original(const std::string& library);

// Inside the sandbox: loads the candidate (a .py module is imported here).
std::unique_ptr<Candidate> load_candidate(const std::string& library);

// The pkb_ctx of one rank, with the state its callbacks need.
class CandidateCtx {
 public:
  CandidateCtx(heap::Heap& heap, launch::Client& client, int device, void* stream, void* nccl,
               const spec::ProblemSpec& spec, const spec::Vars& vars);
  pkb_ctx* get() { return &ctx_; }
  // After pkb_init: symm_alloc and host_barrier refuse from now on.
  void end_init() { in_init_ = false; }
  std::string take_error();

 private:
  static void* symm_alloc(pkb_ctx* c, size_t bytes);
  static void* peer_ptr(pkb_ctx* c, const void* local, int peer);
  static void host_barrier(pkb_ctx* c);
  static int64_t arg_int(pkb_ctx* c, const char* name, int* found);
  static double arg_float(pkb_ctx* c, const char* name, int* found);
  static void set_error(pkb_ctx* c, const char* message);
  static CandidateCtx& self(pkb_ctx* c) { return *static_cast<CandidateCtx*>(c->internal); }
  const pkb_arg* find(const char* name) const;

  pkb_ctx ctx_{};
  heap::Heap& heap_;
  launch::Client& client_;
  bool in_init_ = true;
  std::string error_;
  std::vector<pkb_arg> args_;
  std::vector<std::unique_ptr<std::string>> strings_;
  std::vector<std::unique_ptr<std::vector<int64_t>>> lists_;
};

// A pkb_tensor describing `t`, which lives in the symmetric heap when `symmetric`.
pkb_tensor describe(const spec::TensorSpec& s, const at::Tensor& t, bool symmetric);
// The same for a shape and dtype with no data (what pkb_init sees).
pkb_tensor describe_shape(const spec::TensorSpec& s, const std::vector<int64_t>& shape, at::ScalarType type);

}  // namespace pkb::eval
