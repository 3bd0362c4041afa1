#include "launch/group.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "launch/channel.hpp"
#include "launch/fork_server.hpp"
#include "launch/phases.hpp"
#include "launch/signals.hpp"
#include "launch/store.hpp"

namespace pkb::launch {

namespace {

using Clock = std::chrono::steady_clock;
// Kept per rank, so that a rank spamming events cannot exhaust the parent.
constexpr size_t kMaxHistory = 100000;  // phase events
constexpr size_t kMaxParts = 4096;      // problems' reports

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

double mono_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct OutFrame {
  std::string bytes;
  int fd = -1;
  size_t off = 0;
};

struct Rank {
  RankReport report;
  int sock = -1;
  int out = -1;  // the rank's stdout+stderr
  FrameReader reader;
  std::deque<OutFrame> outbox;
  std::string partial_line;
  Clock::time_point phase_start;
  double failed_at = 0, error_at = 0;  // CLOCK_MONOTONIC seconds: reaped, and its Error event
  bool exited = false;
  bool sock_open = true;
};

class Hub {
 public:
  explicit Hub(const GroupOptions& o) : o_(o), ranks_(o.world) {}
  ~Hub() { cleanup(); }

  GroupReport run() {
    auto t0 = Clock::now();
    Interrupts interrupts(Interrupts::Mode::record, /*wake_on_child_exit=*/true);
    signals_ = &interrupts;
    Leftovers leftovers;
    make_scratch();
    spawn_all();
    loop();
    finish();
    std::vector<pid_t> pids;
    for (auto& r : ranks_) pids.push_back(r.report.pid);
    int ended = leftovers.end(pids);
    GroupReport rep;
    rep.leftovers_ended = ended;
    rep.forked = forked_;
    rep.fork_server_failed = fork_server_failed_;
    rep.outcome = outcome_;
    rep.culprits = culprits_;
    rep.summary = summary_;
    for (auto& r : ranks_) rep.ranks.push_back(r.report);
    rep.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return rep;
  }

 private:
  // A folder for the ranks' HOME and TMPDIR, gone with the group. Named after this process,
  // so that the folders of a pkb killed outright (SIGKILL: nothing of it ran to remove them)
  // go when the next group starts.
  void make_scratch() {
    if (!o_.scratch) return;
    const std::filesystem::path tmp = std::filesystem::temp_directory_path();
    remove_stale_scratch(tmp);
    std::string tmpl = (tmp / ("pkb-scratch-" + std::to_string(getpid()) + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw_errno("cannot make a scratch folder under " + tmp.string());
    scratch_ = tmpl;
  }

  // Scratch folders of this user whose pkb no longer runs.
  static void remove_stale_scratch(const std::filesystem::path& tmp) {
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(tmp, ec)) {
      std::string name = e.path().filename().string();
      const std::string prefix = "pkb-scratch-";
      if (name.rfind(prefix, 0) != 0) continue;
      size_t dash = name.find('-', prefix.size());
      if (dash == std::string::npos) continue;  // an older pkb's name: no process to ask
      pid_t pid = static_cast<pid_t>(std::strtol(name.substr(prefix.size(), dash - prefix.size()).c_str(), nullptr, 10));
      struct stat st {};
      if (pid <= 0 || lstat(e.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
      if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
      std::filesystem::remove_all(e.path(), ec);
    }
  }

  void remove_scratch() {
    std::error_code ec;
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_, ec);
  }

  void spawn_all() {
    spawned_ = Clock::now();
    EnvPolicy policy = o_.env_policy;
    if (!scratch_.empty()) policy.scratch = scratch_;
    std::vector<std::string> parent = current_environment();
    unsigned long long nproc = o_.limits.apply && o_.limits.processes ? user_processes() + o_.limits.processes : 0;
    if (!o_.fork_server_argv.empty()) {
      server_ = std::make_unique<ForkServer>(o_.fork_server_argv, rank_environment(parent, policy, o_.env), o_.limits,
                                             nproc, o_.fork_server_ready_s);
      if (!server_->ok()) {  // each rank exec'd, as without one
        fork_server_failed_ = "the fork server did not serve: " + server_->why_not();
        server_.reset();
      }
      forked_ = server_ != nullptr;
    }
    for (int r = 0; r < o_.world; ++r) {
      auto set = o_.env;
      set.push_back({"PKB_RANK", std::to_string(r)});
      std::vector<std::string> env = rank_environment(parent, policy, set);
      Spawned sp = server_ ? server_->spawn(env, pgid_) : spawn_rank(o_.argv, std::move(env), pgid_, o_.limits, nproc);
      if (pgid_ == 0) pgid_ = sp.pid;
      Rank& rk = ranks_[r];
      rk.report.rank = r;
      rk.report.name = o_.name_of ? o_.name_of(r) : "rank " + std::to_string(r);
      rk.report.pid = sp.pid;
      rk.sock = sp.sock;
      rk.out = sp.out;
      rk.phase_start = Clock::now();
    }
  }

  double budget(const std::string& phase) const {
    auto it = o_.budgets.find(phase);
    if (it != o_.budgets.end()) return it->second;
    it = o_.budgets.find("default");
    return it != o_.budgets.end() ? it->second : 300.0;
  }

  bool all_exited() const {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.exited; });
  }

