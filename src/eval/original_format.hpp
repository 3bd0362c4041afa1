// Candidates in the original ParallelKernelBench's format: a .py module defining
// solution(*inputs), run on every rank under a torch.distributed process group, with its
// CUDA built inline through utils.cuda_helpers.compile_cuda_extension (docs/migrating.md).
// What the build step leaves beside such a module's copy in the cache, read by the rank.
// Torch-free: the builder (build/) writes these files, the rank (eval/) reads them.
#pragma once

namespace pkb::eval {

// The word "original": the module is one of these (the kind, without parsing it again).
inline constexpr const char* kFormatFile = "format";
// The extensions built for it before the run: {"extensions": {"<key of a call's
// arguments>": {"name", "path", "line"}}, "unresolved": [{"line", "why"}]}
// (python/pkb/original/build.py writes it; pkb's utils.cuda_helpers reads it in the rank).
inline constexpr const char* kExtensionsFile = "extensions.json";

}  // namespace pkb::eval
