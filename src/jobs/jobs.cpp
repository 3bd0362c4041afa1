// The jobs by mode and role, and what a rank does before it sets up its device.
#include "jobs/jobs.hpp"

#include "eval/candidate.hpp"
#include "eval/protocol.hpp"

namespace pkb::jobs {

using json = nlohmann::json;

void before_setup(const rank::Job& job, launch::Client& client) {
  namespace proto = eval::protocol;
  // pkb eval's two kinds of rank keep to their own keys.
  if (job.role == rank::Role::judge) client.set_namespace(proto::kJudges);
  if (job.role == rank::Role::candidate) client.set_namespace(proto::kCandidates);
}

launch::ForkHooks before_forks(bool python) { return python ? eval::preload_python() : launch::ForkHooks{}; }

json run_job(rank::Rank& r) {
  const std::string& mode = r.job.mode;
  if (mode == "dryrun") return run_dryrun(r);
  if (mode == "selftest") return run_selftest(r);
  if (mode == "eval" && r.job.role == rank::Role::judge) return run_judge(r);
  if (mode == "eval" && r.job.role == rank::Role::candidate) return run_candidate(r);
  if (mode == "validate") return run_validate(r);
  throw std::runtime_error("unknown worker mode " + mode + " for a rank of role " + rank::role_name(r.job.role));
}

}  // namespace pkb::jobs
