// Candidates in the original ParallelKernelBench's format: a module defining
// solution(*inputs), run on every rank under the default torch.distributed process group,
// using torch's symmetric memory and utils.cuda_helpers.compile_cuda_extension. Part of
// libpkb_python.so (python_candidate.cpp has the interpreter and pkb's own .py candidates).
//
// pkb_python_prepare_original, before the sandbox: the rest of the heap pkb's harness left
// becomes the arena symmetric memory is cut from, and python/pkb/original (prepare()) makes
// the process group over a c10d store on the bootstrap channel, connects it, and puts pkb's
// torch.distributed._symmetric_memory and utils.cuda_helpers where the module imports them.
// pkb_python_load_original, inside it: the module is imported. Every call: the spec's
// [original] arguments are built from pkb's input buffers, solution runs, and what it
// returns is copied into pkb's outputs on the call's stream (eval/output_copy.hpp), its host
// time reported as the call's adapter time.
#include "python/embed.hpp"

#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "eval/python_plugin.hpp"
#include "heap/heap.hpp"
#include "pkb/host.hpp"
#include "pkb/solution.h"

#ifdef PKB_CUDA
#include <cuda_runtime.h>

namespace pkb::device {
// pkb's kernels (device/kernels.cu, in the pkb binary): its barrier, whose signal-pad
// protocol is torch's symmetric memory's (0 -> 1 to signal, 1 -> 0 to consume, slot
// channel * world + src), and one signal.
cudaError_t launch_barrier(uint32_t* const* pads, int rank, int world, int channel, cudaStream_t stream);
cudaError_t launch_signal(uint32_t* pad, int slot, bool put, cudaStream_t stream);
}  // namespace pkb::device
#endif

using namespace pkb::py;

namespace {

// ---- symmetric memory: blocks of the arena ------------------------------------------------

constexpr size_t kAlign = 256;
// torch's default signal pad: 32 blocks x 72 ranks of uint32 (CUDASymmetricMemoryTypes.hpp).
constexpr size_t kSignalPadBytes = 32 * 72 * sizeof(uint32_t);

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// A block of symmetric memory: its segment and offset there, the same on every rank.
struct Block {
  size_t segment = 0, offset = 0;
};

// Symmetric memory in segments, each mapped on every rank: first the tail of the heap pkb's
// harness leaves, then further heaps made when a request fits none (collectively: every
// rank allocates the same sizes in the same order, so they grow at the same call). Blocks
// are first fit, at the same segment and offset on every rank as long as every rank
// allocates and frees in the same order (rendezvous checks that they did).
class Arena {
 public:
  // The first segment: [begin, begin + size) of `bases` (every rank's heap).
  void reset(std::vector<void*> bases, size_t begin, size_t size) {
    std::lock_guard<std::mutex> l(mu_);
    segs_.clear();
    segs_.emplace_back();
    segs_[0].bases = std::move(bases);
    if (size) segs_[0].free[begin] = size;
    segs_[0].size = size;
  }
  Block take(size_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    bytes = round_up(std::max<size_t>(bytes, 1), kAlign);
    for (size_t s = 0; s < segs_.size(); ++s)
      if (auto off = fit(segs_[s], bytes)) return {s, *off};
    // None has room: a further heap, at least kGrowth, on every rank alike.
    size_t size = round_up(std::max(bytes, kGrowth), kGrowth);
    Segment seg;
    try {
      seg.heap = grow(size, "pkb-symm/" + std::to_string(segs_.size()));
    } catch (const std::exception& e) {
      throw std::runtime_error("symmetric memory: " + std::to_string(bytes >> 20) + " MiB more fit none of the " +
                               std::to_string(total() >> 20) + " MiB mapped, and a further " + std::to_string(size >> 20) +
                               " MiB could not be made: " + e.what());
    }
    seg.bases = seg.heap->bases();
    seg.size = size;
    seg.free[0] = size;
    segs_.push_back(std::move(seg));
    return {segs_.size() - 1, *fit(segs_.back(), bytes)};
  }
  void give(Block b) {
    std::lock_guard<std::mutex> l(mu_);
    if (b.segment >= segs_.size()) return;
    Segment& seg = segs_[b.segment];
    auto u = seg.used.find(b.offset);
    if (u == seg.used.end()) return;
    size_t off = b.offset, n = u->second;
    seg.used.erase(u);
    auto next = seg.free.lower_bound(off);
    if (next != seg.free.end() && off + n == next->first) {
      n += next->second;
      seg.free.erase(next);
    }
    auto prev = seg.free.lower_bound(off);
    if (prev != seg.free.begin()) {
      --prev;
      if (prev->first + prev->second == off) {
        prev->second += n;
        return;
      }
    }
    seg.free[off] = n;
  }
  // Rank r's address of a block.
  char* at(Block b, int r) {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<char*>(segs_.at(b.segment).bases.at(r)) + b.offset;
  }
  size_t total() const {
    size_t n = 0;
    for (auto& s : segs_) n += s.size;
    return n;
  }
  std::function<std::unique_ptr<pkb::heap::Heap>(size_t, const std::string&)> grow;

