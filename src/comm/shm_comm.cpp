// Shared memory, for the references' collectives where NCCL cannot run: ranks sharing a
// GPU (and, on request, the CPU device). Every rank owns one memfd region, mapped by every
// rank (as the CPU heap is): a slot that data is staged through, in pieces, and mailboxes
// for sends and receives; rank 0's region also holds the barriers of every communicator
// (the world and its splits). A collective is rounds of "write my piece, barrier, read the
// pieces I need, barrier". CUDA tensors are copied through the host; reductions run on the
// tensor's device, over the ranks in order, so every rank computes the same sums. gloo
// moves the same data over loopback TCP: seconds a call at the large presets on one H200.
#include <ATen/ATen.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "comm/comms.hpp"
#include "launch/placement.hpp"
#include "pkb/host.hpp"

namespace pkb::comm {

namespace {

constexpr int kMaxRanks = launch::kShmMaxRanks;  // placement falls back to gloo beyond
constexpr int kMaxComms = 1024;
constexpr size_t kSlotBytes = size_t{64} << 20;  // per rank: the most staged at once

struct alignas(64) Barrier {
  std::atomic<uint64_t> count, generation;
};
// Sender s's mailbox to world rank d, in s's region; the data sits in s's slot at d's part.
struct alignas(64) Mailbox {
  std::atomic<uint64_t> posted, consumed;
  int64_t len;
};
struct Control {  // rank 0's region
  std::atomic<uint32_t> next_comm;
  Barrier barriers[kMaxComms];
};
struct Region {
  Control control;  // used in rank 0's region only
  Mailbox out[kMaxRanks];
};
constexpr size_t kSlotOffset = (sizeof(Region) + 4095) & ~size_t{4095};  // the slot follows, page-aligned
constexpr size_t kRegionBytes = kSlotOffset + kSlotBytes;

// Spins, then yields, then sleeps: a peer may be a process sharing this core (the CPU
// candidates' own waits, include/pkb/host.hpp).
using host::Backoff;

// The regions of one run, shared by the world communicator and its splits.
struct Shared {
  int world_rank = 0, world = 1;
  std::vector<Region*> regions;
  ~Shared() {
    for (Region* r : regions) munmap(r, kRegionBytes);
  }
  Control& control() { return regions[0]->control; }
  char* slot(int w) { return reinterpret_cast<char*>(regions[w]) + kSlotOffset; }
  // A world rank's share of a slot, for pieces addressed to each rank.
  size_t share() const { return (kSlotBytes / world) & ~size_t{63}; }
};

at::Tensor byte_view(const at::Tensor& contiguous) {
  return contiguous.reshape({-1}).view(at::kByte);
}

at::Tensor host_bytes(char* p, int64_t n) { return at::from_blob(p, {n}, at::TensorOptions().dtype(at::kByte)); }

// What can be reduced: complex numbers as pairs (sums only); no bool or fp8 (as gloo).
void check_reducible(const at::Tensor& t, ReduceOp op) {
  if (t.is_complex() && op != ReduceOp::Sum && op != ReduceOp::Avg)
    throw std::invalid_argument("complex tensors reduce by sum only");
  if (t.scalar_type() == at::kBool || t.scalar_type() == at::kFloat8_e4m3fn || t.scalar_type() == at::kFloat8_e5m2)
    throw std::invalid_argument(std::string("cannot reduce ") + c10::toString(t.scalar_type()) +
                                " tensors; convert them first");
}

class ShmComm : public Comm {
 public:
  ShmComm(std::shared_ptr<Shared> sh, int id, std::vector<int> members, int rank, at::Device device)
      : sh_(std::move(sh)), id_(id), members_(std::move(members)), rank_(rank), device_(device) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string backend() const override { return "shm"; }
  at::Device device() const override { return device_; }

