// The communicator references use: the collectives of torch.distributed over NCCL on the
// CUDA device, over gloo on the CPU device, and over pkb's shared-memory communicator where
// ranks share a GPU (--ref-comm picks gloo or shm wherever there is no NCCL).
//
// All tensors are on the rank's device. NCCL calls are enqueued on the current CUDA
// stream, like torch.distributed's; gloo and shm calls return when done. Tensors need not
// be contiguous for inputs; outputs must be contiguous. Any dtype moves; reductions take
// floating, integer and complex types (complex sums only).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace pkb {

enum class ReduceOp { Sum, Prod, Min, Max, Avg };

// One send or receive of a batch (batch_isend_irecv).
struct P2POp {
  enum Kind { Send, Recv } kind;
  at::Tensor tensor;
  int peer;
};

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "nccl", "gloo", "shm", "none" (no communication)
  virtual at::Device device() const = 0;

  virtual void all_reduce(at::Tensor& t, ReduceOp op = ReduceOp::Sum) = 0;
  virtual void broadcast(at::Tensor& t, int root) = 0;
  // The root's tensor receives the reduction; the others' are left as they were.
  virtual void reduce(at::Tensor& t, int root, ReduceOp op = ReduceOp::Sum) = 0;
  // out = cat(in of rank 0, ..., in of rank size-1) along dim 0.
  virtual void all_gather(at::Tensor& out, const at::Tensor& in) = 0;
  // out = chunk rank() (along dim 0) of the reduction of every rank's in.
  virtual void reduce_scatter(at::Tensor& out, const at::Tensor& in, ReduceOp op = ReduceOp::Sum) = 0;
  // Rows (dim 0) of in go to ranks in order, in_splits[r] rows to rank r; out receives
  // out_splits[r] rows from rank r. Empty split lists mean equal chunks.
  virtual void all_to_all(at::Tensor& out, const at::Tensor& in, const std::vector<int64_t>& out_splits = {},
                          const std::vector<int64_t>& in_splits = {}) = 0;
  // On the root, out = cat of every rank's in along dim 0; elsewhere out is untouched.
  virtual void gather(at::Tensor& out, const at::Tensor& in, int root) = 0;
  // The root's in is split in size() equal chunks along dim 0; rank r receives chunk r.
  virtual void scatter(at::Tensor& out, const at::Tensor& in, int root) = 0;
  // Sends and receives that progress together (ring and halo exchanges).
  virtual void batch_p2p(std::vector<P2POp>& ops) = 0;
  virtual void barrier() = 0;
  // Collective over this communicator. Ranks with equal color form a sub-communicator,
  // ordered by key then rank; color < 0 takes no part and gets nullptr.
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;

  // Out-of-place forms: `out` (contiguous, the shape of `in`) receives the result, `in` is
  // left alone. NCCL does them natively; others copy, then run the in-place form.
  virtual void all_reduce_into(at::Tensor& out, const at::Tensor& in, ReduceOp op = ReduceOp::Sum);
  // Every rank's out = the root's in.
  virtual void broadcast_into(at::Tensor& out, const at::Tensor& in, int root);
  // The root's out = the reduction of every rank's in; elsewhere out = in.
  virtual void reduce_into(at::Tensor& out, const at::Tensor& in, int root, ReduceOp op = ReduceOp::Sum);

  // Conveniences built on the above.
  void send(const at::Tensor& t, int peer);
  void recv(at::Tensor& t, int peer);
  // All-gather of tensors whose dim 0 differs by rank; returns every rank's tensor.
  std::vector<at::Tensor> all_gather_uneven(const at::Tensor& in);
  // all_gather into a new tensor.
  at::Tensor all_gather(const at::Tensor& in);
};

}  // namespace pkb