 private:
  static constexpr size_t kGrowth = size_t{256} << 20;
  struct Segment {
    std::unique_ptr<pkb::heap::Heap> heap;  // a further heap; null for the first segment
    std::vector<void*> bases;
    size_t size = 0;
    std::map<size_t, size_t> free, used;  // offset -> bytes
  };
  static std::optional<size_t> fit(Segment& seg, size_t bytes) {
    for (auto it = seg.free.begin(); it != seg.free.end(); ++it)
      if (it->second >= bytes) {
        size_t off = it->first, rest = it->second - bytes;
        seg.free.erase(it);
        if (rest) seg.free[off + bytes] = rest;
        seg.used[off] = bytes;
        return off;
      }
    return std::nullopt;
  }
  std::mutex mu_;
  std::vector<Segment> segs_;
};

struct State {
  pkb::eval::OriginalSetup setup;
  Arena arena;
};
State* g = nullptr;

std::vector<int64_t> ints(PyObject* seq) {
  std::vector<int64_t> out;
  Ref fast(PySequence_Fast(seq, "expected a sequence of ints"));
  for (Py_ssize_t i = 0; fast && i < PySequence_Fast_GET_SIZE(fast.get()); ++i)
    out.push_back(PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast.get(), i)));
  return out;
}

PyObject* fail_with(PyObject* type, const std::string& what) {
  PyErr_SetString(type, what.c_str());
  return nullptr;
}

// _pkb.symm_info(): {rank, world, device, signal_pad_bytes}
PyObject* py_symm_info(PyObject*, PyObject*) {
  if (!g) return fail_with(PyExc_RuntimeError, "pkb's symmetric memory is not set up in this process");
  return Py_BuildValue("{s:i,s:i,s:i,s:n}", "rank", g->setup.rank, "world", g->setup.world, "device", g->setup.device,
                       "signal_pad_bytes", Py_ssize_t(kSignalPadBytes));
}

// _pkb.symm_empty(nbytes, shape, strides, dtype_code, stream) -> (tensor, token, ptrs): a
// block of symmetric memory (the buffer, then its zeroed signal pad) as a tensor that gives
// the block back when its storage dies; token "segment:offset" (equal on every rank for the
// same allocation); ptrs every rank's address of the block.
PyObject* py_symm_empty(PyObject*, PyObject* args) {
  unsigned long long nbytes;
  PyObject *shape, *strides, *stream;
  int code;
  if (!PyArg_ParseTuple(args, "KOOiO", &nbytes, &shape, &strides, &code, &stream)) return nullptr;
  if (!g) return fail_with(PyExc_RuntimeError, "pkb's symmetric memory is not set up in this process");
  std::vector<int64_t> sz = ints(shape), st = ints(strides);
  if (PyErr_Occurred()) return nullptr;
  size_t buffer = round_up(std::max<unsigned long long>(nbytes, 1), kAlign);
  Block b;
  try {
    b = g->arena.take(buffer + kSignalPadBytes);
  } catch (const std::exception& e) {
    return fail_with(PyExc_MemoryError, e.what());
  }
  char* ptr = g->arena.at(b, g->setup.rank);
  int dev = g->setup.device;
  if (dev >= 0) {
#ifdef PKB_CUDA
    auto s = static_cast<cudaStream_t>(PyLong_AsVoidPtr(stream));
    cudaError_t e = cudaMemsetAsync(ptr + buffer, 0, kSignalPadBytes, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
      g->arena.give(b);
      return fail_with(PyExc_RuntimeError, std::string("zeroing a signal pad: ") + cudaGetErrorString(e));
    }
#endif
  } else {
    std::memset(ptr + buffer, 0, kSignalPadBytes);
  }
  Ref ptrs(PyList_New(g->setup.world));
  for (int r = 0; r < g->setup.world; ++r) PyList_SET_ITEM(ptrs.get(), r, PyLong_FromVoidPtr(g->arena.at(b, r)));
  try {
    at::TensorOptions o = at::TensorOptions().dtype(scalar_of(code)).device(device_of(dev));
    at::Tensor t = at::for_blob(ptr, sz)
                       .strides(st)
                       .options(o)
                       .target_device(device_of(dev))
                       .deleter([b](void*) {
                         if (g) g->arena.give(b);
                       })
                       .make_tensor();
    std::string token = std::to_string(b.segment) + ":" + std::to_string(b.offset);
    return Py_BuildValue("(NsO)", THPVariable_Wrap(std::move(t)), token.c_str(), ptrs.get());
  } catch (const std::exception& e) {
    g->arena.give(b);
    return fail_with(PyExc_RuntimeError, e.what());
  }
}

