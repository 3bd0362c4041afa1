// NCCL on the rank's GPU, enqueued on the current stream like torch.distributed.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "comm/comms.hpp"

namespace pkb::comm {

namespace {

void check(ncclResult_t r, ncclComm_t comm, const char* what) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::string msg = std::string("NCCL ") + what + " failed: " + ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm); last && *last) msg += std::string(" (") + last + ")";
  throw std::runtime_error(msg);
}
#define NCCL_CHECK(call, comm) check((call), (comm), #call)

bool nccl_type(at::ScalarType t, ncclDataType_t& out) {
  switch (t) {
    case at::kFloat: out = ncclFloat32; return true;
    case at::kHalf: out = ncclFloat16; return true;
    case at::kBFloat16: out = ncclBfloat16; return true;
    case at::kDouble: out = ncclFloat64; return true;
    case at::kChar: out = ncclInt8; return true;
    case at::kByte: out = ncclUint8; return true;
    case at::kInt: out = ncclInt32; return true;
    case at::kLong: out = ncclInt64; return true;
    case at::kFloat8_e4m3fn: out = ncclFloat8e4m3; return true;
    case at::kFloat8_e5m2: out = ncclFloat8e5m2; return true;
    default: return false;
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Prod: return ncclProd;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Avg: return ncclAvg;
  }
  return ncclSum;
}

// A tensor NCCL can reduce: complex as pairs of reals (sums only).
at::Tensor reducible(const at::Tensor& t, ReduceOp op, ncclDataType_t& type) {
  at::Tensor v = t;
  if (t.is_complex()) {
    if (op != ReduceOp::Sum && op != ReduceOp::Avg) throw std::invalid_argument("complex tensors reduce by sum only");
    v = at::view_as_real(t);
  }
  if (v.scalar_type() == at::kBool || !nccl_type(v.scalar_type(), type))
    throw std::invalid_argument(std::string("NCCL cannot reduce ") + c10::toString(t.scalar_type()) + " tensors");
  return v;
}

