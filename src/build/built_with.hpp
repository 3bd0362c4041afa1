// What CMake found when it configured this build: the toolchain candidates are built
// against, and the libtorch pkb links. Its values live in a file CMake generates
// (src/build/built_with.cpp.in), so a change of them recompiles that file alone: the
// libraries that need no libtorch compile before the torch wheel is installed
// (scripts/build.sh --host-only) and are not compiled again once it is.
#pragma once

namespace pkb::build {

struct BuiltWith {
  const char* torch_root;     // the torch package's folder
  const char* torch_version;  // "2.11.0+cu130"; "" where torch was not located yet
  const char* rpath;          // ':'-separated runtime library folders
  const char* nvcc;           // "" without the CUDA device
  const char* cuda_lib_dir;
  const char* nccl_include;
  const char* nccl_library;
  const char* python;         // the interpreter .py candidates run in ("": none)
};
extern const BuiltWith kBuiltWith;

}  // namespace pkb::build