  void fail(Outcome o, std::vector<int> culprits, std::string summary) {
    if (failed_) return;
    failed_ = true;
    outcome_ = o;
    culprits_ = std::move(culprits);
    summary_ = std::move(summary);
    kill_all();
  }

  void kill_all() {
    if (pgid_ > 0) kill(-pgid_, SIGKILL);
    for (auto& r : ranks_)
      if (!r.exited && r.report.pid > 0) {
        kill(r.report.pid, SIGKILL);
        r.report.killed = true;
      }
  }

  void loop() {
    while (!all_exited()) {
      auto now = Clock::now();
      if (Interrupts::requested()) fail(Outcome::Interrupted, {}, "interrupted: pkb stopped every rank");
      if (failed_) break;
      check_deadlines(now);
      if (failed_) break;

      std::vector<pollfd> fds;
      fds.push_back({signals_->fd(), POLLIN, 0});
      fds.push_back({server_ ? server_->fd() : -1, POLLIN, 0});
      for (auto& r : ranks_) {
        short ev = r.sock_open ? static_cast<short>(POLLIN | (r.outbox.empty() ? 0 : POLLOUT)) : 0;
        fds.push_back({r.sock_open ? r.sock : -1, ev, 0});
        fds.push_back({r.out, POLLIN, 0});
      }
      int rc = poll(fds.data(), fds.size(), 100);
      if (rc < 0 && errno != EINTR) throw_errno("poll");
      signals_->drain();
      reap();
      if (failed_) break;
      for (size_t i = 0; i < ranks_.size(); ++i) {
        Rank& r = ranks_[i];
        const pollfd& s = fds[2 + 2 * i];
        const pollfd& out = fds[3 + 2 * i];
        if (out.revents) read_output(r);
        if (r.sock_open && (s.revents & (POLLIN | POLLHUP | POLLERR))) read_socket(r);
        if (r.sock_open && (s.revents & POLLOUT)) flush(r);
      }
    }
  }

  void check_deadlines(Clock::time_point now) {
    std::vector<int> late, late_waiting;
    for (auto& r : ranks_) {
      if (r.exited) continue;
      double spent = std::chrono::duration<double>(now - r.phase_start).count();
      if (spent > budget(r.report.phase)) (waiting(r.report.phase) ? late_waiting : late).push_back(r.report.rank);
    }
    // A rank that only waits (finished its trial, waits for a partner) is not the cause
    // while some rank is late in real work.
    if (late.empty()) late = late_waiting;
    if (late.empty()) return;
    const Rank& first = ranks_[late.front()];
    std::ostringstream os;
    os << "timeout: ";
    if (o_.name_of) {
      for (size_t k = 0; k < late.size(); ++k) os << (k ? ", " : "") << ranks_[late[k]].report.name;
    } else {
      os << "rank" << (late.size() > 1 ? "s " : " ");
      for (size_t k = 0; k < late.size(); ++k) os << (k ? "," : "") << late[k];
    }
    os << " spent over " << budget(first.report.phase) << " s in "
       << phase_label(first.report.phase, first.report.trial, first.report.problem)
       << " (a hang, a deadlock, or a rank that never reached a collective; --timeout raises the limit)";
    fail(Outcome::Timeout, late, os.str());
  }

