// References that fail on purpose, for the runtime's fault tests: the last rank crashes,
// aborts, exits, hangs, skips a collective or changes its read-only input while the others
// carry on.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "pkb/reference.hpp"

namespace {

bool culprit(pkb::Ctx& ctx) { return ctx.rank() == ctx.world() - 1; }

template <class Fault>
struct Faulty : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor y = in["x"].clone();
    if (culprit(ctx) && ctx.trial() == 1) {
      if (Fault::skip_collective()) return out.set({y});
      Fault::fail();
    }
    ctx.comm().all_reduce(y);
    out.set({y});
  }
};

struct Segv {
  static bool skip_collective() { return false; }
  static void fail() { std::raise(SIGSEGV); }
};
struct Abort {
  static bool skip_collective() { return false; }
  static void fail() { std::abort(); }
};
struct Exit {
  static bool skip_collective() { return false; }
  static void fail() {
    fprintf(stderr, "fault: exiting with code 3\n");
    std::exit(3);
  }
};
struct Throw {
  static bool skip_collective() { return false; }
  static void fail() { throw std::runtime_error("fault: simulated device error"); }
};
struct None {  // the healthy neighbour of a faulty problem in one start of the ranks
  static bool skip_collective() { return false; }
  static void fail() {}
};
struct Skip {
  static bool skip_collective() { return true; }
  static void fail() {}
};

// Adds to its read-only input in trial 1 (a bug in a reference that dryrun must name).
struct MutateInput : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor y = in["x"].clone();
    if (culprit(ctx) && ctx.trial() == 1) in["x"].add_(1);
    ctx.comm().all_reduce(y);
    out.set({y});
  }
};

struct HangInit : pkb::Reference {
  void setup(pkb::Ctx& ctx) override {
    if (culprit(ctx))
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  void run(pkb::Ctx&, const pkb::Inputs& in, pkb::Outputs& out) override { out.set({in["x"].clone()}); }
};

}  // namespace

PKB_REFERENCE("test_fault_none", Faulty<None>);
PKB_REFERENCE("test_fault_segv", Faulty<Segv>);
PKB_REFERENCE("test_fault_abort", Faulty<Abort>);
PKB_REFERENCE("test_fault_exit", Faulty<Exit>);
PKB_REFERENCE("test_fault_throw", Faulty<Throw>);
PKB_REFERENCE("test_fault_skip_collective", Faulty<Skip>);
PKB_REFERENCE("test_fault_hang_init", HangInit);
PKB_REFERENCE("test_fault_mutate_input", MutateInput);
