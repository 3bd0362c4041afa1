// The interface of libpkb_python.so (src/python/), the layer that runs .py candidates in an
// embedded CPython. eval/candidate.cpp loads it only when a .py candidate runs, so the pkb
// binary itself never needs libpython.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "eval/candidate.hpp"

namespace pkb::heap {
class Heap;
}

namespace pkb::eval {

// What a candidate rank hands the Python layer for a module in the original's format,
// before the sandbox (eval/candidate.cpp fills it).
struct OriginalSetup {
  int rank = 0, world = 1;
  int device = -1;            // CUDA ordinal, -1 on the CPU device
  std::string backend;        // the default process group's: nccl (a GPU per rank) or gloo
  std::string library;        // the module's copy in the build cache
  std::string problem;        // its slug
  std::vector<std::string> args, returns;  // the spec's [original]
  c10::intrusive_ptr<c10d::Store> store;   // over the bootstrap channel (no socket)
  heap::Heap* heap = nullptr;  // symmetric memory comes from what pkb's harness leaves of it
  // A further heap of `bytes` per rank, its regions under store keys `name`/<rank>
  // (collective): where symmetric memory goes once the first heap is full.
  std::function<std::unique_ptr<heap::Heap>(size_t bytes, const std::string& name)> new_heap;
  // eval/output_copy.hpp, passed so the Python layer needs no symbol of pkb's.
  std::string (*copy_results)(const std::vector<at::Tensor>&, std::vector<pkb_tensor>&, int, void*) = nullptr;
  void (*use_stream)(int, void*) = nullptr;
};

}  // namespace pkb::eval

extern "C" {
// In a fork server, before it forks any rank: starts the interpreter and imports pkb's
// package (torch), once for all the ranks it forks. False with `error` set when it cannot.
typedef bool (*pkb_python_preload_fn)(std::string* error);
// In each child the server forks, once it has the rank's environment `envp`: the
// interpreter's own after-fork work, and os.environ made the rank's (it was the server's).
typedef void (*pkb_python_after_fork_child_fn)(char** envp);
// Before the sandbox: starts the interpreter, imports torch (and Triton when `cuda`), and
// adds what the sandbox must grant to `needs`. False with `error` set when it cannot.
typedef bool (*pkb_python_prepare_fn)(bool cuda, pkb::eval::LoadNeeds* needs, std::string* error);
// Inside the sandbox: imports the candidate module at `path`. Null with `error` set (the
// traceback included) when the import fails or pkb_run is missing.
typedef pkb::eval::Candidate* (*pkb_python_load_fn)(const char* path, std::string* error);
// Before the sandbox, after pkb_python_prepare, for a module in the original's format: the
// default torch.distributed process group over the candidate ranks (every connection made
// now), pkb's torch.distributed._symmetric_memory and utils.cuda_helpers in place of
// torch's and the original's; adds what the sandbox must grant (the extensions' folders).
typedef bool (*pkb_python_prepare_original_fn)(const pkb::eval::OriginalSetup* setup, pkb::eval::LoadNeeds* needs,
                                               std::string* error);
// Inside the sandbox: imports the module (null with `error` set when the import fails or
// `solution` is missing).
typedef pkb::eval::Candidate* (*pkb_python_load_original_fn)(const char* path, std::string* error);
}
