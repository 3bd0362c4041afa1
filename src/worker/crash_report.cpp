#include "worker/crash_report.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

namespace pkb::worker {

namespace {

constexpr int kFrames = 14;  // the parent keeps a rank's last 20 lines

void on_fault(int sig, siginfo_t* info, void*) {
  char line[512];
  int n = snprintf(line, sizeof line, "pkb rank: %s at address %p; frames:\n", strsignal(sig), info->si_addr);
  (void)!write(2, line, n);
  void* frames[kFrames + 2];
  int got = backtrace(frames, kFrames + 2);
  for (int k = 2; k < got; ++k) {  // 0 and 1: this handler and the signal trampoline
    Dl_info where{};
    const char* lib = "?";
    const char* sym = nullptr;
    uintptr_t offset = 0, sym_offset = 0;
    if (dladdr(frames[k], &where)) {
      if (where.dli_fname) lib = strrchr(where.dli_fname, '/') ? strrchr(where.dli_fname, '/') + 1 : where.dli_fname;
      offset = reinterpret_cast<uintptr_t>(frames[k]) - reinterpret_cast<uintptr_t>(where.dli_fbase);
      if (where.dli_sname) {
        sym = where.dli_sname;
        sym_offset = reinterpret_cast<uintptr_t>(frames[k]) - reinterpret_cast<uintptr_t>(where.dli_saddr);
      }
    }
    n = sym ? snprintf(line, sizeof line, "  #%d %s+0x%zx %.300s+0x%zx\n", k - 2, lib, size_t(offset), sym, size_t(sym_offset))
            : snprintf(line, sizeof line, "  #%d %s+0x%zx\n", k - 2, lib, size_t(offset));
    (void)!write(2, line, n);
  }
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
