// pkb dryrun on one rank: the reference for some trials, its outputs' shapes and dtypes,
// and (trial 0) the outputs and inputs saved for offline checks.
#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "jobs/context.hpp"
#include "jobs/jobs.hpp"
#include "jobs/timing.hpp"
#include "launch/phases.hpp"
#include "spec/dtype.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/save.hpp"

namespace pkb::jobs {

using json = nlohmann::json;
namespace phase = launch::phase;

json run_dryrun(rank::Rank& r) {
  // The world communicator stays with the Rank: it must outlive an exception until the
  // worker has reported it.
  std::unique_ptr<Comm> no_comm;
  if (r.job.no_comm) no_comm = comm::make_no_comm(*r.comm);
  ProblemContext pc(r, no_comm.get());
  json outs = json::array();
  double run_ms = 0;
  for (int t = 0; t < r.job.trials; ++t) {
    r.client.phase(phase::kTrial, t);
    Inputs in = pc.inputs_for(t);
    Inputs pristine = in.clone();  // to check the reference's read-only inputs, and to save
    auto t0 = std::chrono::steady_clock::now();
    std::vector<at::Tensor> y = pc.run_reference(in, &pristine);
    run_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // Trials stay apart: a rank that skipped a collective waits here, so its peers' wait
    // in this trial's collective is what overruns, not a mismatch with the next trial.
    r.client.phase(phase::kSync, t);
    r.client.barrier(r.world);
    if (t > 0) continue;
    for (size_t i = 0; i < y.size(); ++i)
      outs.push_back({{"name", pc.spec.outputs[i].name},
                      {"shape", y[i].sizes().vec()},
                      {"dtype", spec::dtype_name(tensor::from_aten(y[i].scalar_type()))}});
    if (!r.job.save_dir.empty()) {
      r.client.phase(phase::kSave);
      std::filesystem::create_directories(r.job.save_dir);
      std::string base = r.job.save_dir + "/rank_" + std::to_string(r.rank);
      tensor::save_outputs(base + ".pt", y);
      tensor::save_named(base + "_inputs.pt", in.names(), pristine.tensors());
    }
  }
  json res = {{"outputs", outs}, {"trials", r.job.trials}, {"run_ms", run_ms}, {"comm", pc.ctx.comm().backend()}};
  if (r.job.timing) {
    void* stream = device::make_stream(r.device);
    r.make_heap(0);  // its signal pads align the timed calls
    device::release_cached_memory(r.device);
    device::reset_peak(r.device);
    res["timing"] = eval::to_json(timing::time_reference(pc, stream));
    res["peak_bytes"] = device::peak_allocated(r.device);
  }
  return res;
}

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