  void reap(double timeout_s = 0) {
    if (server_) return reap_reported(timeout_s);
    for (auto& r : ranks_) {
      if (r.exited) continue;
      int status = 0;
      pid_t p = waitpid(r.report.pid, &status, WNOHANG);
      if (p != r.report.pid) continue;
      on_exit(r, status);
    }
  }

  // The ranks' exits as the fork server reports them (they are its children, not ours).
  void reap_reported(double timeout_s) {
    for (auto [pid, status] : server_->exits(timeout_s))
      for (auto& r : ranks_)
        if (!r.exited && r.report.pid == pid) on_exit(r, status);
    if (!server_->gone() || all_exited()) return;
    // The server died, and its children with it (their death signal): nothing more will
    // be reported of them.
    if (!failed_) fail(Outcome::Crash, {}, "crash: pkb's fork server ended while the ranks ran");
    for (auto& r : ranks_)
      if (!r.exited) {
        r.report.killed = true;
        on_exit(r, SIGKILL);
      }
  }

  void on_exit(Rank& r, int status) {
    r.exited = true;
    r.failed_at = mono_now();
    // Read what the rank said before it went, so errors and last lines are complete.
    while (r.sock_open && read_socket(r)) {
    }
    read_output(r);
    if (WIFEXITED(status)) r.report.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status) && !(r.report.killed && WTERMSIG(status) == SIGKILL)) r.report.signal = WTERMSIG(status);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !r.report.result.empty();
    if (ok || failed_) return;
    // Stop the others at once; which rank caused it is decided once all are in (blame()).
    failed_ = true;
    outcome_ = Outcome::Crash;
    kill_all();
  }

  // When one rank dies, its peers soon fail too (a closed connection, an aborted
  // communicator). The cause is the rank that died abruptly (a signal, or an exit that
  // bypassed pkb's error path), else the one whose error came first by its own clock.
  void blame() {
    const Rank* culprit = nullptr;
    auto key = [](const Rank& r) {
      bool abrupt = r.report.signal != 0 || (r.report.exit_code != 1 && r.report.error_message.empty());
      return std::make_pair(abrupt ? 0 : 1, r.report.error_message.empty() ? r.failed_at : r.error_at);
    };
    for (auto& r : ranks_) {
      bool failed = r.report.signal != 0 || r.report.exit_code > 0 ||
                    (r.report.exit_code == 0 && r.report.result.empty());
      if (failed && (!culprit || key(r) < key(*culprit))) culprit = &r;
    }
    if (!culprit) {
      if (summary_.empty()) summary_ = "crash: a rank failed";  // else what ended the group (fail())
      return;
    }
    const RankReport& c = culprit->report;
    std::ostringstream os;
    os << "crash: " << c.name;
    if (c.signal) os << " was killed by signal " << c.signal << " (" << strsignal(c.signal) << ")";
    else if (c.exit_code == 0) os << " exited before finishing";
    else os << " exited with code " << c.exit_code;
    os << " in " << phase_label(c.phase, c.trial, c.problem);
    if (!c.error_message.empty()) os << ": " << c.error_message;
    summary_ = os.str();
    culprits_ = {c.rank};
  }

