// A rank: `pkb __worker`, started by the parent (launch/group.cpp). It asks the parent for
// its job over the bootstrap channel, sets up its device, communicator and symmetric
// heap, and runs the job. Every failure is sent to the parent as an Error event before
// the rank exits non-zero, so the parent can say what happened where.
#include "worker/worker.hpp"

#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "heap/heap.hpp"
#include "launch/client.hpp"
#include "spec/spec.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/save.hpp"
#include "worker/references.hpp"
#include "eval/jobs.hpp"
#include "worker/rank.hpp"
#include "worker/run_reference.hpp"

namespace pkb::worker {

Rank::Rank(launch::Client& c, nlohmann::json j) : client(c), job(std::move(j)) {
  rank = job.at("rank");
  world = job.at("world");
  for (auto& lib : job.value("reference_libs", nlohmann::json::array())) load_reference_library(lib.get<std::string>());
  if (job.at("device") == "cuda") device = at::Device(at::kCUDA, job.at("gpu").get<int>());
  device::select(device);
  std::string backend = job.at("comm");
  comm = backend == "nccl" ? comm::make_nccl(client, rank, world, device) : comm::make_gloo(client, rank, world, device);
  if (size_t bytes = job.value("heap_bytes", size_t{0})) make_heap(bytes);
}

void Rank::make_heap(size_t bytes, size_t pad_bytes) {
  heap = device.is_cuda() ? heap::make_cuda_heap(client, rank, world, device.index(), bytes, pad_bytes)
                          : heap::make_host_heap(client, rank, world, bytes, pad_bytes);
}

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

json dryrun(Rank& r) {
  spec::ProblemSpec spec = spec::load_spec(r.job.at("spec"));
  std::string preset = r.job.value("preset", "default");
  at::ScalarType dt = tensor::resolve(r.job.value("dtype", spec.dtype), at::kFloat);
  uint64_t seed = std::stoull(r.job.at("seed").get<std::string>());
  // The world communicator stays with the Rank: it must outlive an exception until
  // worker_main has reported it (see there).
  Comm* comm = r.comm.get();
  std::unique_ptr<Comm> no_comm;
  if (r.job.value("no_comm", false)) comm = (no_comm = comm::make_no_comm(*r.comm)).get();
  RefCtx ctx(spec, spec.vars_for(preset, r.world, r.rank), r.device, dt, comm, seed);
  auto ref = create_reference(spec.slug);
  ref->setup(ctx);

  int trials = r.job.value("trials", 1);
  std::string save = r.job.value("save_dir", "");
  json outs = json::array();
  double run_ms = 0;
  for (int t = 0; t < trials; ++t) {
    r.client.phase("trial", t);
    ctx.begin_trial(t);
    Inputs in = build_inputs(ctx, *ref);
    Inputs pristine = in.clone();
    auto t0 = Clock::now();
    std::vector<at::Tensor> y = ref->run(ctx, in);
    device::synchronize(r.device);
    run_ms += ms_since(t0);
    check_outputs(ctx, y, "the reference");
    for (size_t i = 0; i < in.size(); ++i)
      if (spec.inputs[i].readonly && !in.at(i).equal(pristine.at(i)))
        throw std::runtime_error("the reference changed its read-only input '" + in.names()[i] +
                                 "' (fix the reference, or declare the input readonly = false)");
    // Trials stay apart: a rank that skipped a collective waits here, so its peers' wait
    // in this trial's collective is what overruns, not a mismatch with the next trial.
    r.client.phase("sync", t);
    r.client.barrier(r.world);
    if (t == 0) {
      for (size_t i = 0; i < y.size(); ++i)
        outs.push_back({{"name", spec.outputs[i].name},
                        {"shape", y[i].sizes().vec()},
                        {"dtype", spec::dtype_name(tensor::from_aten(y[i].scalar_type()))}});
      if (!save.empty()) {
        r.client.phase("save");
        std::filesystem::create_directories(save);
        std::string base = save + "/rank_" + std::to_string(r.rank);
        tensor::save_outputs(base + ".pt", y);
        tensor::save_named(base + "_inputs.pt", in.names(), pristine.tensors());
      }
    }
  }
  return {{"outputs", outs}, {"trials", trials}, {"run_ms", run_ms}, {"comm", comm->backend()}};
}

// The runtime's own checks: the communicator, every peer's heap region, and how long a
// barrier through the signal pads takes.
json selftest(Rank& r) {
  json out;
  at::Tensor x = at::full({4}, r.rank + 1, at::TensorOptions().device(r.device).dtype(at::kFloat));
  r.comm->all_reduce(x);
  double want = r.world * (r.world + 1) / 2.0;
  out["allreduce_ok"] = x.cpu().eq(want).all().item<bool>();

  heap::Heap& h = *r.heap;
  size_t off = h.allocate(sizeof(int64_t) * 2);
  int64_t mine[2] = {r.rank, 1000 + r.rank};
  void* my_slot = static_cast<char*>(h.base(r.rank)) + off;
  auto copy_in = [&](void* dst, const void* src) {
    at::Tensor s = at::from_blob(const_cast<void*>(src), {2}, at::kLong);
    at::Tensor d = at::from_blob(dst, {2}, at::TensorOptions().dtype(at::kLong).device(r.device));
    d.copy_(s);
  };
  copy_in(my_slot, mine);
  device::synchronize(r.device);
  r.client.barrier(r.world);
  bool peers_ok = true;
  for (int p = 0; p < r.world; ++p) {
    at::Tensor v = at::from_blob(static_cast<char*>(h.base(p)) + off, {2},
                                 at::TensorOptions().dtype(at::kLong).device(r.device)).cpu();
    peers_ok = peers_ok && v[0].item<int64_t>() == p && v[1].item<int64_t>() == 1000 + p;
  }
  out["heap_peers_ok"] = peers_ok;

  int iters = r.job.value("barrier_iters", 2000);
  for (int i = 0; i < 50; ++i) device::heap_barrier(h, 0);
  device::synchronize(r.device);
  r.client.barrier(r.world);
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) device::heap_barrier(h, 0);
  device::synchronize(r.device);
  out["barrier_us"] = ms_since(t0) * 1000.0 / iters;
  out["barrier_iters"] = iters;
  return out;
}

}  // namespace

