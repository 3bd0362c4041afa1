#include "run/ranks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "eval/protocol.hpp"
#include "eval/verdict.hpp"
#include "launch/phases.hpp"
#include "launch/subprocess.hpp"

namespace pkb::run {

namespace {

// One line on stderr, refreshed in place on a terminal: the phase a run is in and its
// counts (the reference's calls alone, the trials, both sides' timed calls), of the problem
// at hand where the ranks run several.
class ProgressLine {
 public:
  ProgressLine(const std::string& label, const rank::Job& job, int world, bool judged)
      : label_(label), job_(job), judge0_(judged ? 0 : -1), watched_(judged ? world : 0) {}

  void on_phase(int r, const std::string& ph, int n, const std::string& problem) {
    namespace p = launch::phase;
    std::string what;
    if (r == judge0_ && ph == p::kReferenceTiming) what = counted("reference alone: calls", n, job_.baseline_iters);
    else if (r == judge0_ && ph == p::kTimedCall) what = counted("timed calls of both sides", n, 2 * job_.iters);
    else if (r == watched_ && ph == p::kTrial) what = counted("trial", n, job_.trials);
    else if (r == watched_ && ph != p::kSync && ph != p::kAwaitJudge && ph != p::kTrial) what = ph;
    if (what.empty() || what == shown_) return;
    shown_ = what;
    fprintf(stderr, "\r\033[K%s%s  %s", label_.c_str(), problem.empty() ? "" : ("  " + problem).c_str(), what.c_str());
  }

 private:
  static std::string counted(const char* what, int n, int of) {
    return std::string(what) + " " + std::to_string(std::max(n, 0) + 1) + "/" + std::to_string(of);
  }
  std::string label_, shown_;
  const rank::Job& job_;
  int judge0_, watched_;
};

}  // namespace

launch::GroupReport run_ranks(const launch::Placement& p, const RankSettings& s, const rank::Job& job,
                              const spec::ProblemSpec* deadlines_of, const std::string& label, bool judged) {
  namespace proto = eval::protocol;
  const int w = p.world;
  auto role = [&](int q) {
    return !judged ? rank::Role::single : q < w ? rank::Role::judge : rank::Role::candidate;
  };
  launch::GroupOptions opts;
  opts.world = judged ? 2 * w : w;
  if (judged) {
    opts.name_of = [&](int q) { return std::string(q < w ? "judge rank " : "rank ") + std::to_string(q % w); };
    opts.may_write = [&](int q, const std::string& key) {
      return key.rfind(q < w ? proto::kJudges : proto::kCandidates, 0) == 0;
    };
  }
  opts.argv = {launch::self_exe(), "__worker"};
  if (s.fork_server) opts.fork_server_argv = {launch::self_exe(), "__fork_server"};
  // A .py candidate's ranks each import torch: the server does it once for them all.
  if (s.fork_server && std::filesystem::path(job.library).extension() == ".py") {
    opts.fork_server_argv.push_back("--python");
    opts.fork_server_ready_s = 300;  // a loaded machine takes its time over `import torch`
  }
  opts.env = p.env;
  opts.env_policy.isolate = s.sandbox;
  opts.env_policy.pass = s.pass_env;
  opts.env_policy.deny = s.deny_env;
  opts.budgets = launch::phase_budgets(deadlines_of, job.size, p, s.timeout);
  opts.echo = s.echo;
  opts.job = [&](int q) {
    rank::Job j = job;
    j.role = role(q);
    j.rank = q % w;
    j.world = w;
    j.device = p.device;
    j.gpu = p.gpu_of(q % w);
    if (p.cpus.pinned()) {
      j.timing_cpu = p.cpus.timing.at(q % w);
      j.partner_cpu = p.cpus.partner.at(q % w);
    }
    j.comm = p.comm;
    j.reference_libs = s.reference_libs;
    j.sandbox = job.sandbox && s.sandbox;
    // The seed stays with the judges: a candidate rank never needs it.
    if (j.role == rank::Role::candidate) j.seed = 0;
    return rank::to_json(j).dump();
  };
  const bool tty = isatty(2) && !s.echo;
  ProgressLine line(label, job, w, judged);
  if (tty)
    opts.on_phase = [&](int r, const std::string& ph, int n, const std::string& problem) { line.on_phase(r, ph, n, problem); };
  launch::GroupReport r = launch::run_group(opts);
  if (tty) fprintf(stderr, "\r\033[K");
  return r;
}

int exit_for(const launch::GroupReport& r) {
  switch (r.outcome) {
    case launch::Outcome::Ok: return eval::kOk;
    case launch::Outcome::Crash: return eval::kCrash;
    case launch::Outcome::Timeout: return eval::kTimeout;
    case launch::Outcome::Interrupted: return eval::kInterrupted;
  }
  return eval::kInternal;
}

}  // namespace pkb::run
