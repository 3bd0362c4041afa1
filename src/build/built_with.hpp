// What CMake found when it configured this build: the toolchain candidates are built
// against, and the libtorch pkb links. Its values live in a file CMake generates
// (src/build/built_with.cpp.in), so a change of them recompiles that file alone.
#pragma once

namespace pkb::build {

struct BuiltWith {
  const char* torch_root;     // the torch package's folder
  const char* torch_version;  // "2.11.0+cu130"; as its version.py says
  const char* rpath;          // ':'-separated runtime library folders
  const char* nvcc;           // "" without the CUDA device
  const char* cuda_lib_dir;
  const char* nccl_include;
  const char* nccl_library;
  const char* python;         // the interpreter .py candidates run in ("": none)
};
extern const BuiltWith kBuiltWith;

}  // namespace pkb::build