  void barrier() override {
    Barrier& b = sh_->control().barriers[id_];
    uint64_t gen = b.generation.load(std::memory_order_acquire);
    if (b.count.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint64_t>(size())) {
      b.count.store(0, std::memory_order_relaxed);
      b.generation.fetch_add(1, std::memory_order_release);
      return;
    }
    Backoff wait;
    while (b.generation.load(std::memory_order_acquire) == gen) wait.wait();
  }

  void all_reduce(at::Tensor& t, ReduceOp op) override { reduce_rounds(t, op, -1); }
  void reduce(at::Tensor& t, int root, ReduceOp op) override { reduce_rounds(t, op, root); }

  void broadcast(at::Tensor& t, int root) override {
    at::Tensor c = t.contiguous(), b = byte_view(c);
    int64_t n = b.numel(), step = static_cast<int64_t>(kSlotBytes);
    for (int64_t off = 0; off < n; off += step) {
      int64_t len = std::min(step, n - off);
      if (rank_ == root) host_bytes(my_slot(), len).copy_(b.narrow(0, off, len));
      barrier();
      if (rank_ != root) b.narrow(0, off, len).copy_(host_bytes(slot(root), len));
      barrier();
    }
    if (!c.is_same(t)) t.copy_(c);
  }

  void all_gather(at::Tensor& out, const at::Tensor& in) override { gather_rounds(out, in, -1); }
  void gather(at::Tensor& out, const at::Tensor& in, int root) override { gather_rounds(out, in, root); }

  void reduce_scatter(at::Tensor& out, const at::Tensor& in, ReduceOp op) override {
    check_rows(in, out.numel() * size(), "reduce_scatter");
    check_reducible(in, op);
    at::Tensor src = in.contiguous().reshape({-1}), dst = out.contiguous().reshape({-1});
    if (src.is_complex()) src = at::view_as_real(src).reshape({-1}), dst = at::view_as_real(dst).reshape({-1});
    int64_t n = dst.numel(), es = src.element_size(), step = static_cast<int64_t>(share()) / es;
    for (int64_t off = 0; off < n; off += step) {
      int64_t len = std::min(step, n - off);
      for (int p = 0; p < size(); ++p)  // my contribution to rank p's chunk
        host_bytes(my_slot() + p * share(), len * es).copy_(byte_view(src.narrow(0, p * n + off, len)));
      barrier();
      dst.narrow(0, off, len).copy_(sum_pieces(len, src.scalar_type(), op, rank_ * share()));
      barrier();
    }
    if (op == ReduceOp::Avg) dst.div_(size());
    write_back(out, dst);
  }

  void all_to_all(at::Tensor& out, const at::Tensor& in, const std::vector<int64_t>& out_splits,
                  const std::vector<int64_t>& in_splits) override {
    int64_t in_row = row_bytes(in), out_row = row_bytes(out);
    if (in_row != out_row) throw std::invalid_argument("all_to_all: rows of in and out differ in size");
    at::Tensor src = byte_view(in.contiguous()), dst_c = out.contiguous(), dst = byte_view(dst_c);
    std::vector<int64_t> so = offsets(in_splits, rows(in)), ro = offsets(out_splits, rows(out));
    // Every rank learns the largest message, so that all take the same number of rounds.
    int64_t most = 0;
    for (int p = 0; p < size(); ++p) most = std::max(most, (so[p + 1] - so[p]) * in_row);
    most = all_max(most);
    int64_t step = static_cast<int64_t>(share());
    for (int64_t off = 0; off < most; off += step) {
      for (int p = 0; p < size(); ++p) {
        int64_t have = (so[p + 1] - so[p]) * in_row, len = std::clamp<int64_t>(have - off, 0, step);
        if (len) host_bytes(my_slot() + p * share(), len).copy_(src.narrow(0, so[p] * in_row + off, len));
      }
      barrier();
      for (int p = 0; p < size(); ++p) {
        int64_t want = (ro[p + 1] - ro[p]) * out_row, len = std::clamp<int64_t>(want - off, 0, step);
        if (len) dst.narrow(0, ro[p] * out_row + off, len).copy_(host_bytes(slot(p) + rank_ * share(), len));
      }
      barrier();
    }
    if (!dst_c.is_same(out)) out.copy_(dst_c);
  }

