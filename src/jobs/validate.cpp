// pkb validate on one rank: a problem is only worth benchmarking if its comparison rejects
// answers that skip the work. Three stand-ins must each fail in some trial on some rank:
// an all-zero answer, the inputs passed through as outputs, and the reference run with
// every collective turned into a no-op.
#include <ATen/ATen.h>

#include <filesystem>

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "eval/compare.hpp"
#include "jobs/context.hpp"
#include "jobs/jobs.hpp"
#include "launch/phases.hpp"

namespace pkb::jobs {

using json = nlohmann::json;
using eval::Mismatch;

namespace {

// The input that best stands in for `want`: same shape and dtype, else same element count
// and dtype, else same shape; zeros when no input fits.
at::Tensor passthrough(const Inputs& in, const at::Tensor& want) {
  for (auto& x : in.tensors())
    if (x.sizes() == want.sizes() && x.scalar_type() == want.scalar_type()) return x.clone();
  for (auto& x : in.tensors())
    if (x.numel() == want.numel() && x.scalar_type() == want.scalar_type()) return x.reshape(want.sizes()).clone();
  for (auto& x : in.tensors())
    if (x.sizes() == want.sizes()) return x.to(want.scalar_type());
  return at::zeros_like(want);
}

// One problem: which stand-ins its comparison rejected, in which trial and output.
json validate_one(rank::Rank& r, const std::string& spec_path, Comm* no_comm) {
  ProblemContext pc(r, spec_path);
  // A second reference set up over the no-op communicator (its sub-communicators too).
  ProblemContext lonely_pc(r, spec_path, no_comm);

  std::map<std::string, json> caught = {{"zeros", nullptr}, {"passthrough", nullptr}, {"no_communication", nullptr}};
  for (int t = 0; t < r.job.trials; ++t) {
    r.client.phase(launch::phase::kTrial, t);
    Inputs in = pc.inputs_for(t);
    Inputs ref_in = in.clone(), nc_in = in.clone();
    std::vector<at::Tensor> want = pc.run_reference(ref_in, &in).outputs;
    if (t == 0 && !r.job.save_dir.empty()) pc.save(in, want);
    lonely_pc.ctx.begin_trial(t);
    std::vector<at::Tensor> lonely = lonely_pc.run_reference(nc_in, &in).outputs;
    for (auto& [attack, found] : caught) {
      if (!found.is_null()) continue;
      for (size_t i = 0; i < want.size() && found.is_null(); ++i) {
        at::Tensor got = attack == "zeros" ? at::zeros_like(want[i])
                         : attack == "passthrough" ? passthrough(in, want[i])
                                                   : lonely.at(i);
        Mismatch m = eval::compare_output(pc.spec.outputs[i], got, want[i]);
        if (!m.ok) found = {{"trial", t}, {"output", pc.spec.outputs[i].name}, {"detail", m.detail}};
      }
    }
    r.client.phase(launch::phase::kSync, t);
    r.client.barrier(r.world);
  }
  json out = {{"problem", pc.spec.slug}};
  for (auto& [attack, found] : caught) out[attack] = found;
  return out;
}

}  // namespace

json run_validate(rank::Rank& r) {
  auto no_comm = comm::make_no_comm(*r.comm);
  const bool several = r.job.specs.size() > 1;
  json problems = json::array();
  for (const std::string& path : r.job.specs) {
    if (several) r.client.set_problem(std::filesystem::path(path).stem().string());
    problems.push_back(validate_one(r, path, no_comm.get()));
    device::release_cached_memory(r.device);
  }
  return {{"problems", problems}};
}

}  // namespace pkb::jobs
