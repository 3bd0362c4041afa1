// gloo, as libtorch ships it (ProcessGroupGloo inside libtorch_cpu.so).
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <stdexcept>

#include "comm/comms.hpp"
#include "comm/hub_store.hpp"

// The torch wheel ships ProcessGroupGloo.hpp but not the gloo headers it includes, so it
// cannot be included. These declarations name the same class and members as torch 2.11's
// header (torch/csrc/distributed/c10d/ProcessGroupGloo.hpp): the constructor, the
// destructor (the class's key function, so its vtable stays in libtorch) and Options,
// whose layout is reproduced exactly. The object is used only through c10d::Backend's
// virtual interface; `storage_` is room for the real members, which libtorch's
// constructor lays out (the real object is far smaller than 16 KiB).
namespace gloo::transport {
class Device;
}
namespace c10d {
class ProcessGroupGloo : public Backend {
 public:
  struct Options : public Backend::Options {
    explicit Options(std::chrono::milliseconds timeout);
    std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
    int threads{2};
  };
  static std::shared_ptr<::gloo::transport::Device> createDeviceForHostname(const std::string& hostname,
                                                                            bool lazyInit);
  ProcessGroupGloo(const c10::intrusive_ptr<Store>& store, int rank, int size, c10::intrusive_ptr<Options> options);
  ~ProcessGroupGloo() override;

 private:
  alignas(64) unsigned char storage_[1 << 14];
};
}  // namespace c10d

namespace pkb::comm {

namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: case ReduceOp::Avg: return c10d::ReduceOp::SUM;
    case ReduceOp::Prod: return c10d::ReduceOp::PRODUCT;
    case ReduceOp::Min: return c10d::ReduceOp::MIN;
    case ReduceOp::Max: return c10d::ReduceOp::MAX;
  }
  return c10d::ReduceOp::SUM;
}

// A byte view of a contiguous tensor, rows along dim 0 kept: gloo moves any dtype so.
int64_t row_elems(const at::Tensor& t) {
  int64_t n = 1;
  for (int64_t d = 1; d < t.dim(); ++d) n *= t.size(d);
  return n;
}
at::Tensor bytes(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return c.view({c.dim() ? c.size(0) : 1, row_elems(c)}).view(at::kByte);
}

// What gloo can reduce: complex as pairs of reals (sums only); no bool or fp8.
at::Tensor reducible(const at::Tensor& t, ReduceOp op) {
  if (t.is_complex()) {
    if (op != ReduceOp::Sum && op != ReduceOp::Avg) throw std::invalid_argument("complex tensors reduce by sum only");
    return at::view_as_real(t);
  }
  if (t.scalar_type() == at::kBool || t.scalar_type() == at::kFloat8_e4m3fn || t.scalar_type() == at::kFloat8_e5m2)
    throw std::invalid_argument(std::string("cannot reduce ") + c10::toString(t.scalar_type()) +
                                " tensors; convert them first");
  return t;
}

class GlooComm : public Comm {
 public:
  GlooComm(c10::intrusive_ptr<c10d::Store> store, const std::string& prefix, int rank, int size, at::Device device)
      : store_(std::move(store)), prefix_(prefix), rank_(rank), size_(size), device_(device) {
    auto opts = c10::make_intrusive<c10d::ProcessGroupGloo::Options>(std::chrono::hours(24));
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1", false));
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
    pg_ = c10::intrusive_ptr<c10d::Backend>::unsafe_steal_from_new(
        new c10d::ProcessGroupGloo(prefixed, rank, size, opts));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "gloo"; }
  at::Device device() const override { return device_; }

  void all_reduce(at::Tensor& t, ReduceOp op) override {
    at::Tensor h = host(t).contiguous();
    std::vector<at::Tensor> ts{reducible(h, op)};
    pg_->allreduce(ts, c10d::AllreduceOptions{to_c10d(op)})->wait();
    if (op == ReduceOp::Avg) h.div_(size_);
    back(t, h);
  }

  void broadcast(at::Tensor& t, int root) override {
    at::Tensor h = host(t).contiguous();
    std::vector<at::Tensor> ts{bytes(h)};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    pg_->broadcast(ts, o)->wait();
    back(t, ts[0].view(h.scalar_type()).view(h.sizes()));
  }

  void reduce(at::Tensor& t, int root, ReduceOp op) override {
    // gloo leaves partial sums in non-root buffers; references expect them untouched.
    at::Tensor h = host(t).contiguous().clone();
    std::vector<at::Tensor> ts{reducible(h, op)};
    c10d::ReduceOptions o;
    o.reduceOp = to_c10d(op);
    o.rootRank = root;
    pg_->reduce(ts, o)->wait();
    if (rank_ == root) {
      if (op == ReduceOp::Avg) h.div_(size_);
      back(t, h);
    }
  }

  void all_gather(at::Tensor& out, const at::Tensor& in) override {
    check_rows(out, in.numel() * size_, "all_gather");
    at::Tensor src = bytes(host(in));
    at::Tensor dst = at::empty({size_ * src.size(0), src.size(1)}, src.options());
    std::vector<std::vector<at::Tensor>> outs(1);
    for (int r = 0; r < size_; ++r) outs[0].push_back(dst.narrow(0, r * src.size(0), src.size(0)));
    std::vector<at::Tensor> ins{src};
    pg_->allgather(outs, ins)->wait();
    back(out, dst.view(in.scalar_type()).view(out.sizes()));
  }

