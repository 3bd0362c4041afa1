#include "jobs/context.hpp"

#include <ATen/ATen.h>

#include <filesystem>

#include "eval/compare.hpp"
#include "device/device.hpp"
#include "launch/phases.hpp"
#include "ref/registry.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/save.hpp"

namespace pkb::jobs {

ProblemContext::ProblemContext(rank::Rank& r, const std::string& spec_path, Comm* comm)
    : rank(r),
      spec(spec::load_spec(spec_path)),
      dt(tensor::resolve(r.job.dtype.empty() ? spec.dtype : r.job.dtype, at::kFloat)),
      ctx(spec, spec.vars_for(r.job.size, r.world, r.rank), r.device, dt, comm ? comm : r.comm.get(), r.job.seed),
      reference(ref::create_reference(spec.slug)) {
  reference->setup(ctx);
}

Inputs ProblemContext::inputs_for(int64_t key) {
  ctx.begin_trial(static_cast<int>(key));
  return ref::build_inputs(ctx, *reference);
}

ReferenceOutputs ProblemContext::run_reference(Inputs& in, const Inputs* pristine) {
  Outputs out = ref::make_outputs(ctx);
  // Checking the reference itself: an element it never writes shows as poison.
  if (pristine)
    for (size_t i = 0; i < out.size(); ++i) eval::poison(out.at(i), false);
  reference->run(ctx, in, out);
  device::synchronize(rank.device);
  for (size_t i = 0; pristine && i < pristine->size(); ++i)
    if (spec.inputs[i].readonly && !in.at(i).equal(pristine->at(i)))
      throw std::runtime_error("the reference changed its read-only input '" + in.names()[i] +
                               "' (fix the reference, or declare the input readonly = false)");
  return {out.results(), out.copies()};
}

std::string ProblemContext::save_dir() const {
  const rank::Job& j = rank.job;
  return j.save_dir.empty() || !j.save_by_problem ? j.save_dir : j.save_dir + "/" + spec.slug;
}

void ProblemContext::save(const Inputs& in, const std::vector<at::Tensor>& y) const {
  rank.client.phase(launch::phase::kSave);
  std::string dir = save_dir();
  std::filesystem::create_directories(dir);
  std::string base = dir + "/rank_" + std::to_string(rank.rank);
  tensor::save_outputs(base + ".pt", y);
  tensor::save_named(base + "_inputs.pt", in.names(), in.tensors());
}

}  // namespace pkb::jobs
