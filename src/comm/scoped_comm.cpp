// Every call of a communicator as a RecordFunction user scope ("comm::all_reduce", ...), so
// that --profile-ops (jobs/op_profile.hpp) names the time a reference spends in its
// communicator beside its ATen ops. Used only while profiling: the backends stay as they are.
#include <ATen/record_function.h>

#include "comm/comms.hpp"

namespace pkb::comm {

namespace {

class ScopedComm : public Comm {
 public:
  explicit ScopedComm(std::unique_ptr<Comm> owned) : owned_(std::move(owned)), inner_(owned_.get()) {}
  explicit ScopedComm(Comm& inner) : inner_(&inner) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  at::Device device() const override { return inner_->device(); }

  void all_reduce(at::Tensor& t, ReduceOp op) override {
    RECORD_USER_SCOPE("comm::all_reduce");
    inner_->all_reduce(t, op);
  }
  void broadcast(at::Tensor& t, int root) override {
    RECORD_USER_SCOPE("comm::broadcast");
    inner_->broadcast(t, root);
  }
  void reduce(at::Tensor& t, int root, ReduceOp op) override {
    RECORD_USER_SCOPE("comm::reduce");
    inner_->reduce(t, root, op);
  }
  void all_gather(at::Tensor& out, const at::Tensor& in) override {
    RECORD_USER_SCOPE("comm::all_gather");
    inner_->all_gather(out, in);
  }
  void reduce_scatter(at::Tensor& out, const at::Tensor& in, ReduceOp op) override {
    RECORD_USER_SCOPE("comm::reduce_scatter");
    inner_->reduce_scatter(out, in, op);
  }
  void all_to_all(at::Tensor& out, const at::Tensor& in, const std::vector<int64_t>& out_splits,
                  const std::vector<int64_t>& in_splits) override {
    RECORD_USER_SCOPE("comm::all_to_all");
    inner_->all_to_all(out, in, out_splits, in_splits);
  }
  void gather(at::Tensor& out, const at::Tensor& in, int root) override {
    RECORD_USER_SCOPE("comm::gather");
    inner_->gather(out, in, root);
  }
  void scatter(at::Tensor& out, const at::Tensor& in, int root) override {
    RECORD_USER_SCOPE("comm::scatter");
    inner_->scatter(out, in, root);
  }
  void batch_p2p(std::vector<P2POp>& ops) override {
    RECORD_USER_SCOPE("comm::batch_p2p");
    inner_->batch_p2p(ops);
  }
  void barrier() override {
    RECORD_USER_SCOPE("comm::barrier");
    inner_->barrier();
  }
  std::unique_ptr<Comm> split(int color, int key) override {
    auto sub = inner_->split(color, key);
    return sub ? std::make_unique<ScopedComm>(std::move(sub)) : nullptr;
  }
  void all_reduce_into(at::Tensor& out, const at::Tensor& in, ReduceOp op) override {
    RECORD_USER_SCOPE("comm::all_reduce");
    inner_->all_reduce_into(out, in, op);
  }
  void broadcast_into(at::Tensor& out, const at::Tensor& in, int root) override {
    RECORD_USER_SCOPE("comm::broadcast");
    inner_->broadcast_into(out, in, root);
  }
  void reduce_into(at::Tensor& out, const at::Tensor& in, int root, ReduceOp op) override {
    RECORD_USER_SCOPE("comm::reduce");
    inner_->reduce_into(out, in, root, op);
  }

 private:
  std::unique_ptr<Comm> owned_;
  Comm* inner_;
};

}  // namespace

std::unique_ptr<Comm> make_scoped_comm(Comm& inner) { return std::make_unique<ScopedComm>(inner); }

}  // namespace pkb::comm
