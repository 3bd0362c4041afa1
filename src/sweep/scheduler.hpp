// Packing a sweep's evaluations onto a node (`pkb sweep --parallel`): several at once, each
// on a set of GPUs of its own (one a rank, never a GPU shared by two evaluations), largest W
// first. Pure: no processes, no clocks. The runner asks what to start whenever something
// has ended, and says what ended; the tests drive it over made-up nodes.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pkb::sweep {

// One evaluation waiting to start.
struct Waiting {
  size_t id = 0;      // the caller's
  int world = 1;      // its ranks; on GPUs it takes min(world, the node's GPUs), one a rank
};

// An evaluation to start now, on `gpus` (the node's GPU indices, ascending; empty on the
// CPU device, where an evaluation takes one of the slots instead).
struct Assignment {
  size_t id = 0;
  std::vector<int> gpus;
};

class Packer {
 public:
  // `gpus`: the node's GPUs evaluations may take (indices among the visible ones); none for
  // the CPU device. `most_at_once`: how many evaluations may run together (at least 1).
  Packer(std::vector<int> gpus, int most_at_once);

  // What to start now, taken from `waiting` in its order, which is the order they should
  // start in. Rules, each for a reason:
  // - at most `most_at_once` run; on GPUs each takes GPUs no running evaluation holds;
  // - one that does not fit the free GPUs stops the walk: nothing behind it starts before it
  //   does, so a W=8 evaluation is not starved by W=1 ones refilling the GPUs it waits for.
  std::vector<Assignment> assign(const std::vector<Waiting>& waiting);

  // Evaluation `id` (started by assign) has ended: its GPUs are free.
  void finished(size_t id);

  size_t running() const { return running_.size(); }
  std::vector<int> free_gpus() const { return {free_.begin(), free_.end()}; }

 private:
  bool cpu_;
  size_t most_at_once_, node_gpus_;
  std::set<int> free_;
  std::map<size_t, Assignment> running_;
};

// The order in which evaluations start when several run at once: largest W first (they need
// the most GPUs free together, so they go while the node is empty), the grid's order among
// equals.
std::vector<Waiting> largest_first(std::vector<Waiting> waiting);

// How many evaluations run at once for `--parallel` (`setting`: a count of at least 1, or
// "auto"). auto: on the CUDA device (`gpus` > 0) one per GPU, the packing deciding how many
// fit; on the CPU device the cores over the largest W, at least 1 (each evaluation keeps W
// ranks busy). Throws std::invalid_argument naming the fix.
int evaluations_at_once(const std::string& setting, int gpus, int cores, int largest_world);

// The node's visible GPUs as a child's CUDA_VISIBLE_DEVICES names them: the entries of this
// process's own CUDA_VISIBLE_DEVICES (`visible`, null when unset) for the `gpus` the probe
// saw (index i is its i-th entry: an id, a UUID or a MIG name), else "0".."gpus-1".
std::vector<std::string> visible_gpu_names(const char* visible, int gpus);

}  // namespace pkb::sweep
