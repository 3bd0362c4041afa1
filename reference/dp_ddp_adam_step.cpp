// A DDP training step with Adam: the flattened parameters, exp_avg and exp_avg_sq are
// broadcast from rank 0, each rank computes the MLP's gradients on its batch slice, the
// flat gradient is all-reduced and divided by W, and Adam (torch's fused kernel) updates
// every tensor.
// Every rank returns the updated parameters, exp_avg and exp_avg_sq.
// Origin: ParallelKernelBench 40_ddp.
// Deviations: Adam state and step count random per trial (a realistic state), nn.Linear
// init on every rank, the step count a host scalar; sizes n, din, hid, dout of their own.
#include "dp_adam.hpp"

namespace {

const char* kParams[] = {"w1", "b1", "w2", "b2"};

struct DdpAdamStep : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    pkb_dp::Mlp p{in["w1"], in["b1"], in["w2"], in["b2"]};
    std::vector<double> s = pkb_dp::grad_scales(ctx, in["x"], in["y"], p);
    at::Tensor step = pkb_dp::make_step(ctx);
    in["step"] = step;
    for (int i = 0; i < 4; ++i) {
      std::string name = kParams[i];
      auto [m, v] = pkb_dp::make_adam_state(ctx, at::scalar_tensor(s[i], ctx.options(at::kFloat)),
                                            in[name].sizes(), step.item<int64_t>());
      in["exp_avg_" + name] = m;
      in["exp_avg_sq_" + name] = v;
    }
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    std::vector<at::Tensor> p, m, v;
    for (const char* name : kParams) {
      p.push_back(in[name]);
      m.push_back(in[std::string("exp_avg_") + name]);
      v.push_back(in[std::string("exp_avg_sq_") + name]);
    }
    at::Tensor flat_p = pkb_dp::flatten(p), flat_m = pkb_dp::flatten(m), flat_v = pkb_dp::flatten(v);
    comm.broadcast(flat_p, 0);
    comm.broadcast(flat_m, 0);
    comm.broadcast(flat_v, 0);

    auto views = pkb_dp::unflatten(flat_p, p);
    at::Tensor flat_g = pkb_dp::flatten(pkb_dp::mlp_grads(in["x"], in["y"], {views[0], views[1], views[2], views[3]}));
    comm.all_reduce(flat_g);
    flat_g.div_(ctx.world());

    // flat_p, flat_m, flat_v are this call's own copies: Adam updates them in place.
    pkb_dp::adam_step_(flat_p, flat_m, flat_v, flat_g, pkb_dp::adam_hyper(ctx), in["step"].item<int64_t>());
    std::vector<at::Tensor> res;
    for (const at::Tensor* flat : {&flat_p, &flat_m, &flat_v})
      for (auto& t : pkb_dp::unflatten(*flat, p)) res.push_back(t.contiguous());
    out.set(res);
  }
};

}  // namespace

PKB_REFERENCE("dp_ddp_adam_step", DdpAdamStep);
