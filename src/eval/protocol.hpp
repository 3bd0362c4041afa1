// How a candidate rank of `pkb eval` and its judge rank talk: JSON messages in order over
// the parent's store, each side writing only under its own namespace (the parent refuses
// a candidate rank's writes anywhere else, so nothing a candidate does can speak for a
// judge). Named here once for both sides and for the parent, which checks the candidate
// ranks' timing against when their messages arrived.
//
// The conversation of one pair:
//   candidate: ready {heap_span, host_bytes, pid}   judge maps the candidate rank's harness
//   calibration (CUDA), per empty call i of kCalibrationCalls:
//                 candidate: fill {call: i}   judge: filled {call: i, seq}
//   baseline (the reference alone, in the candidate rank, before the candidate is loaded):
//                 judge: inputs {warm}    candidate: timing {iters, warmup}
//                 per call i: candidate: fill {call: i, us}   judge: filled {call: i, seq}
//                 (every few calls the judge times the reference itself first, the candidate
//                 rank held stopped: the machine's pace)
//                 candidate: timed {failure, calls, us}        judge: decision {failure}
//   per trial t:  judge: inputs {trial, seq}   candidate: ran {trial, failure, sizes}
//                 judge: decision {failure, stop}
//   timing:       judge: inputs {warm}    candidate: timing {candidate_s, reference_s, warmup}
//                 judge: plan {calls}     (the most calls the rounds can make, and up to four
//                                         candidate's calls after them, in no round, each
//                                         judged as it ends, while all look right)
//                 per call i: candidate: fill {call: i, us, sizes}
//                             judge: filled {call: i, seq, side}, or at a round's end {call: i, stop}
//                             (at each round's end the judge first times the reference itself,
//                             the candidate rank held stopped; before a stop it judges the
//                             candidate's last call, whose reported `sizes` came with the fill)
//                 candidate: timed {failure, sizes, calls, us}  judge: decision {failure}
// `seq` numbers the call on the gate (jobs/gate.hpp); `side` says whose call it is (the
// candidate's or the reference's); `us` is the previous call's time by the candidate rank's
// own clock on the CPU device, where it is the only clock (null on CUDA). Which of the
// candidate's calls the judge captures it never says.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace pkb::launch {
class Client;
}

namespace pkb::eval::protocol {

inline constexpr char kJudges[] = "j/";      // the judge ranks' namespace
inline constexpr char kCandidates[] = "c/";  // the candidate ranks'
inline constexpr char kHostRegion[] = "harness_host";  // + "/<rank>": a candidate rank's host tensors

// Message types.
inline constexpr char kReady[] = "ready", kInputs[] = "inputs", kRan[] = "ran", kDecision[] = "decision",
                      kTiming[] = "timing", kPlan[] = "plan", kFill[] = "fill", kFilled[] = "filled",
                      kTimed[] = "timed";

// The empty calls on which a judge measures what the gate costs (CUDA).
inline constexpr int kCalibrationCalls = 200;

// A message's store key: "pair/<rank>/<seq>" under its sender's namespace.
std::string message_key(int rank, int seq);
// Whether `key` (with its namespace) is a pair message (the parent timestamps those).
bool is_message(const std::string& key);

// A message arrived out of order: from a judge a pkb bug; from a candidate rank, something
// other than pkb wrote to its channel.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One side of a pair.
class Pair {
 public:
  enum class Side { judge, candidate };
  Pair(launch::Client& client, Side me, int rank) : client_(client), me_(me), rank_(rank) {}

  void send(const std::string& type, nlohmann::json body = nlohmann::json::object());
  // The partner's next message, which must be of `type`.
  nlohmann::json receive(const std::string& type);
  // The partner's next message, whatever its type ("type" says).
  nlohmann::json receive_any();

 private:
  launch::Client& client_;
  Side me_;
  int rank_;
  int sent_ = 0, received_ = 0;
};

}  // namespace pkb::eval::protocol
