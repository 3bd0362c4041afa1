// BAD CANDIDATE for tp_gemm_allgather (CUDA device), a pkb test.
// Expected verdict: integrity_violation
//
// What is wrong: it computes honestly (the example candidate, included below) but forges the
// clock of its own process. pkb_init walks the writable segments of every loaded object
// (dl_iterate_phdr), finds every stored pointer to the driver's cuEventElapsedTime (the
// CUDA runtime keeps its table of driver entry points there) and replaces it with one that
// halves any interval shorter than 5 ms: single calls at the default size and at large,
// not the escape check's batches at large. When pkb timed calls with events in the
// candidate's process, such a forger was `correct` at 2.48x where the honest GEMM gets 1.3x. pkb's judge times the calls with
// events on its own stream, in its own process; the rank's forged reading disagrees with
// it (timing_report).
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define pkb_init honest_pkb_init
#include "../../../solutions_cuda/tp_gemm_allgather.cu"
#undef pkb_init

namespace {

using ElapsedFn = CUresult (*)(float*, CUevent, CUevent);
ElapsedFn real_elapsed[2] = {nullptr, nullptr};

CUresult forged_elapsed(float* ms, CUevent start, CUevent end) {
  CUresult r = real_elapsed[0](ms, start, end);
  if (r == CUDA_SUCCESS && *ms < 5.f) *ms *= 0.5f;
  return r;
}

CUresult forged_elapsed_v2(float* ms, CUevent start, CUevent end) {
  CUresult r = real_elapsed[1](ms, start, end);
  if (r == CUDA_SUCCESS && *ms < 5.f) *ms *= 0.5f;
  return r;
}

int patched = 0;

// Writes `value` into `word`, making its page writable first (it may lie in RELRO).
void overwrite(void** word, void* value) {
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t start = reinterpret_cast<uintptr_t>(word) & ~static_cast<uintptr_t>(page - 1);
  mprotect(reinterpret_cast<void*>(start), page, PROT_READ | PROT_WRITE);
  *word = value;
  ++patched;
}

int patch_object(struct dl_phdr_info* info, size_t, void*) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W)) continue;
    void** word = reinterpret_cast<void**>(info->dlpi_addr + ph.p_vaddr);
    size_t n = ph.p_memsz / sizeof(void*);
    for (size_t k = 0; k < n; ++k) {
      // Not its own copies of the real entry points, which the forged ones call.
      if (&word[k] == reinterpret_cast<void**>(&real_elapsed[0]) || &word[k] == reinterpret_cast<void**>(&real_elapsed[1]))
        continue;
      if (real_elapsed[0] && word[k] == reinterpret_cast<void*>(real_elapsed[0]))
        overwrite(&word[k], reinterpret_cast<void*>(&forged_elapsed));
      else if (real_elapsed[1] && word[k] == reinterpret_cast<void*>(real_elapsed[1]))
        overwrite(&word[k], reinterpret_cast<void*>(&forged_elapsed_v2));
    }
  }
  return 0;
}

}  // namespace

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int n_in, const pkb_tensor* out, int n_out) {
  int rc = honest_pkb_init(ctx, in, n_in, out, n_out);
  if (rc != 0) return rc;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda) {
    real_elapsed[0] = reinterpret_cast<ElapsedFn>(dlsym(cuda, "cuEventElapsedTime"));
    real_elapsed[1] = reinterpret_cast<ElapsedFn>(dlsym(cuda, "cuEventElapsedTime_v2"));
  }
  dl_iterate_phdr(patch_object, nullptr);
  fprintf(stderr, "forge_event_timer: %d pointers to cuEventElapsedTime replaced\n", patched);
  return 0;
}