// _pkb.symm_barrier(pads_dev, pads, rank, world, channel, stream): torch's handle.barrier,
// as pkb's barrier kernel on `stream` (CUDA) or a spin on the host (CPU device).
PyObject* py_symm_barrier(PyObject*, PyObject* args) {
  PyObject *pads_dev, *pads, *stream;
  int rank, world, channel;
  if (!PyArg_ParseTuple(args, "OOiiiO", &pads_dev, &pads, &rank, &world, &channel, &stream)) return nullptr;
  if (g && g->setup.device >= 0) {
#ifdef PKB_CUDA
    cudaError_t e = pkb::device::launch_barrier(static_cast<uint32_t* const*>(PyLong_AsVoidPtr(pads_dev)), rank, world,
                                                channel, static_cast<cudaStream_t>(PyLong_AsVoidPtr(stream)));
    if (e != cudaSuccess) return fail_with(PyExc_RuntimeError, std::string("barrier launch: ") + cudaGetErrorString(e));
    Py_RETURN_NONE;
#else
    return fail_with(PyExc_RuntimeError, "this pkb was built without CUDA");
#endif
  }
  std::vector<uint32_t*> p;
  Ref fast(PySequence_Fast(pads, "pads must be a sequence"));
  if (!fast) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.get()); ++i)
    p.push_back(static_cast<uint32_t*>(PyLong_AsVoidPtr(PySequence_Fast_GET_ITEM(fast.get(), i))));
  if (PyErr_Occurred()) return nullptr;
  Py_BEGIN_ALLOW_THREADS;
  pkb::host::barrier(p.data(), rank, world, channel);
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