size_t nbytes(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

class NcclComm : public Comm {
 public:
  NcclComm(ncclComm_t comm, int rank, int size, at::Device device) : comm_(comm), rank_(rank), size_(size), device_(device) {}
  ~NcclComm() override {
    if (comm_) ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  at::Device device() const override { return device_; }

  void all_reduce(at::Tensor& t, ReduceOp op) override {
    ncclDataType_t type;
    at::Tensor c = t.contiguous();
    at::Tensor v = reducible(c, op, type);
    NCCL_CHECK(ncclAllReduce(v.data_ptr(), v.data_ptr(), v.numel(), type, nccl_op(op), comm_, stream()), comm_);
    if (!c.is_same(t)) t.copy_(c);
  }

  void broadcast(at::Tensor& t, int root) override {
    at::Tensor c = t.contiguous();
    NCCL_CHECK(ncclBroadcast(c.data_ptr(), c.data_ptr(), nbytes(c), ncclUint8, root, comm_, stream()), comm_);
    if (!c.is_same(t)) t.copy_(c);
  }

  void reduce(at::Tensor& t, int root, ReduceOp op) override {
    ncclDataType_t type;
    at::Tensor c = t.contiguous();
    at::Tensor v = reducible(c, op, type);
    NCCL_CHECK(ncclReduce(v.data_ptr(), v.data_ptr(), v.numel(), type, nccl_op(op), root, comm_, stream()), comm_);
    if (rank_ == root && !c.is_same(t)) t.copy_(c);
  }

  void all_reduce_into(at::Tensor& out, const at::Tensor& in, ReduceOp op) override {
    ncclDataType_t type;
    at::Tensor src = reducible(in.contiguous(), op, type), dst = reducible(out, op, type);
    NCCL_CHECK(ncclAllReduce(src.data_ptr(), dst.data_ptr(), src.numel(), type, nccl_op(op), comm_, stream()), comm_);
  }

  void broadcast_into(at::Tensor& out, const at::Tensor& in, int root) override {
    at::Tensor src = in.contiguous();
    NCCL_CHECK(ncclBroadcast(src.data_ptr(), out.data_ptr(), nbytes(out), ncclUint8, root, comm_, stream()), comm_);
  }

  void reduce_into(at::Tensor& out, const at::Tensor& in, int root, ReduceOp op) override {
    ncclDataType_t type;
    at::Tensor src = reducible(in.contiguous(), op, type), dst = reducible(out, op, type);
    NCCL_CHECK(ncclReduce(src.data_ptr(), dst.data_ptr(), src.numel(), type, nccl_op(op), root, comm_, stream()), comm_);
    if (rank_ != root) out.copy_(in);  // NCCL writes only the root's
  }

  void all_gather(at::Tensor& out, const at::Tensor& in) override {
    expect(out, nbytes(in) * size_, "all_gather");
    at::Tensor src = in.contiguous();
    NCCL_CHECK(ncclAllGather(src.data_ptr(), out.data_ptr(), nbytes(src), ncclUint8, comm_, stream()), comm_);
  }

  void reduce_scatter(at::Tensor& out, const at::Tensor& in, ReduceOp op) override {
    expect(in, nbytes(out) * size_, "reduce_scatter");
    ncclDataType_t type;
    at::Tensor src = reducible(in.contiguous(), op, type);
    at::Tensor dst = reducible(out, op, type);
    NCCL_CHECK(ncclReduceScatter(src.data_ptr(), dst.data_ptr(), dst.numel(), type, nccl_op(op), comm_, stream()),
               comm_);
  }

  void all_to_all(at::Tensor& out, const at::Tensor& in, const std::vector<int64_t>& out_splits,
                  const std::vector<int64_t>& in_splits) override {
    at::Tensor src = in.contiguous();
    size_t in_row = row_bytes(src), out_row = row_bytes(out);
    if (in_row != out_row) throw std::invalid_argument("all_to_all: rows of in and out differ in size");
    auto counts = [&](const std::vector<int64_t>& splits, const at::Tensor& t) {
      std::vector<int64_t> c = splits;
      if (c.empty()) c.assign(size_, (t.dim() ? t.size(0) : 1) / size_);
      if (static_cast<int>(c.size()) != size_) throw std::invalid_argument("all_to_all: one split per rank");
      return c;
    };
    auto ins = counts(in_splits, src), outs = counts(out_splits, out);
    char* sp = static_cast<char*>(src.data_ptr());
    char* rp = static_cast<char*>(out.data_ptr());
    NCCL_CHECK(ncclGroupStart(), comm_);
    for (int r = 0; r < size_; ++r) {
      NCCL_CHECK(ncclSend(sp, ins[r] * in_row, ncclUint8, r, comm_, stream()), comm_);
      NCCL_CHECK(ncclRecv(rp, outs[r] * out_row, ncclUint8, r, comm_, stream()), comm_);
      sp += ins[r] * in_row;
      rp += outs[r] * out_row;
    }
    NCCL_CHECK(ncclGroupEnd(), comm_);
  }

  void gather(at::Tensor& out, const at::Tensor& in, int root) override {
    at::Tensor src = in.contiguous();
    size_t n = nbytes(src);
    if (rank_ == root) expect(out, n * size_, "gather");
    NCCL_CHECK(ncclGroupStart(), comm_);
    NCCL_CHECK(ncclSend(src.data_ptr(), n, ncclUint8, root, comm_, stream()), comm_);
    if (rank_ == root)
      for (int r = 0; r < size_; ++r)
        NCCL_CHECK(ncclRecv(static_cast<char*>(out.data_ptr()) + r * n, n, ncclUint8, r, comm_, stream()), comm_);
    NCCL_CHECK(ncclGroupEnd(), comm_);
  }

  void scatter(at::Tensor& out, const at::Tensor& in, int root) override {
    size_t n = nbytes(out);
    at::Tensor src;
    if (rank_ == root) {
      src = in.contiguous();
      expect(src, n * size_, "scatter");
    }
    NCCL_CHECK(ncclGroupStart(), comm_);
    if (rank_ == root)
      for (int r = 0; r < size_; ++r)
        NCCL_CHECK(ncclSend(static_cast<char*>(src.data_ptr()) + r * n, n, ncclUint8, r, comm_, stream()), comm_);
    NCCL_CHECK(ncclRecv(out.data_ptr(), n, ncclUint8, root, comm_, stream()), comm_);
    NCCL_CHECK(ncclGroupEnd(), comm_);
  }

  void batch_p2p(std::vector<P2POp>& ops) override {
    std::vector<at::Tensor> keep;
    NCCL_CHECK(ncclGroupStart(), comm_);
    for (auto& op : ops) {
      if (op.kind == P2POp::Send) {
        keep.push_back(op.tensor.contiguous());
        NCCL_CHECK(ncclSend(keep.back().data_ptr(), nbytes(op.tensor), ncclUint8, op.peer, comm_, stream()), comm_);
      } else {
        if (!op.tensor.is_contiguous()) throw std::invalid_argument("batch_p2p: receive into a contiguous tensor");
        NCCL_CHECK(ncclRecv(op.tensor.data_ptr(), nbytes(op.tensor), ncclUint8, op.peer, comm_, stream()), comm_);
      }
    }
    NCCL_CHECK(ncclGroupEnd(), comm_);
  }

  void barrier() override {
    at::Tensor t = at::zeros({1}, at::TensorOptions().device(device_).dtype(at::kFloat));
    all_reduce(t, ReduceOp::Sum);
    c10::cuda::getCurrentCUDAStream(device_.index()).synchronize();
  }

  std::unique_ptr<Comm> split(int color, int key) override {
    ncclComm_t sub = nullptr;
    NCCL_CHECK(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr), comm_);
    if (color < 0 || !sub) return nullptr;
    int r = 0, n = 0;
    NCCL_CHECK(ncclCommUserRank(sub, &r), sub);
    NCCL_CHECK(ncclCommCount(sub, &n), sub);
    return std::make_unique<NcclComm>(sub, r, n, device_);
  }

  ncclComm_t handle() const { return comm_; }

 private:
  cudaStream_t stream() const { return c10::cuda::getCurrentCUDAStream(device_.index()).stream(); }
  static size_t row_bytes(const at::Tensor& t) {
    size_t n = t.element_size();
    for (int64_t d = 1; d < t.dim(); ++d) n *= t.size(d);
    return n;
  }
  static void expect(const at::Tensor& t, size_t bytes, const char* op) {
    if (nbytes(t) != bytes || !t.is_contiguous())
      throw std::invalid_argument(std::string(op) + ": tensor of " + std::to_string(nbytes(t)) +
                                  " bytes (contiguous: " + (t.is_contiguous() ? "yes" : "no") + "), expected " +
                                  std::to_string(bytes) + " contiguous bytes");
  }

  ncclComm_t comm_;
  int rank_, size_;
  at::Device device_;
};

}  // namespace

void* nccl_handle(Comm* c) {
  auto* n = dynamic_cast<NcclComm*>(c);
  return n ? n->handle() : nullptr;
}

std::unique_ptr<Comm> make_nccl(launch::Client& client, int rank, int world, at::Device device) {
  ncclUniqueId id;
  if (rank == 0) {
    ncclGetUniqueId(&id);
    client.set("nccl/world/id", std::string(reinterpret_cast<char*>(&id), sizeof(id)));
  } else {
    std::string s = client.get("nccl/world/id");
    std::memcpy(&id, s.data(), sizeof(id));
  }
  c10::cuda::CUDAGuard guard(device);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, world, id, rank), nullptr, "ncclCommInitRank");
  return std::make_unique<NcclComm>(comm, rank, world, device);
}

}  // namespace pkb::comm
