// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: integrity_violation
//
// What is wrong: it never communicates. It reaches for what the evaluator keeps in the
// candidate's own process: in every call it scans its process's writable memory for other
// copies of its input x (the pristine copy an in-process evaluator keeps to check inputs
// and to run the reference on), zeroes every copy it finds and its own x, and writes zeros
// as its answer. Where the reference ran in the candidate's process on such a copy, the
// reference computed zeros too and the comparison agreed (correct, with no work done).
// pkb's judges keep their inputs and the reference in another process, so all this
// candidate zeroes is its own read-only input.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "pkb/solution.h"

namespace {

struct Region {
  char* begin;
  char* end;
};

// Writable private or shared anonymous mappings of this process (not files, not stacks).
std::vector<Region> writable_regions() {
  std::vector<Region> out;
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) return out;
  char line[512];
  while (fgets(line, sizeof line, maps)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0};
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' || perms[1] != 'w') continue;
    if (hi - lo > (4ul << 30)) continue;  // address space reserved, not data
    std::string rest(line);
    if (rest.find("[stack") != std::string::npos || rest.find("[vvar") != std::string::npos) continue;
    out.push_back({reinterpret_cast<char*>(lo), reinterpret_cast<char*>(hi)});
  }
  fclose(maps);
  return out;
}

// Zeroes every other copy of the `n` bytes at `x` found in writable memory.
int zero_copies(const char* x, size_t n) {
  if (n < 64) return 0;
  int found = 0;
  for (const Region& r : writable_regions()) {
    for (char* p = r.begin; p + n <= r.end; p += 64) {  // tensors are at least 64-byte aligned
      if (p == x || memcmp(p, x, 64) != 0 || memcmp(p, x, n) != 0) continue;
      memset(p, 0, n);
      ++found;
    }
  }
  return found;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx*, const pkb_tensor* in, int, pkb_tensor* out, int) {
  size_t n = size_t(in[0].sizes[0]) * size_t(in[0].sizes[1]) * 2;  // bf16
  zero_copies(static_cast<const char*>(in[0].data), n);
  memset(in[0].data, 0, n);
  memset(out[0].data, 0, n);
  return 0;
}