  void reduce_scatter(at::Tensor& out, const at::Tensor& in, ReduceOp op) override {
    check_rows(in, out.numel() * size_, "reduce_scatter");
    at::Tensor full = host(in).contiguous().clone();
    std::vector<at::Tensor> ts{reducible(full, op)};
    pg_->allreduce(ts, c10d::AllreduceOptions{to_c10d(op)})->wait();
    if (op == ReduceOp::Avg) full.div_(size_);
    back(out, full.view({-1}).narrow(0, rank_ * out.numel(), out.numel()).view(out.sizes()));
  }

  void all_to_all(at::Tensor& out, const at::Tensor& in, const std::vector<int64_t>& out_splits,
                  const std::vector<int64_t>& in_splits) override {
    at::Tensor src = bytes(host(in));
    if (row_elems(in) != row_elems(out)) throw std::invalid_argument("all_to_all: rows of in and out differ in size");
    at::Tensor dst = at::empty({out.dim() ? out.size(0) : 1, row_elems(out) * out.element_size()}, src.options());
    std::vector<int64_t> os = out_splits, is = in_splits;
    pg_->alltoall_base(dst, src, os, is)->wait();
    back(out, dst.view(out.scalar_type()).view(out.sizes()));
  }

  void gather(at::Tensor& out, const at::Tensor& in, int root) override {
    at::Tensor src = bytes(host(in));
    std::vector<std::vector<at::Tensor>> outs;
    at::Tensor dst;
    if (rank_ == root) {
      check_rows(out, in.numel() * size_, "gather");
      dst = at::empty({size_ * src.size(0), src.size(1)}, src.options());
      outs.emplace_back();
      for (int r = 0; r < size_; ++r) outs[0].push_back(dst.narrow(0, r * src.size(0), src.size(0)));
    }
    std::vector<at::Tensor> ins{src};
    c10d::GatherOptions o;
    o.rootRank = root;
    pg_->gather(outs, ins, o)->wait();
    if (rank_ == root) back(out, dst.view(in.scalar_type()).view(out.sizes()));
  }

  void scatter(at::Tensor& out, const at::Tensor& in, int root) override {
    at::Tensor dst = bytes(host(out).contiguous().clone());
    std::vector<std::vector<at::Tensor>> ins;
    if (rank_ == root) {
      check_rows(in, out.numel() * size_, "scatter");
      at::Tensor src = bytes(host(in));
      ins.emplace_back();
      int64_t rows = src.size(0) / size_;
      for (int r = 0; r < size_; ++r) ins[0].push_back(src.narrow(0, r * rows, rows).contiguous());
      dst = at::empty({rows, src.size(1)}, src.options());
    }
    std::vector<at::Tensor> outs{dst};
    c10d::ScatterOptions o;
    o.rootRank = root;
    pg_->scatter(outs, ins, o)->wait();
    back(out, dst.view(out.scalar_type()).view(out.sizes()));
  }

  void batch_p2p(std::vector<P2POp>& ops) override {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    std::vector<std::vector<at::Tensor>> bufs(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      auto& op = ops[i];
      if (op.kind == P2POp::Send) {
        bufs[i] = {bytes(host(op.tensor)).view({-1})};
        works.push_back(pg_->send(bufs[i], op.peer, 0));
      } else {
        bufs[i] = {at::empty({op.tensor.numel() * op.tensor.element_size()}, at::kByte)};
        works.push_back(pg_->recv(bufs[i], op.peer, 0));
      }
    }
    for (auto& w : works) w->wait();
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == P2POp::Recv)
        back(ops[i].tensor, bufs[i][0].view(ops[i].tensor.scalar_type()).view(ops[i].tensor.sizes()));
  }

  void barrier() override { pg_->barrier()->wait(); }

  std::unique_ptr<Comm> split(int color, int key) override {
    SplitPlan plan = plan_split(*this, color, key);
    int seq = splits_++;
    if (plan.index < 0) return nullptr;
    std::string prefix = prefix_ + "/split" + std::to_string(seq) + "/" + std::to_string(color) + "/";
    return std::make_unique<GlooComm>(store_, prefix, plan.index, static_cast<int>(plan.members.size()), device_);
  }

 private:
  // gloo runs on host tensors; CUDA tensors go through the host (ranks sharing a GPU
  // must not use NCCL, and speed does not matter there).
  at::Tensor host(const at::Tensor& t) const { return t.is_cpu() ? t : t.cpu(); }
  static void back(at::Tensor& dst, const at::Tensor& src) {
    if (!dst.is_same(src)) dst.copy_(src);
  }
  void check_rows(const at::Tensor& big, int64_t want, const char* op) const {
    if (big.numel() != want)
      throw std::invalid_argument(std::string(op) + ": tensor has " + std::to_string(big.numel()) +
                                  " elements, expected " + std::to_string(want));
  }

  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  int rank_, size_;
  at::Device device_;
  c10::intrusive_ptr<c10d::Backend> pg_;
  int splits_ = 0;
};

}  // namespace

std::unique_ptr<Comm> make_gloo(launch::Client& client, int rank, int world, at::Device device) {
  return std::make_unique<GlooComm>(c10::make_intrusive<HubStore>(client), "gloo/world/", rank, world, device);
}

}  // namespace pkb::comm
