// pkb validate on one rank: a problem is only worth benchmarking if its comparison rejects
// answers that skip the work. Three stand-ins must each fail in some trial on some rank:
// an all-zero answer, the inputs passed through as outputs, and the reference run with
// every collective turned into a no-op.
#include <ATen/ATen.h>

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "eval/compare.hpp"
#include "eval/jobs.hpp"
#include "spec/dtype.hpp"
#include "tensor/dtypes.hpp"
#include "worker/rank.hpp"
#include "worker/run_reference.hpp"

namespace pkb::eval {

namespace {

using json = nlohmann::json;

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

}  // namespace

json run_validate(worker::Rank& r) {
  spec::ProblemSpec spec = spec::load_spec(r.job.at("spec"));
  std::string preset = r.job.value("preset", "default");
  at::ScalarType dt = tensor::resolve(r.job.value("dtype", spec.dtype), at::kFloat);
  worker::RefCtx ctx(spec, spec.vars_for(preset, r.world, r.rank), r.device, dt, r.comm.get(),
                     std::stoull(r.job.at("seed").get<std::string>()));
  auto ref = worker::create_reference(spec.slug);
  ref->setup(ctx);
  // A second instance set up over the no-op communicator (its sub-communicators too).
  auto no_comm = comm::make_no_comm(*r.comm);
  auto ref_nc = worker::create_reference(spec.slug);
  ctx.set_comm(no_comm.get());
  ref_nc->setup(ctx);
  ctx.set_comm(r.comm.get());

  std::map<std::string, json> caught = {{"zeros", nullptr}, {"passthrough", nullptr}, {"no_communication", nullptr}};
  int trials = r.job.value("trials", 5);
  for (int t = 0; t < trials; ++t) {
    r.client.phase("trial", t);
    ctx.begin_trial(t);
    Inputs in = build_inputs(ctx, *ref);
    Inputs ref_in = in.clone();
    std::vector<at::Tensor> want = ref->run(ctx, ref_in);
    ctx.set_comm(no_comm.get());
    Inputs nc_in = in.clone();
    std::vector<at::Tensor> lonely = ref_nc->run(ctx, nc_in);
    ctx.set_comm(r.comm.get());
    device::synchronize(r.device);
    for (auto& [attack, found] : caught) {
      if (!found.is_null()) continue;
      for (size_t i = 0; i < want.size() && found.is_null(); ++i) {
        at::Tensor got = attack == "zeros" ? at::zeros_like(want[i])
                         : attack == "passthrough" ? passthrough(in, want[i])
                                                   : lonely.at(i);
        const auto& o = spec.outputs[i];
        spec::DType d = tensor::from_aten(want[i].scalar_type());
        Mismatch m = compare(got, want[i], o.atol.value_or(spec::default_atol(d)), o.rtol.value_or(spec::default_rtol(d)));
        if (!m.ok) found = {{"trial", t}, {"output", o.name}, {"detail", m.detail}};
      }
    }
    r.client.phase("sync", t);
    r.client.barrier(r.world);
  }
  json out;
  for (auto& [attack, found] : caught) out[attack] = found;
  return out;
}

}  // namespace pkb::eval