// _pkb.symm_signal(pad, slot, put, stream): torch's put_signal (a peer's pad) or
// wait_signal (this rank's).
PyObject* py_symm_signal(PyObject*, PyObject* args) {
  PyObject *pad, *stream;
  int slot, put;
  if (!PyArg_ParseTuple(args, "OipO", &pad, &slot, &put, &stream)) return nullptr;
  auto* p = static_cast<uint32_t*>(PyLong_AsVoidPtr(pad));
  if (g && g->setup.device >= 0) {
#ifdef PKB_CUDA
    cudaError_t e = pkb::device::launch_signal(p, slot, put != 0, static_cast<cudaStream_t>(PyLong_AsVoidPtr(stream)));
    if (e != cudaSuccess) return fail_with(PyExc_RuntimeError, std::string("signal launch: ") + cudaGetErrorString(e));
    Py_RETURN_NONE;
#else
    return fail_with(PyExc_RuntimeError, "this pkb was built without CUDA");
#endif
  }
  Py_BEGIN_ALLOW_THREADS;
  if (put) pkb::host::put_signal(p, slot);
  else pkb::host::wait_signal(p, slot);
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

PyMethodDef kOriginalMethods[] = {
    {"symm_info", py_symm_info, METH_NOARGS, "symm_info(): the rank, world, heap bases and arena"},
    {"symm_empty", py_symm_empty, METH_VARARGS,
     "symm_empty(nbytes, shape, strides, dtype, stream) -> (tensor, offset)"},
    {"symm_barrier", py_symm_barrier, METH_VARARGS, "symm_barrier(pads_dev, pads, rank, world, channel, stream)"},
    {"symm_signal", py_symm_signal, METH_VARARGS, "symm_signal(pad, slot, put, stream)"},
    {nullptr, nullptr, 0, nullptr}};

// ---- the candidate ---------------------------------------------------------------------

Ref str_list(const std::vector<std::string>& v) {
  Ref l(PyList_New(static_cast<Py_ssize_t>(v.size())));
  for (size_t i = 0; i < v.size(); ++i) PyList_SET_ITEM(l.get(), i, PyUnicode_FromString(v[i].c_str()));
  return l;
}

class OriginalCandidate : public pkb::eval::Candidate {
 public:
  OriginalCandidate(Ref module, Ref solution) : module_(std::move(module)), solution_(std::move(solution)) {}

  int init(pkb_ctx*, const std::vector<pkb_tensor>&, const std::vector<pkb_tensor>&) override { return 0; }

  int run(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) override {
    raised_ = misfit_ = false;
    adapter_us_ = 0;
    g->setup.use_stream(ctx->device, ctx->stream);
    if (!plan_ && !make_plan(ctx, in, out)) return fail(ctx);
    Ref ins(PyList_New(static_cast<Py_ssize_t>(in.size())));
    for (size_t i = 0; i < in.size(); ++i) {
      PyObject* t = tensor(in[i], ctx->device);
      if (!t) return fail(ctx);
      Py_INCREF(t);
      PyList_SET_ITEM(ins.get(), static_cast<Py_ssize_t>(i), t);
    }
    Ref got(PyObject_CallMethod(plan_.get(), "call", "O", ins.get()));
    if (!got) return fail(ctx);
    // The results in output order, tensors only (pkb.original made numbers tensors).
    std::vector<at::Tensor> results;
    Ref fast(PySequence_Fast(got.get(), "results"));
    if (!fast) return fail(ctx);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.get()); ++i) {
      PyObject* x = PySequence_Fast_GET_ITEM(fast.get(), i);
      if (!THPVariable_Check(x)) {
        misfit_ = true;
        ctx->set_error(ctx, "a result is not a tensor");
        return 1;
      }
      results.push_back(THPVariable_Unpack(x));
    }
    // The copy on the call's stream even if solution left another one current.
    g->setup.use_stream(ctx->device, ctx->stream);
    auto t0 = std::chrono::steady_clock::now();
    std::string why;
    try {
      why = g->setup.copy_results(results, out, ctx->device, ctx->stream);
    } catch (const std::exception& e) {
      why = std::string("copying the results: ") + e.what();
    }
    adapter_us_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (!why.empty()) {
      misfit_ = true;
      ctx->set_error(ctx, why.c_str());
      return 1;
    }
    return 0;
  }

  void finalize(pkb_ctx*) override {}

  std::string returned(const char* entry, int rc) const override {
    if (raised_) return "solution raised an exception";
    if (misfit_) return "what solution returned does not fit the problem's outputs";
    return Candidate::returned(entry, rc);
  }
  double adapter_us() const override { return adapter_us_; }
  bool copies_outputs() const override { return true; }

 private:
  // The Python object of an input buffer: made on first sight of it, then kept.
  PyObject* tensor(const pkb_tensor& t, int dev) {
    std::vector<int64_t> sizes(t.sizes, t.sizes + t.ndim), strides(t.strides, t.strides + t.ndim);
    auto key = std::make_tuple(t.data, t.dtype, sizes);
    auto it = tensors_.find(key);
    if (it != tensors_.end()) return it->second.get();
    at::Device d = t.on_host || dev < 0 ? at::Device(at::kCPU) : device_of(dev);
    PyObject* obj = nullptr;
    try {
      obj = wrap(t.data, sizes, strides, scalar_of(t.dtype), d);
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    if (!obj) return nullptr;
    return tensors_.emplace(key, Ref(obj)).first->second.get();
  }

  // pkb.original.Plan: how the spec's [original] arguments are built and the results read.
  bool make_plan(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, const std::vector<pkb_tensor>& out) {
    Ref names(PyList_New(static_cast<Py_ssize_t>(in.size())));
    for (size_t i = 0; i < in.size(); ++i) PyList_SET_ITEM(names.get(), i, PyUnicode_FromString(in[i].name));
    Ref outs(PyList_New(static_cast<Py_ssize_t>(out.size())));
    for (size_t i = 0; i < out.size(); ++i)
      PyList_SET_ITEM(outs.get(), i, Py_BuildValue("(si)", out[i].name, out[i].dtype));
    Ref values(PyDict_New());
    for (int i = 0; i < ctx->n_args; ++i)
      PyDict_SetItemString(values.get(), ctx->args[i].name, Ref(arg_value(ctx->args[i])).get());
    Ref mod(PyImport_ImportModule("pkb.original"));
    if (!mod) return false;
    plan_ = Ref(PyObject_CallMethod(mod.get(), "Plan", "OOOOOOs", solution_.get(), str_list(g->setup.args).get(),
                                    str_list(g->setup.returns).get(), names.get(), outs.get(), values.get(),
                                    g->setup.problem.c_str()));
    return bool(plan_);
  }

  // The pending exception: pkb.original.ResultError is a result that does not fit (its
  // message alone); anything else solution raised (its traceback).
  int fail(pkb_ctx* ctx) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);  // before anything else calls into Python
    Ref mod(PyImport_ImportModule("pkb.original"));
    Ref kind(mod ? PyObject_GetAttrString(mod.get(), "ResultError") : nullptr);
    PyErr_Clear();
    if (kind && type && PyErr_GivenExceptionMatches(type, kind.get())) {
      Ref s(value ? PyObject_Str(value) : nullptr);
      misfit_ = true;
      ctx->set_error(ctx, s ? PyUnicode_AsUTF8(s.get()) : "unprintable result error");
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
      PyErr_Clear();
      return 1;
    }
    PyErr_Restore(type, value, tb);
    raised_ = true;
    std::string text = take_exception(true);
    ctx->set_error(ctx, text.c_str());
    return 1;
  }

  Ref module_, solution_, plan_;
  std::map<std::tuple<void*, int32_t, std::vector<int64_t>>, Ref> tensors_;
  bool raised_ = false, misfit_ = false;
  double adapter_us_ = 0;
};