  void read_output(Rank& r) {
    char buf[8192];
    for (;;) {
      ssize_t n = read(r.out, buf, sizeof(buf));
      if (n <= 0) break;
      r.partial_line.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = r.partial_line.find('\n')) != std::string::npos) {
        add_line(r, r.partial_line.substr(0, nl));
        r.partial_line.erase(0, nl + 1);
      }
    }
    if (r.exited && !r.partial_line.empty()) {
      add_line(r, r.partial_line);
      r.partial_line.clear();
    }
  }

  void add_line(Rank& r, const std::string& line) {
    if (o_.echo) fprintf(stderr, "[%s] %s\n", r.report.name.c_str(), line.c_str());
    r.report.last_lines.push_back(line);
    if (r.report.last_lines.size() > o_.keep_lines) r.report.last_lines.erase(r.report.last_lines.begin());
  }

  // Returns true if it read something.
  bool read_socket(Rank& r) {
    bool open = r.reader.read_some(r.sock);
    Frame f;
    bool any = false;
    while (r.reader.next(f)) {
      any = true;
      handle(r, f);
    }
    if (!open) {
      r.sock_open = false;
      close(r.sock);
      r.sock = -1;
    }
    return any && open;
  }

  void reply(Rank& r, Op op, std::string payload, int fd = -1) {
    r.outbox.push_back(OutFrame{encode(Frame{op, std::move(payload), -1}), fd, 0});
    flush(r);
  }

  void flush(Rank& r) {
    while (r.sock_open && !r.outbox.empty()) {
      OutFrame& f = r.outbox.front();
      ssize_t n = send_bytes(r.sock, f.bytes.data() + f.off, f.bytes.size() - f.off, f.off == 0 ? f.fd : -1,
                             MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        r.outbox.clear();  // the rank is gone; reap() will say why
        return;
      }
      f.off += static_cast<size_t>(n);
      if (f.off == f.bytes.size()) r.outbox.pop_front();
    }
  }

  static bool waiting(const std::string& ph) {
    for (const char* w : phase::kWaitingPhases)
      if (ph == w) return true;
    return false;
  }

  // The key a store write names ("" for reads).
  static std::string written_key(const Frame& f) {
    switch (f.op) {
      case Op::Set: case Op::Add: return unpack(f.payload).at(0);
      case Op::Delete: case Op::SetFd: return f.payload;
      default: return "";
    }
  }

  void handle(Rank& r, const Frame& f) {
    if (Store::handles(f.op)) {
      std::string key = written_key(f);
      if (!key.empty() && o_.may_write && !o_.may_write(r.report.rank, key)) {
        // Not pkb's rank speaking: the group ends at once, and the report says why.
        if (r.report.refused_writes++ == 0) r.report.refused_key = key;
        if (f.fd >= 0) close(f.fd);
        fail(Outcome::Crash, {r.report.rank}, r.report.name + " wrote to pkb's store outside its own keys");
        return;
      }
      if (!key.empty() && o_.timestamp_key && o_.timestamp_key(key))
        r.report.key_s.emplace(key, std::chrono::duration<double>(Clock::now() - spawned_).count());
      for (auto& rep : store_.handle(r.report.rank, f)) {
        Rank& to = ranks_[rep.rank];
        to.outbox.push_back(OutFrame{encode(rep.frame), rep.frame.fd, 0});
        flush(to);
      }
      return;
    }
    switch (f.op) {
      case Op::Hello:
        reply(r, Op::Job, o_.job ? o_.job(r.report.rank) : "{}");
        break;
      case Op::Phase: {
        auto j = nlohmann::json::parse(f.payload, nullptr, false);
        r.report.phase = j.value("phase", "?");
        r.report.trial = j.value("trial", -1);
        r.report.problem = j.value("problem", "");
        r.phase_start = Clock::now();
        double at = std::chrono::duration<double>(r.phase_start - spawned_).count();
        r.report.entered_s.emplace(r.report.phase, at);
        if (r.report.history.size() < kMaxHistory)
          r.report.history.push_back({r.report.phase, r.report.trial, at, r.report.problem});
        if (o_.on_phase) o_.on_phase(r.report.rank, r.report.phase, r.report.trial, r.report.problem);
        break;
      }
      case Op::Result: {
        // The first result is the rank's; a second says something else wrote to its channel.
        if (++r.report.results == 1) r.report.result = f.payload;
        r.report.phase = phase::kExit;
        r.report.trial = -1;
        r.phase_start = Clock::now();
        double at = std::chrono::duration<double>(r.phase_start - spawned_).count();
        if (r.report.history.size() < kMaxHistory) r.report.history.push_back({phase::kExit, -1, at});
        break;
      }
      case Op::Part:
        if (r.report.parts.size() < kMaxParts) r.report.parts.push_back(f.payload);
        break;
      case Op::Error: {
        auto j = nlohmann::json::parse(f.payload, nullptr, false);
        r.report.error_kind = j.value("kind", "error");
        r.report.error_message = j.value("message", "");
        r.error_at = j.value("t", mono_now());
        break;
      }
      default:
        break;
    }
  }

  void finish() {
    // Everyone is dead or exited; collect the stragglers (SIGKILL is quick, but a rank
    // stuck in the GPU driver may take a moment), then the last of their output.
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!all_exited() && Clock::now() < deadline) {
      reap(0.002);
      if (!server_ && !all_exited()) usleep(2000);
    }
    for (auto& r : ranks_) read_output(r);
    if (server_) {
      bool gone = server_->gone();
      server_.reset();  // reaps the server (and its zombies) before the leftovers are looked for
      // A server that died left its children to this process (the subreaper): reaped here.
      if (gone)
        for (auto& r : ranks_) waitpid(r.report.pid, nullptr, WNOHANG);
    }
    if (!failed_ && Interrupts::requested()) fail(Outcome::Interrupted, {}, "interrupted");
    if (outcome_ == Outcome::Crash) blame();
  }

  void cleanup() {
    remove_scratch();
    for (auto& r : ranks_) {
      if (r.sock >= 0) close(r.sock);
      if (r.out >= 0) close(r.out);
      r.sock = r.out = -1;
    }
  }

  const GroupOptions& o_;
  std::vector<Rank> ranks_;
  std::unique_ptr<ForkServer> server_;
  bool forked_ = false;
  std::string fork_server_failed_;
  pid_t pgid_ = 0;
  Clock::time_point spawned_;
  Store store_;
  Interrupts* signals_ = nullptr;
  std::string scratch_;
  bool failed_ = false;
  Outcome outcome_ = Outcome::Ok;
  std::vector<int> culprits_;
  std::string summary_;
};

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Ok: return "ok";
    case Outcome::Crash: return "crash";
    case Outcome::Timeout: return "timeout";
    case Outcome::Interrupted: return "interrupted";
  }
  return "?";
}

