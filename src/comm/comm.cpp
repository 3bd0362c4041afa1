// The parts of Comm that every backend shares.
#include <ATen/ATen.h>

#include <algorithm>

#include "comm/comms.hpp"

namespace pkb {

void Comm::all_reduce_into(at::Tensor& out, const at::Tensor& in, ReduceOp op) {
  out.copy_(in);
  all_reduce(out, op);
}

void Comm::broadcast_into(at::Tensor& out, const at::Tensor& in, int root) {
  out.copy_(in);
  broadcast(out, root);
}

void Comm::reduce_into(at::Tensor& out, const at::Tensor& in, int root, ReduceOp op) {
  out.copy_(in);
  reduce(out, root, op);
}

void Comm::send(const at::Tensor& t, int peer) {
  std::vector<P2POp> ops{{P2POp::Send, t, peer}};
  batch_p2p(ops);
}

void Comm::recv(at::Tensor& t, int peer) {
  std::vector<P2POp> ops{{P2POp::Recv, t, peer}};
  batch_p2p(ops);
}

at::Tensor Comm::all_gather(const at::Tensor& in) {
  std::vector<int64_t> shape = in.sizes().vec();
  if (shape.empty()) shape.push_back(1);
  shape[0] *= size();
  at::Tensor out = at::empty(shape, in.options());
  all_gather(out, in.dim() == 0 ? in.reshape({1}) : in);
  return out;
}

std::vector<at::Tensor> Comm::all_gather_uneven(const at::Tensor& in) {
  at::Tensor rows = at::full({1}, in.size(0), in.options().dtype(at::kLong));
  at::Tensor all_rows = all_gather(rows).cpu();
  int64_t most = all_rows.max().item<int64_t>();
  std::vector<int64_t> shape = in.sizes().vec();
  shape[0] = most;
  at::Tensor padded = at::zeros(shape, in.options());
  padded.narrow(0, 0, in.size(0)).copy_(in);
  at::Tensor gathered = all_gather(padded);
  std::vector<at::Tensor> out;
  for (int r = 0; r < size(); ++r)
    out.push_back(gathered.narrow(0, r * most, all_rows[r].item<int64_t>()));
  return out;
}

namespace comm {

SplitPlan plan_split(Comm& parent, int color, int key) {
  at::Tensor mine = at::tensor({int64_t(color), int64_t(key)}, at::kLong).to(parent.device());
  at::Tensor all = parent.all_gather(mine).cpu().view({parent.size(), 2});
  std::vector<std::pair<int64_t, int>> order;  // (key, global rank)
  for (int r = 0; r < parent.size(); ++r)
    if (all[r][0].item<int64_t>() == color) order.emplace_back(all[r][1].item<int64_t>(), r);
  std::sort(order.begin(), order.end());
  SplitPlan plan;
  if (color < 0) return plan;
  for (size_t i = 0; i < order.size(); ++i) {
    plan.members.push_back(order[i].second);
    if (order[i].second == parent.rank()) plan.index = static_cast<int>(i);
  }
  return plan;
}

}  // namespace comm
}  // namespace pkb