  void scatter(at::Tensor& out, const at::Tensor& in, int root) override {
    at::Tensor dst_c = out.contiguous(), dst = byte_view(dst_c);
    at::Tensor src;
    if (rank_ == root) {
      check_rows(in, out.numel() * size(), "scatter");
      src = byte_view(in.contiguous());
    }
    int64_t n = dst.numel(), step = static_cast<int64_t>(share());
    for (int64_t off = 0; off < n; off += step) {
      int64_t len = std::min(step, n - off);
      if (rank_ == root)
        for (int p = 0; p < size(); ++p)
          host_bytes(my_slot() + p * share(), len).copy_(src.narrow(0, p * n + off, len));
      barrier();
      dst.narrow(0, off, len).copy_(host_bytes(slot(root) + rank_ * share(), len));
      barrier();
    }
    if (!dst_c.is_same(out)) out.copy_(dst_c);
  }

  void batch_p2p(std::vector<P2POp>& ops) override {
    struct Move {
      at::Tensor bytes, staged;  // staged: the contiguous tensor received into
      P2POp* op = nullptr;
      int64_t done = 0;
      int peer;  // world rank
      bool send;
    };
    std::vector<Move> moves;
    // Sends to myself meet my receives from myself, in order (as NCCL's do).
    std::vector<at::Tensor> to_self;
    for (auto& op : ops)
      if (op.peer == rank_ && op.kind == P2POp::Send) to_self.push_back(op.tensor);
    size_t next_self = 0;
    for (auto& op : ops) {
      if (op.peer < 0 || op.peer >= size())
        throw std::invalid_argument("batch_p2p: peer " + std::to_string(op.peer) + " is not a rank of " +
                                    std::to_string(size()));
      if (op.peer == rank_) {
        if (op.kind == P2POp::Recv) {
          if (next_self == to_self.size()) throw std::invalid_argument("batch_p2p: a receive from myself without a send");
          op.tensor.copy_(to_self[next_self++].view(op.tensor.sizes()));
        }
        continue;
      }
      Move m;
      m.op = &op;
      m.send = op.kind == P2POp::Send;
      m.peer = members_[op.peer];
      m.staged = op.tensor.contiguous();
      m.bytes = byte_view(m.staged);
      moves.push_back(m);
    }
    int me = sh_->world_rank;
    int64_t step = static_cast<int64_t>(sh_->share());
    // Pieces go in order per peer and direction: the k-th send to a peer meets its k-th
    // receive from us.
    auto first_open = [&](int peer, bool send) -> Move* {
      for (auto& m : moves)
        if (m.peer == peer && m.send == send && m.done < m.bytes.numel()) return &m;
      return nullptr;
    };
    Backoff wait;
    for (;;) {
      bool open = false, moved = false;
      for (auto& m : moves) {
        if (m.done >= m.bytes.numel() || first_open(m.peer, m.send) != &m) {
          open = open || m.done < m.bytes.numel();
          continue;
        }
        open = true;
        if (m.send) {
          Mailbox& box = sh_->regions[me]->out[m.peer];
          if (box.consumed.load(std::memory_order_acquire) != box.posted.load(std::memory_order_relaxed)) continue;
          int64_t len = std::min(step, m.bytes.numel() - m.done);
          host_bytes(sh_->slot(me) + m.peer * sh_->share(), len).copy_(m.bytes.narrow(0, m.done, len));
          box.len = len;
          box.posted.fetch_add(1, std::memory_order_release);
          m.done += len;
        } else {
          Mailbox& box = sh_->regions[m.peer]->out[me];
          if (box.posted.load(std::memory_order_acquire) == box.consumed.load(std::memory_order_relaxed)) continue;
          int64_t len = box.len;
          if (len > m.bytes.numel() - m.done)
            throw std::invalid_argument("batch_p2p: rank " + std::to_string(m.peer) + " sent more bytes than " +
                                        std::to_string(m.bytes.numel()) + " received");
          m.bytes.narrow(0, m.done, len).copy_(host_bytes(sh_->slot(m.peer) + me * sh_->share(), len));
          box.consumed.fetch_add(1, std::memory_order_release);
          m.done += len;
        }
        moved = true;
      }
      if (!open) break;
      if (!moved) wait.wait();
    }
    // My slot holds what I sent until it is read: wait, so that the next call may reuse it.
    for (auto& m : moves)
      if (m.send) {
        Mailbox& box = sh_->regions[me]->out[m.peer];
        Backoff drain;
        while (box.consumed.load(std::memory_order_acquire) != box.posted.load(std::memory_order_relaxed)) drain.wait();
      }
    for (auto& m : moves)
      if (!m.send && !m.staged.is_same(m.op->tensor)) m.op->tensor.copy_(m.staged);
  }

