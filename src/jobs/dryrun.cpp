// pkb dryrun on one rank: the reference for some trials, its outputs' shapes and dtypes,
// and (trial 0) the outputs and inputs saved for offline checks.
#include <ATen/ATen.h>

#include <algorithm>
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

namespace pkb::jobs {

using json = nlohmann::json;
namespace phase = launch::phase;

namespace {

// One problem's reference on this rank: its trials, what it made, how many outputs it
// copied into their slots in a call (the most of any trial), and (--time) its timing.
json dryrun_one(rank::Rank& r, const std::string& spec_path, Comm* no_comm) {
  ProblemContext pc(r, spec_path, no_comm);
  json outs = json::array();
  double run_ms = 0;
  int copies = 0;
  for (int t = 0; t < r.job.trials; ++t) {
    r.client.phase(phase::kTrial, t);
    Inputs in = pc.inputs_for(t);
    Inputs pristine = in.clone();  // to check the reference's read-only inputs, and to save
    auto t0 = std::chrono::steady_clock::now();
    ReferenceOutputs ran = pc.run_reference(in, &pristine);
    run_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    copies = std::max(copies, ran.copies);
    const std::vector<at::Tensor>& y = ran.outputs;
    // Trials stay apart: a rank that skipped a collective waits here, so its peers' wait
    // in this trial's collective is what overruns, not a mismatch with the next trial.
    r.client.phase(phase::kSync, t);
    r.client.barrier(r.world);
    if (t > 0) continue;
    for (size_t i = 0; i < y.size(); ++i)
      outs.push_back({{"name", pc.spec.outputs[i].name},
                      {"shape", y[i].sizes().vec()},
                      {"dtype", spec::dtype_name(tensor::from_aten(y[i].scalar_type()))}});
    if (!r.job.save_dir.empty()) pc.save(pristine, y);
  }
  json res = {{"problem", pc.spec.slug}, {"outputs", outs}, {"run_ms", run_ms}, {"comm", pc.ctx.comm().backend()},
              {"copies", copies}};
  if (r.job.timing) {
    void* stream = device::make_stream(r.device);
    r.make_heap(0);  // its signal pads align the timed calls
    device::release_cached_memory(r.device);
    device::reset_peak(r.device);
    r.to_timing_cpu();  // as pkb eval's candidate ranks time both sides (launch/cpus.hpp)
    res["timing"] = eval::to_json(timing::time_reference(pc, stream));
    r.to_partner_cpu();
    res["peak_bytes"] = device::peak_allocated(r.device);
  }
  return res;
}

}  // namespace

json run_dryrun(rank::Rank& r) {
  // The world communicator stays with the Rank: it must outlive an exception until the
  // worker has reported it.
  std::unique_ptr<Comm> no_comm;
  if (r.job.no_comm) no_comm = comm::make_no_comm(*r.comm);
  json problems = json::array();
  for (const std::string& path : r.job.specs) {
    if (r.job.specs.size() > 1) r.client.set_problem(std::filesystem::path(path).stem().string());
    problems.push_back(dryrun_one(r, path, no_comm.get()));
    device::release_cached_memory(r.device);  // the next problem starts from an empty cache
  }
  return {{"problems", problems}, {"trials", r.job.trials}};
}

}  // namespace pkb::jobs
