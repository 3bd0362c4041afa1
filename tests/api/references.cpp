// References that exercise the parts of the reference API the ported problems have not
// needed yet: sub-groups, point-to-point, uneven all_to_all, rank-dependent and
// data-dependent shapes, integer, bool, fp8, complex and fp64 tensors, non-tensor
// arguments. tests/check_api.py recomputes every output from the saved inputs.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Grid : pkb::Reference {
  std::unique_ptr<pkb::Comm> tp, dp, even;

  void setup(pkb::Ctx& ctx) override {
    int r = ctx.rank(), t = int(ctx.size("tp")), d = int(ctx.size("dp"));
    tp = ctx.comm().split(r / t, r % t);
    dp = ctx.comm().split(r % t, d - 1 - r / t);  // keys order the DP group by descending row
    even = ctx.comm().split(r % 2 == 0 ? 0 : -1, r);
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor tp_sum = in["x"].clone();
    tp->all_reduce(tp_sum);
    at::Tensor dp_gather = dp->all_gather(in["x"]);
    at::Tensor even_sum = in["x"].clone();
    if (even) even->all_reduce(even_sum);
    else if (ctx.rank() % 2 == 0) throw std::runtime_error("an even rank got no group");
    out.set({tp_sum, dp_gather, even_sum});
  }
};

struct Ring : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    int r = ctx.rank(), w = ctx.world();
    at::Tensor buf = in["x"].clone(), acc = in["x"].clone();
    for (int64_t h = 0; h < ctx.arg_int("hops"); ++h) {
      at::Tensor next = at::empty_like(buf);
      std::vector<pkb::P2POp> ops{{pkb::P2POp::Send, buf, (r + 1) % w}, {pkb::P2POp::Recv, next, (r + w - 1) % w}};
      comm.batch_p2p(ops);
      acc.add_(next);
      buf = next;
    }
    at::Tensor partner = in["x"].clone();
    int p = r ^ 1;
    if (p < w) {
      if (r % 2 == 0) {
        comm.send(in["x"], p);
        comm.recv(partner, p);
      } else {
        comm.recv(partner, p);
        comm.send(in["x"], p);
      }
    }
    out.set({acc, partner});
  }
};

struct Uneven : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    int r = ctx.rank(), w = ctx.world();
    std::vector<int64_t> send, recv;
    for (int d = 0; d < w; ++d) send.push_back(r + d + 1);
    for (int s = 0; s < w; ++s) recv.push_back(s + r + 1);
    at::Tensor y = at::empty({ctx.size("rows"), in["x"].size(1)}, in["x"].options());
    ctx.comm().all_to_all(y, in["x"], recv, send);
    out.set({y});
  }
};

struct Dynamic : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor all = ctx.comm().all_gather(in["x"]);
    at::Tensor keep = all > 0;
    out.set({all.masked_select(keep), keep.nonzero().view({-1})});
  }
};

struct DTypes : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    at::Tensor a = in["a"].clone();
    comm.all_reduce(a);
    at::Tensor z = in["z"].clone();
    comm.all_reduce(z);
    at::Tensor b = comm.all_gather(in["b"]);
    at::Tensor c = comm.all_gather(in["c"]);

    std::vector<int64_t> weights = ctx.arg_list("weights");
    at::Tensor d = in["d"] * double(weights[ctx.rank() % weights.size()]);
    std::string op = ctx.arg_str("op");
    if (op != "sum" && op != "max") throw std::invalid_argument("op must be sum or max, not " + op);
    comm.all_reduce(d, op == "sum" ? pkb::ReduceOp::Sum : pkb::ReduceOp::Max);
    d.mul_(ctx.arg_float("scale") * (ctx.arg_bool("negate") ? -1.0 : 1.0));
    out.set({a, b, c, z, d});
  }
};

}  // namespace

PKB_REFERENCE("test_api_grid", Grid);
PKB_REFERENCE("test_api_ring", Ring);
PKB_REFERENCE("test_api_uneven", Uneven);
PKB_REFERENCE("test_api_dynamic", Dynamic);
PKB_REFERENCE("test_api_dtypes", DTypes);