  std::unique_ptr<Comm> split(int color, int key) override {
    SplitPlan plan = plan_split(*this, color, key);
    // The new communicator's first member takes a barrier for it; its members learn which.
    int64_t id = -1;
    if (plan.index == 0) {
      id = sh_->control().next_comm.fetch_add(1);
      if (id >= kMaxComms)
        throw std::runtime_error("more than " + std::to_string(kMaxComms) + " communicators split off");
    }
    at::Tensor ids = Comm::all_gather(at::full({1}, id, at::kLong).to(device_)).cpu();
    if (plan.index < 0) return nullptr;
    std::vector<int> world_ranks;
    for (int m : plan.members) world_ranks.push_back(members_[m]);
    int leader = plan.members[0];
    return std::make_unique<ShmComm>(sh_, static_cast<int>(ids[leader].item<int64_t>()), world_ranks, plan.index,
                                     device_);
  }

 private:
  char* slot(int p) { return sh_->slot(members_[p]); }
  char* my_slot() { return slot(rank_); }
  size_t share() const { return sh_->share(); }

  static int64_t rows(const at::Tensor& t) { return t.dim() ? t.size(0) : 1; }
  static int64_t row_bytes(const at::Tensor& t) {
    int64_t n = t.element_size();
    for (int64_t d = 1; d < t.dim(); ++d) n *= t.size(d);
    return n;
  }
  std::vector<int64_t> offsets(const std::vector<int64_t>& splits, int64_t n) const {
    std::vector<int64_t> off(size() + 1, 0);
    for (int p = 0; p < size(); ++p) off[p + 1] = off[p] + (splits.empty() ? n / size() : splits.at(p));
    if (off[size()] != n)
      throw std::invalid_argument("all_to_all: splits add up to " + std::to_string(off[size()]) + " rows, not " +
                                  std::to_string(n));
    return off;
  }
  void check_rows(const at::Tensor& big, int64_t want, const char* op) const {
    if (big.numel() != want)
      throw std::invalid_argument(std::string(op) + ": tensor has " + std::to_string(big.numel()) +
                                  " elements, expected " + std::to_string(want));
  }
  static void write_back(at::Tensor& out, const at::Tensor& flat) {
    at::Tensor v = out.is_complex() ? at::view_as_real(out) : out;
    if (!(v.is_contiguous() && v.data_ptr() == flat.data_ptr())) v.copy_(flat.view(v.sizes()));
  }

  // The largest of every rank's value.
  int64_t all_max(int64_t v) {
    std::memcpy(my_slot(), &v, sizeof v);
    barrier();
    for (int p = 0; p < size(); ++p) {
      int64_t x;
      std::memcpy(&x, slot(p), sizeof x);
      v = std::max(v, x);
    }
    barrier();
    return v;
  }

