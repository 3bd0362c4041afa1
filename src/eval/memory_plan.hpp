// How much device memory an evaluation takes on each GPU, before any rank starts: a
// candidate rank's (its symmetric heap: the harness, one set of inputs and outputs, then the
// candidate's own heap; the reference's working memory where it is timed there) and a judge
// rank's (the reference's peak: its inputs, outputs and working memory; the captures of the
// candidate's outputs), each with its process's runtime; ranks sharing a GPU add up. pkb sizes its own buffers to fit (fewer captures,
// then a smaller default candidate heap, down to 256 MiB) and refuses, in
// one line with the numbers, a problem that cannot fit at all. On the CPU device the same
// arithmetic runs against the host's memory. Torch-free; tested on made-up numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace pkb::eval {

struct MemoryRequest {
  const spec::ProblemSpec* spec = nullptr;
  std::string size = "default", dtype;  // dtype: what "dt" stands for
  int world = 1, ranks_per_gpu = 1;
  bool cuda = true;
  bool timing = true;
  bool nccl = false;                   // the ranks make NCCL communicators (a GPU each, W > 1)
  uint64_t memory = 0;                 // of one GPU (or the host's available memory)
  int iters = 100;                     // timed calls: the captures wanted
  int min_captures = 20;
  uint64_t capture_budget = 0;         // the most bytes of captures a judge rank may take
  uint64_t candidate_heap = 0;         // asked for (--heap-size); 0: pkb's default, which may shrink
  // The reference's working memory on the busiest rank (its peak, inputs and outputs
  // included), where known; 0: the spec's declaration, else an estimate.
  uint64_t reference_peak = 0;
  std::string reference_peak_source;   // where reference_peak comes from ("" when 0)
};

struct MemoryPart {
  std::string name;
  uint64_t bytes = 0;
};

struct MemoryPlan {
  std::vector<MemoryPart> candidate, judge;  // one rank of each kind (the busiest)
  uint64_t candidate_rank = 0, judge_rank = 0;
  uint64_t per_gpu = 0;       // the most in use on one GPU at any time
  uint64_t memory = 0;        // what the GPU has
  int captures = 0;           // timed calls whose outputs are captured
  bool judge_paces = false;   // the judges time the reference in the rounds too (fits twice)
  uint64_t candidate_heap = 0;  // the candidate's own heap, as pkb will make it
  std::string reference_source;  // given, declared or estimated
  bool fits = true;
  std::vector<std::string> notes;  // what pkb shrank to fit
  std::string refusal;             // one line, when it does not fit

  std::string table() const;  // the parts, for --dry-plan
};

// Bytes pkb counts for one rank's process runtime (a CUDA context, cuBLAS and the
// allocator's slack), and for one NCCL communicator's buffers.
inline constexpr uint64_t kRankRuntime = uint64_t{768} << 20, kNcclBuffers = uint64_t{512} << 20;
inline constexpr uint64_t kMinCandidateHeap = uint64_t{256} << 20;
// Timed calls checked at least, even where memory holds fewer than the usual floor (20).
inline constexpr int kLeastCaptures = 5;

MemoryPlan plan_memory(const MemoryRequest& r);

// "1.5 GiB".
std::string gib(uint64_t bytes);

}  // namespace pkb::eval