void append_strings(std::vector<std::string>& out, PyObject* list) {
  Ref fast(PySequence_Fast(list, "list"));
  for (Py_ssize_t i = 0; fast && i < PySequence_Fast_GET_SIZE(fast.get()); ++i)
    out.push_back(PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast.get(), i)));
}

}  // namespace

namespace pkb::py {
PyMethodDef* original_methods() { return kOriginalMethods; }
}  // namespace pkb::py

extern "C" bool pkb_python_prepare_original(const pkb::eval::OriginalSetup* s, pkb::eval::LoadNeeds* needs,
                                            std::string* error) {
  if (!g) g = new State();  // never freed: tensors' deleters may run until the rank exits
  g->setup = *s;
  // The heap's tail, after pkb's harness: the same offset on every rank; further heaps
  // when it is full.
  pkb::heap::Heap& h = *s->heap;
  size_t used = round_up(h.used(), kAlign), rest = h.bytes() > used ? h.bytes() - used : 0;
  rest = rest / kAlign * kAlign;
  size_t off = used;
  try {
    if (rest) off = h.allocate(rest, kAlign);
  } catch (const std::exception& e) {
    *error = std::string("pkb's symmetric memory for the module: ") + e.what();
    return false;
  }
  g->arena.reset(h.bases(), off, rest);
  g->arena.grow = s->new_heap;

  Ref dist(PyImport_ImportModule("torch.distributed"));
  Ref mod(dist ? PyImport_ImportModule("pkb.original") : nullptr);
  if (!mod) {
    *error = "cannot import pkb's side of original-format candidates:\n" + take_exception();
    return false;
  }
  Ref store;
  try {
    store = Ref(pybind11::cast(s->store).release().ptr());
  } catch (const std::exception& e) {
    *error = std::string("cannot hand the bootstrap channel's store to torch.distributed: ") + e.what();
    return false;
  }
  Ref info(Py_BuildValue("{s:i,s:i,s:i,s:s,s:s,s:s,s:O}", "rank", s->rank, "world", s->world, "device", s->device,
                         "backend", s->backend.c_str(), "library", s->library.c_str(), "problem", s->problem.c_str(),
                         "store", store.get()));
  Ref got(info ? PyObject_CallMethod(mod.get(), "prepare", "O", info.get()) : nullptr);
  if (!got) {
    *error = "cannot set up torch.distributed for the original-format candidate:\n" + take_exception();
    return false;
  }
  if (PyObject* read = PyDict_GetItemString(got.get(), "read")) append_strings(needs->read, read);
  if (PyErr_Occurred()) {
    *error = "pkb.original.prepare() answered badly:\n" + take_exception();
    return false;
  }
  return true;
}

extern "C" pkb::eval::Candidate* pkb_python_load_original(const char* path, std::string* error) {
  Ref module(PyObject_CallMethod(g_pkb, "_load", "s", path));
  if (!module || PyUnicode_Check(module.get())) {
    *error = "the candidate does not import:\n" +
             (module ? std::string(PyUnicode_AsUTF8(module.get())) : take_exception());
    return nullptr;
  }
  Ref solution = attr(module.get(), "solution");
  if (!solution || !PyCallable_Check(solution.get())) {
    PyErr_Clear();
    *error = "the candidate defines no solution(*inputs) to call";
    return nullptr;
  }
  return new OriginalCandidate(std::move(module), std::move(solution));
}
