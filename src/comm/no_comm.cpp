// "No communication": every collective acts as if the peers contributed nothing. pkb
// validate runs a reference under it; a problem whose check accepts that answer does not
// test communication at all.
#include <ATen/ATen.h>

#include "comm/comms.hpp"

namespace pkb::comm {

namespace {

class NoComm : public Comm {
 public:
  explicit NoComm(std::unique_ptr<Comm> owned) : owned_(std::move(owned)), inner_(owned_.get()) {}
  explicit NoComm(Comm& inner) : inner_(&inner) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return "none"; }
  at::Device device() const override { return inner_->device(); }

  void all_reduce(at::Tensor&, ReduceOp) override {}
  void broadcast(at::Tensor&, int) override {}
  void reduce(at::Tensor&, int, ReduceOp) override {}

  void all_gather(at::Tensor& out, const at::Tensor& in) override {
    out.zero_();
    own_chunk(out, in.numel()).copy_(in.reshape({-1}));
  }

  void reduce_scatter(at::Tensor& out, const at::Tensor& in, ReduceOp) override {
    out.copy_(in.reshape({-1}).narrow(0, rank() * out.numel(), out.numel()).view(out.sizes()));
  }

  void all_to_all(at::Tensor& out, const at::Tensor& in, const std::vector<int64_t>& out_splits,
                  const std::vector<int64_t>& in_splits) override {
    out.zero_();
    int64_t n = size(), r = rank();
    auto offset = [&](const std::vector<int64_t>& s, int64_t rows) {
      int64_t o = 0;
      for (int64_t k = 0; k < r; ++k) o += s.empty() ? rows / n : s[k];
      return o;
    };
    int64_t in_rows = in.dim() ? in.size(0) : 1, out_rows = out.dim() ? out.size(0) : 1;
    int64_t count = in_splits.empty() ? in_rows / n : in_splits[r];
    if (count == 0) return;
    out.narrow(0, offset(out_splits, out_rows), count).copy_(in.narrow(0, offset(in_splits, in_rows), count));
  }

  void gather(at::Tensor& out, const at::Tensor& in, int root) override {
    if (rank() != root) return;
    out.zero_();
    own_chunk(out, in.numel()).copy_(in.reshape({-1}));
  }

  void scatter(at::Tensor& out, const at::Tensor& in, int root) override {
    if (rank() == root) out.copy_(in.reshape({-1}).narrow(0, root * out.numel(), out.numel()).view(out.sizes()));
    else out.zero_();
  }

  void batch_p2p(std::vector<P2POp>& ops) override {
    for (auto& op : ops)
      if (op.kind == P2POp::Recv) op.tensor.zero_();
  }

  void barrier() override {}

  std::unique_ptr<Comm> split(int color, int key) override {
    auto sub = inner_->split(color, key);
    return sub ? std::make_unique<NoComm>(std::move(sub)) : nullptr;
  }

 private:
  at::Tensor own_chunk(at::Tensor& out, int64_t n) { return out.view({-1}).narrow(0, rank() * n, n); }
  std::unique_ptr<Comm> owned_;
  Comm* inner_;
};

}  // namespace

std::unique_ptr<Comm> make_no_comm(std::unique_ptr<Comm> inner) { return std::make_unique<NoComm>(std::move(inner)); }
std::unique_ptr<Comm> make_no_comm(Comm& inner) { return std::make_unique<NoComm>(inner); }

}  // namespace pkb::comm
