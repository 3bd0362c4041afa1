// Candidates: one source file in, one shared object out. The compiler and flags follow
// the file's kind (.cu: nvcc for the CUDA device; .cu including kittens.cuh: nvcc with
// ThunderKittens' flags; .cpp: the host compiler for the CPU device; .py: a syntax check,
// and the module copied, since the rank imports it; a .py module in the original
// ParallelKernelBench's format: its inline extensions built too, below); results are cached
// by a hash of the source, the flags, the compiler's version and the ABI, so a cached build
// costs nothing.
#pragma once

#include <string>
#include <vector>

#include "eval/original_format.hpp"
#include "launch/kinds.hpp"

namespace pkb::build {

// Where pkb's own build found things; candidates are built against the same.
struct Toolchain {
  std::string root;         // holds include/pkb
  std::string nvcc;         // "" without the CUDA device
  std::string cuda_lib_dir;
  std::string nccl_include, nccl_library;
  std::string torch_root;   // for candidates that include pkb/torch_bridge.hpp
  std::string rpath;        // ':'-separated runtime library folders
  std::string python;       // the interpreter .py candidates run in ("": pkb cannot run them)
  static Toolchain from_build(const std::string& root);
};

// The kinds of candidate (results spell them cuda, cpu, triton, tk, original). `original`:
// a .py module in the original ParallelKernelBench's format, `solution(*inputs)` over
// torch.distributed (docs/migrating.md), whatever its backend there.
enum class Backend { none, cuda, cpu, triton, tk, original };
const char* name(Backend b);

// What a .py file is taken for: by its content (automatic: `solution` and no `pkb_run` at
// module level is the original's format), or as the user forces it (--candidate-format).
enum class Format { automatic, pkb, original };
// The process-wide choice, set once from the command line; build() and backend_of() use it.
void force_format(Format f);
Format forced_format();

struct Request {
  std::string source;
  launch::Device device = launch::Device::cpu;
  std::string arch = "sm_90a"; // CUDA target (from the probed GPU)
  std::string cache_dir;       // default_cache_dir() + "/build" when empty
  std::string tk_dir;          // ThunderKittens checkout (else $PKB_TK_DIR)
};

struct Result {
  bool ok = false;
  Backend backend = Backend::none;
  std::string library;       // the shared object (a .py candidate: its module)
  std::string source_sha256;
  std::string key;           // the cache key
  bool cached = false;
  double seconds = 0;
  std::string compiler;      // its version line
  std::string error;         // one line when !ok
  std::string log;           // the compiler's output when it failed
};

// Beside a .py candidate's copy in the cache: the user's file, absolute, on one line. The
// rank compiles the copy under that name, so tracebacks and Triton name the user's file.
inline constexpr const char* kSourcePathFile = "source_path";
// Beside an original-format candidate's copy: eval::kFormatFile and eval::kExtensionsFile.

// The kind of candidate a file is, by extension and content (none: not a candidate file).
Backend backend_of(const std::string& source);
// Whether Python source binds `solution` at module level and not `pkb_run`.
bool is_original_format(const std::string& text);

Result build(const Request& req, const Toolchain& tc);

// $PKB_CACHE_DIR, else $XDG_CACHE_HOME/pkb, else ~/.cache/pkb.
std::string default_cache_dir();

// The CUDA target for a compute capability: sm_90a on Hopper, sm_100a on Blackwell.
std::string arch_for(int major, int minor);

}  // namespace pkb::build