  // The reduction over the ranks, in rank order, of `len` elements of `type` at `at` in
  // every rank's slot, on this rank's device.
  at::Tensor sum_pieces(int64_t len, at::ScalarType type, ReduceOp op, size_t at) {
    bool narrow_float = type == at::kHalf || type == at::kBFloat16;
    at::Tensor acc;
    for (int p = 0; p < size(); ++p) {
      at::Tensor x = at::from_blob(slot(p) + at, {len}, at::TensorOptions().dtype(type)).to(device_);
      if (narrow_float) x = x.to(at::kFloat);
      if (p == 0) {  // on the CPU device x is rank 0's slot itself: never sum into it
        acc = device_.is_cpu() && !narrow_float ? x.clone() : x;
        continue;
      }
      switch (op) {
        case ReduceOp::Sum: case ReduceOp::Avg: acc.add_(x); break;
        case ReduceOp::Prod: acc.mul_(x); break;
        case ReduceOp::Min: acc = at::minimum(acc, x); break;
        case ReduceOp::Max: acc = at::maximum(acc, x); break;
      }
    }
    return acc.to(type);
  }

  // all_reduce (root < 0) and reduce: rounds of a slot's worth of elements.
  void reduce_rounds(at::Tensor& t, ReduceOp op, int root) {
    check_reducible(t, op);
    at::Tensor c = t.contiguous().reshape({-1});
    if (c.is_complex()) c = at::view_as_real(c).reshape({-1});
    int64_t n = c.numel(), es = c.element_size(), step = static_cast<int64_t>(kSlotBytes) / es;
    at::Tensor result = root < 0 || rank_ == root ? at::empty_like(c) : at::Tensor();
    for (int64_t off = 0; off < n; off += step) {
      int64_t len = std::min(step, n - off);
      host_bytes(my_slot(), len * es).copy_(byte_view(c.narrow(0, off, len)));
      barrier();
      if (result.defined()) result.narrow(0, off, len).copy_(sum_pieces(len, c.scalar_type(), op, 0));
      barrier();
    }
    if (!result.defined()) return;
    if (op == ReduceOp::Avg) result.div_(size());
    write_back(t, result);
  }

  // all_gather (root < 0) and gather.
  void gather_rounds(at::Tensor& out, const at::Tensor& in, int root) {
    bool receives = root < 0 || rank_ == root;
    if (receives) check_rows(out, in.numel() * size(), root < 0 ? "all_gather" : "gather");
    at::Tensor src = byte_view(in.contiguous());
    at::Tensor dst_c = receives ? out.contiguous() : at::Tensor(), dst = receives ? byte_view(dst_c) : at::Tensor();
    int64_t n = src.numel(), step = static_cast<int64_t>(kSlotBytes);
    for (int64_t off = 0; off < n; off += step) {
      int64_t len = std::min(step, n - off);
      host_bytes(my_slot(), len).copy_(src.narrow(0, off, len));
      barrier();
      if (receives)
        for (int p = 0; p < size(); ++p) dst.narrow(0, p * n + off, len).copy_(host_bytes(slot(p), len));
      barrier();
    }
    if (receives && !dst_c.is_same(out)) out.copy_(dst_c);
  }

  std::shared_ptr<Shared> sh_;
  int id_;
  std::vector<int> members_;  // world ranks, in this communicator's order
  int rank_;
  at::Device device_;
};

}  // namespace

std::unique_ptr<Comm> make_shm(launch::Client& client, int rank, int world, at::Device device) {
  if (world > kMaxRanks)
    throw std::invalid_argument("the shared-memory communicator takes up to " + std::to_string(kMaxRanks) + " ranks");
  auto sh = std::make_shared<Shared>();
  sh->world_rank = rank;
  sh->world = world;
  for (void* p : client.map_shared("pkb-comm", rank, world, kRegionBytes)) sh->regions.push_back(static_cast<Region*>(p));
  // Barrier 0 is the world's; splits take the next ones. Fresh memfds are zero, so the
  // counters start at zero everywhere.
  if (rank == 0) sh->control().next_comm.store(1);
  client.barrier(world);
  std::vector<int> members(world);
  for (int r = 0; r < world; ++r) members[r] = r;
  return std::make_unique<ShmComm>(sh, 0, members, rank, device);
}

}  // namespace pkb::comm