int worker_main() {
  launch::Client* client = nullptr;
  // Declared outside the try: the error must reach the parent while the communicator is
  // still up, or peers would report the closed connection first and take the blame.
  std::unique_ptr<Rank> r;
  try {
    client = &launch::Client::from_env();
    int rank = std::atoi(std::getenv("PKB_RANK") ? std::getenv("PKB_RANK") : "0");
    json job = json::parse(client->hello(rank));
    client->phase("init");
    r = std::make_unique<Rank>(*client, job);
    std::string mode = job.at("mode");
    json result;
    if (mode == "dryrun") result = dryrun(*r);
    else if (mode == "selftest") result = selftest(*r);
    else if (mode == "eval") result = eval::run_eval(*r);
    else if (mode == "validate") result = eval::run_validate(*r);
    else throw std::runtime_error("unknown worker mode " + mode);
    result["rank"] = r->rank;
    client->phase("finish");
    r->comm.reset();
    r->heap.reset();
    device::synchronize(r->device);
    client->result(result.dump());
    return 0;
  } catch (const std::exception& e) {
    auto* typed = dynamic_cast<const RankError*>(&e);
    std::cerr << "pkb rank error: " << e.what() << std::endl;
    if (client) {
      try {
        client->error(typed ? typed->kind : "error", e.what());
      } catch (...) {
      }
    }
    // No destructors: tearing down a communicator whose peers are gone can hang.
    std::_Exit(1);
  }
}

}  // namespace pkb::worker
