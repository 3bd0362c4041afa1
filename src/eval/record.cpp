#include "eval/record.hpp"

#include <sstream>

namespace pkb::eval {

using json = nlohmann::json;

json new_record(const RecordHead& h) {
  json candidate = {{"path", h.candidate_path}, {"sha256", h.candidate_sha256}, {"backend", h.backend}};
  if (!h.candidate_abs_path.empty()) candidate["abs_path"] = h.candidate_abs_path;
  return {{"schema", "pkb.eval/1"},
          {"problem", h.problem},
          {"problem_id", h.problem_id},
          {"category", h.category},
          {"candidate", candidate},
          {"run", h.run},
          {"versions", nullptr},
          {"verdict", ""},
          {"message", ""},
          {"failure", nullptr},
          {"timing", nullptr},
          {"speedup", nullptr},
          {"busbw_gbps", nullptr},
          {"roofline", nullptr},
          {"flags", json::array()}};
}

json unmeasured_record(const RecordHead& head, Verdict verdict, const std::string& message, const std::string& flag,
                       double wall_s) {
  json r = new_record(head);
  r["verdict"] = verdict_name(verdict);
  r["message"] = message;
  r["flags"] = {flag};
  r["wall_s"] = wall_s;
  return r;
}

std::vector<std::string> EvalCommand::argv() const {
  std::vector<std::string> a = {pkb};
  a.insert(a.end(), global_args.begin(), global_args.end());
  a.insert(a.end(), {"eval", "--problem", problem, "--solution", solution, "--world-size", std::to_string(world),
                     "--device", device});
  std::vector<std::string> flags = rank::to_flags(settings);
  a.insert(a.end(), flags.begin(), flags.end());
  if (seed) a.insert(a.end(), {"--seed", std::to_string(*seed)});
  if (timeout > 0) {
    std::ostringstream t;
    t << timeout;
    a.insert(a.end(), {"--timeout", t.str()});
  }
  if (!cpus.empty()) a.insert(a.end(), {"--cpus", cpus});
  if (!json_out.empty()) a.insert(a.end(), {"--json", json_out});
  return a;
}

}  // namespace pkb::eval