GroupReport for_problem(const GroupReport& rep, const std::string& problem, const std::vector<std::string>& results) {
  GroupReport out = rep;
  bool everyone = !out.ranks.empty();
  for (size_t q = 0; q < out.ranks.size(); ++q) everyone = everyone && q < results.size() && !results[q].empty();
  if (everyone) {
    out.outcome = Outcome::Ok;
    out.culprits.clear();
    out.summary.clear();
  }
  for (size_t q = 0; q < out.ranks.size(); ++q) {
    RankReport& rk = out.ranks[q];
    rk.result = q < results.size() ? results[q] : "";
    rk.results = rk.result.empty() ? 0 : 1;
    std::vector<RankReport::Step> mine;
    rk.entered_s.clear();
    for (auto& st : rep.ranks[q].history) {
      // Events before a rank names its first problem (bootstrap, waiting for the reference)
      // belong to every problem; the exit to the last.
      if (!st.problem.empty() && st.problem != problem) continue;
      mine.push_back(st);
      rk.entered_s.emplace(st.phase, st.s);
    }
    rk.history = mine;
  }
  return out;
}

std::string phase_label(const std::string& phase, int trial, const std::string& problem) {
  std::string label = trial >= 0 ? phase + " " + std::to_string(trial) : phase;
  return problem.empty() ? label : label + " of " + problem;
}

std::string GroupReport::details() const {
  std::ostringstream os;
  os << summary << "\n";
  for (auto& r : ranks) {
    os << "  " << r.name << ": ";
    if (r.signal) os << "signal " << r.signal << " (" << strsignal(r.signal) << ")";
    else if (r.exit_code > 0) os << "exit code " << r.exit_code;
    else if (r.killed) os << "stopped by pkb";
    else if (!r.result.empty()) os << "finished";
    else os << "exited";
    os << ", last phase " << phase_label(r.phase, r.trial, r.problem);
    if (!r.error_message.empty()) os << ", error: " << r.error_message;
    os << "\n";
    if (!r.last_lines.empty() && (outcome != Outcome::Ok)) {
      for (auto& l : r.last_lines) os << "    | " << l << "\n";
    }
  }
  return os.str();
}

GroupReport run_group(const GroupOptions& options) {
  if (options.world < 1) throw std::invalid_argument("world size must be at least 1");
  Hub hub(options);
  return hub.run();
}

}  // namespace pkb::launch
