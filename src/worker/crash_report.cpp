#include "worker/crash_report.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace pkb::worker {

namespace {

constexpr int kFrames = 12;  // the parent keeps a rank's last 20 lines

// One line: `lib+0xoffset symbol+0xoffset` for a code address; false where none holds it.
bool describe(const char* label, int k, void* pc) {
  Dl_info where{};
  if (!dladdr(pc, &where) || !where.dli_fname) return false;
  const char* lib = strrchr(where.dli_fname, '/') ? strrchr(where.dli_fname, '/') + 1 : where.dli_fname;
  size_t offset = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(where.dli_fbase);
  char line[512];
  int n = where.dli_sname ? snprintf(line, sizeof line, "  %s%d %s+0x%zx %.300s+0x%zx\n", label, k, lib, offset,
                                     where.dli_sname,
                                     size_t(reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(where.dli_saddr)))
                          : snprintf(line, sizeof line, "  %s%d %s+0x%zx\n", label, k, lib, offset);
  (void)!write(2, line, n);
  return true;
}

void on_fault(int sig, siginfo_t* info, void* uc) {
  char line[256];
  int n = snprintf(line, sizeof line, "pkb rank: %s at address %p; frames:\n", strsignal(sig), info->si_addr);
  (void)!write(2, line, n);
  void* frames[kFrames + 2];
  int got = backtrace(frames, kFrames + 2), shown = 0;
  for (int k = 2; k < got; ++k) shown += describe("#", k - 2, frames[k]);  // 0, 1: this handler, the trampoline
#if defined(__x86_64__)
  // A jump to an address outside any object (a bad function pointer) stops the unwinder at
  // once: then the code addresses on the stack, the caller's among them.
  if (shown < 2) {
    auto** sp = reinterpret_cast<void**>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RSP]);
    for (int k = 0, found = 0; k < 256 && found < kFrames; ++k) found += describe("stack word ", k, sp[k]);
  }
#else
  (void)uc;
#endif
  signal(sig, SIG_DFL);
  raise(sig);  // a fault raised by hand would otherwise carry on; a real one dies re-running the instruction
}

}  // namespace

void report_fatal_signals() {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc now: not inside a handler
  static char stack[64 << 10];  // a stack overflow's handler needs a stack of its own
  stack_t alt{};
  alt.ss_sp = stack;
  alt.ss_size = sizeof stack;
  sigaltstack(&alt, nullptr);
  struct sigaction sa{};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(sig, &sa, nullptr);
}

}  // namespace pkb::worker
