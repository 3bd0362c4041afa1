#include "eval/candidate.hpp"

#include <dlfcn.h>

#include <cstring>
#include <filesystem>

#include "eval/python_plugin.hpp"

#include "comm/hub_store.hpp"
#include "eval/original_format.hpp"
#include "eval/output_copy.hpp"
#include "heap/heap.hpp"
#include "io/files.hpp"
#include "launch/client.hpp"
#include "tensor/dtypes.hpp"
#include "rank/rank.hpp"

namespace pkb::eval {

// pkb_dtype numbers the spec dtypes in the same order.
static_assert(int(spec::DType::bf16) == PKB_BF16 && int(spec::DType::boolean) == PKB_BOOL &&
              int(spec::DType::fp8_e4m3) == PKB_FP8_E4M3 && int(spec::DType::complex128) == PKB_COMPLEX128);

namespace {

template <class F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace

NativeCandidate::NativeCandidate(const std::string& library) {
  // RTLD_LOCAL: two candidates' symbols never mix; RTLD_NOW: a missing symbol fails here.
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw rank::RankError(rank::ErrorKind::abi, std::string("cannot load the candidate: ") + dlerror());
  auto version = symbol<pkb_abi_version_fn>(handle_, "pkb_abi_version");
  if (!version)
    throw rank::RankError(rank::ErrorKind::abi, "the candidate does not export pkb_abi_version(); add: extern \"C\" int "
                                   "pkb_abi_version(void) { return PKB_ABI_VERSION; }");
  int v = version();
  if (v != PKB_ABI_VERSION)
    throw rank::RankError(rank::ErrorKind::abi, "the candidate was written for solution ABI version " + std::to_string(v) +
                                       "; this pkb speaks version " + std::to_string(PKB_ABI_VERSION) +
                                       " (include/pkb/solution.h)");
  run_ = symbol<pkb_run_fn>(handle_, "pkb_run");
  if (!run_)
    throw rank::RankError(rank::ErrorKind::abi, "the candidate does not export pkb_run() (extern \"C\" int pkb_run(pkb_ctx*, "
                                   "const pkb_tensor*, int, pkb_tensor*, int))");
  init_ = symbol<pkb_init_fn>(handle_, "pkb_init");
  finalize_ = symbol<pkb_finalize_fn>(handle_, "pkb_finalize");
}

// Never dlclose: a candidate's static destructors or CUDA module unloads may run at odd
// times; the rank exits right after.

int NativeCandidate::init(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, const std::vector<pkb_tensor>& out) {
  return init_ ? init_(ctx, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size())) : 0;
}

int NativeCandidate::run(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) {
  return run_(ctx, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
}

void NativeCandidate::finalize(pkb_ctx* ctx) {
  if (finalize_) finalize_(ctx);
}

namespace {

bool is_python(const std::string& library) { return std::filesystem::path(library).extension() == ".py"; }

// libpkb_python.so, loaded once and only for .py candidates: the pkb binary itself never
// needs libpython. libpython goes into the global namespace first, since the extension
// modules Python imports (torch._C, numpy) expect its symbols there.
struct PythonPlugin {
  pkb_python_preload_fn preload = nullptr;
  pkb_python_after_fork_child_fn after_fork_child = nullptr;
  pkb_python_prepare_fn prepare = nullptr;
  pkb_python_load_fn load = nullptr;
  pkb_python_prepare_original_fn prepare_original = nullptr;
  pkb_python_load_original_fn load_original = nullptr;
};

const PythonPlugin& python_plugin() {
  static PythonPlugin plugin = [] {
    PythonPlugin p;
    if (!*kPythonPlugin)
      throw rank::RankError(rank::ErrorKind::abi,
                            "this pkb was built without embedded Python (no Python.h or shared libpython for its "
                            "torch's interpreter at configure time), so it cannot run .py candidates; install the "
                            "interpreter's development files (python3-dev) and rebuild");
    if (!dlopen(kLibPython, RTLD_NOW | RTLD_GLOBAL))
      throw rank::RankError(rank::ErrorKind::abi, std::string("cannot load libpython for .py candidates: ") + dlerror());
    void* h = dlopen(kPythonPlugin, RTLD_NOW | RTLD_GLOBAL);
    if (!h) throw rank::RankError(rank::ErrorKind::abi, std::string("cannot load pkb's Python layer: ") + dlerror());
    p.preload = reinterpret_cast<pkb_python_preload_fn>(dlsym(h, "pkb_python_preload"));
    p.after_fork_child = reinterpret_cast<pkb_python_after_fork_child_fn>(dlsym(h, "pkb_python_after_fork_child"));
    p.prepare = reinterpret_cast<pkb_python_prepare_fn>(dlsym(h, "pkb_python_prepare"));
    p.load = reinterpret_cast<pkb_python_load_fn>(dlsym(h, "pkb_python_load"));
    p.prepare_original = reinterpret_cast<pkb_python_prepare_original_fn>(dlsym(h, "pkb_python_prepare_original"));
    p.load_original = reinterpret_cast<pkb_python_load_original_fn>(dlsym(h, "pkb_python_load_original"));
    if (!p.preload || !p.after_fork_child || !p.prepare || !p.load || !p.prepare_original || !p.load_original)
      throw rank::RankError(rank::ErrorKind::abi, std::string(kPythonPlugin) + " is not pkb's Python layer");
    return p;
  }();
  return plugin;
}

}  // namespace

launch::ForkHooks preload_python() {
  launch::ForkHooks hooks;
  try {
    std::string error;  // a rank that finds the import failed says why itself
    python_plugin().preload(&error);
  } catch (const std::exception&) {
    return hooks;
  }
  // libpython is in the global namespace (python_plugin); every CPython 3 has these.
  auto initialized = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  if (!initialized || !initialized()) return hooks;
  hooks.before = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "PyOS_BeforeFork"));
  hooks.parent = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Parent"));
  hooks.child = python_plugin().after_fork_child;
  return hooks;
}

LoadNeeds prepare_candidate(const std::string& library, bool cuda) {
  LoadNeeds needs;
  if (!is_python(library)) return needs;
  std::string error;
  if (!python_plugin().prepare(cuda, &needs, &error)) throw rank::RankError(rank::ErrorKind::abi, error);
  return needs;
}

namespace {

// The store an original-format module's torch.distributed sees: pkb's bootstrap channel,
// every key under tdist/ of the rank's own namespace, so nothing the module reaches through
// it (PrefixStore's underlying_store included) names pkb's own keys.
class ModuleStore : public comm::HubStore {
 public:
  explicit ModuleStore(launch::Client& client) : HubStore(client), client_(client) {}
  c10::intrusive_ptr<c10d::Store> clone() override { return c10::make_intrusive<ModuleStore>(client_); }
  void set(const std::string& k, const std::vector<uint8_t>& v) override { HubStore::set(kPrefix + k, v); }
  std::vector<uint8_t> get(const std::string& k) override { return HubStore::get(kPrefix + k); }
  int64_t add(const std::string& k, int64_t v) override { return HubStore::add(kPrefix + k, v); }
  bool deleteKey(const std::string& k) override { return HubStore::deleteKey(kPrefix + k); }
  bool check(const std::vector<std::string>& keys) override { return HubStore::check(prefixed(keys)); }
  void wait(const std::vector<std::string>& keys) override { HubStore::wait(prefixed(keys)); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { wait(keys); }

 private:
  static inline const std::string kPrefix = "tdist/";
  static std::vector<std::string> prefixed(std::vector<std::string> keys) {
    for (auto& k : keys) k = kPrefix + k;
    return keys;
  }
  launch::Client& client_;
};

}  // namespace

bool is_original(const std::string& library) {
  if (!is_python(library)) return false;
  std::error_code ec;
  auto marker = std::filesystem::path(library).parent_path() / kFormatFile;
  return std::filesystem::is_regular_file(marker, ec) && io::read_file(marker.string()).rfind("original", 0) == 0;
}

LoadNeeds prepare_candidate(const std::string& library, rank::Rank& r) {
  LoadNeeds needs = prepare_candidate(library, r.device.is_cuda());
  if (!is_original(library)) return needs;
  spec::ProblemSpec spec = spec::load_spec(r.job.spec());
  if (!spec.original.declared)
    throw rank::RankError(rank::ErrorKind::abi, "pkb does not know how the original ParallelKernelBench called " +
                                                    spec.slug + "'s solution (its spec has no [original] table), so it "
                                                                "cannot run an original-format candidate for it");
  if (!spec.original.unsupported.empty())
    throw rank::RankError(rank::ErrorKind::abi, "pkb cannot run an original-format candidate for " + spec.slug + ": " +
                                                    spec.original.unsupported);
  OriginalSetup s;
  s.rank = r.rank;
  s.world = r.world;
  s.device = r.device.is_cuda() ? r.device.index() : -1;
  // Ranks with a GPU each talk NCCL, as in the original; ranks sharing a GPU (NCCL refuses
  // two ranks on one device) and the CPU device gloo.
  s.backend = r.device.is_cuda() && r.job.comm == launch::Comm::nccl ? "nccl" : "gloo";
  s.library = library;
  s.problem = spec.slug;
  s.args = spec.original.args;
  s.returns = spec.original.returns;
  s.store = c10::make_intrusive<ModuleStore>(r.client);
  s.heap = r.heap.get();
  rank::Rank* rk = &r;  // lives as long as the rank
  s.new_heap = [rk](size_t bytes, const std::string& name) {
    return rk->device.is_cuda()
               ? heap::make_cuda_heap(rk->client, rk->rank, rk->world, rk->device.index(), bytes, 4096, name)
               : heap::make_host_heap(rk->client, rk->rank, rk->world, bytes, 4096, name);
  };
  s.copy_results = &copy_results;
  s.use_stream = &use_stream;
  std::string error;
  if (!python_plugin().prepare_original(&s, &needs, &error)) throw rank::RankError(rank::ErrorKind::abi, error);
  return needs;
}

std::unique_ptr<Candidate> load_candidate(const std::string& library) {
  if (!is_python(library)) return std::make_unique<NativeCandidate>(library);
  std::string error;
  Candidate* c = is_original(library) ? python_plugin().load_original(library.c_str(), &error)
                                      : python_plugin().load(library.c_str(), &error);
  if (!c) throw rank::RankError(rank::ErrorKind::abi, error);
  return std::unique_ptr<Candidate>(c);
}

CandidateCtx::CandidateCtx(heap::Heap& heap, launch::Client& client, int device, void* stream, void* nccl,
                           const spec::ProblemSpec& spec, const spec::Vars& vars)
    : heap_(heap), client_(client) {
  ctx_.abi_version = PKB_ABI_VERSION;
  ctx_.rank = heap.rank();
  ctx_.world = heap.world();
  ctx_.device = device;
  ctx_.stream = stream;
  ctx_.nccl_comm = nccl;
  strings_.push_back(std::make_unique<std::string>(spec.slug));
  ctx_.problem = strings_.back()->c_str();
  ctx_.heap_bases = heap.bases().data();
  ctx_.heap_bases_dev = heap.bases_for_kernels();
  ctx_.pads = heap.pads().data();
  ctx_.pads_dev = heap.pads_for_kernels();
  ctx_.pad_slots = heap.pad_bytes() / sizeof(uint32_t);

  auto name = [&](const std::string& n) {
    strings_.push_back(std::make_unique<std::string>(n));
    return strings_.back()->c_str();
  };
  for (auto& a : spec.args) {
    pkb_arg x{};
    x.name = name(a.name);
    if (auto* i = std::get_if<int64_t>(&a.value)) x.kind = PKB_ARG_INT, x.i = *i;
    else if (auto* f = std::get_if<double>(&a.value)) x.kind = PKB_ARG_FLOAT, x.f = *f;
    else if (auto* b = std::get_if<bool>(&a.value)) x.kind = PKB_ARG_BOOL, x.i = *b;
    else if (auto* s = std::get_if<std::string>(&a.value)) x.kind = PKB_ARG_STRING, x.s = name(*s);
    else {
      lists_.push_back(std::make_unique<std::vector<int64_t>>(std::get<std::vector<int64_t>>(a.value)));
      x.kind = PKB_ARG_INT_LIST;
      x.list = lists_.back()->data();
      x.list_len = static_cast<int64_t>(lists_.back()->size());
    }
    args_.push_back(x);
  }
  for (auto& [k, v] : vars) {
    pkb_arg x{};
    x.name = name(k);
    x.kind = PKB_ARG_INT;
    x.i = static_cast<int64_t>(v);
    args_.push_back(x);
  }
  ctx_.args = args_.data();
  ctx_.n_args = static_cast<int32_t>(args_.size());
  ctx_.symm_alloc = &CandidateCtx::symm_alloc;
  ctx_.peer_ptr = &CandidateCtx::peer_ptr;
  ctx_.host_barrier = &CandidateCtx::host_barrier;
  ctx_.arg_int = &CandidateCtx::arg_int;
  ctx_.arg_float = &CandidateCtx::arg_float;
  ctx_.set_error = &CandidateCtx::set_error;
  ctx_.internal = this;
}

std::string CandidateCtx::take_error() {
  std::string e = error_;
  error_.clear();
  return e;
}

void* CandidateCtx::symm_alloc(pkb_ctx* c, size_t bytes) {
  CandidateCtx& s = self(c);
  if (!s.in_init_) {
    s.error_ = "symm_alloc called outside pkb_init";
    return nullptr;
  }
  try {
    size_t off = s.heap_.allocate(bytes);
    return static_cast<char*>(s.heap_.base(s.heap_.rank())) + off;
  } catch (const std::exception& e) {
    s.error_ = e.what();
    return nullptr;
  }
}

void* CandidateCtx::peer_ptr(pkb_ctx* c, const void* local, int peer) {
  CandidateCtx& s = self(c);
  const char* base = static_cast<const char*>(s.heap_.base(s.heap_.rank()));
  const char* p = static_cast<const char*>(local);
  if (peer < 0 || peer >= s.heap_.world() || p < base || p >= base + s.heap_.bytes()) return nullptr;
  return static_cast<char*>(s.heap_.base(peer)) + (p - base);
}

void CandidateCtx::host_barrier(pkb_ctx* c) {
  CandidateCtx& s = self(c);
  if (!s.in_init_) {
    s.error_ = "host_barrier called outside pkb_init";
    return;
  }
  s.client_.barrier(s.heap_.world());
}

const pkb_arg* CandidateCtx::find(const char* name) const {
  for (auto& a : args_)
    if (std::strcmp(a.name, name) == 0) return &a;
  return nullptr;
}

int64_t CandidateCtx::arg_int(pkb_ctx* c, const char* name, int* found) {
  const pkb_arg* a = self(c).find(name);
  if (found) *found = a && (a->kind == PKB_ARG_INT || a->kind == PKB_ARG_BOOL);
  return a ? (a->kind == PKB_ARG_FLOAT ? static_cast<int64_t>(a->f) : a->i) : 0;
}

double CandidateCtx::arg_float(pkb_ctx* c, const char* name, int* found) {
  const pkb_arg* a = self(c).find(name);
  if (found) *found = a && (a->kind == PKB_ARG_FLOAT || a->kind == PKB_ARG_INT);
  return a ? (a->kind == PKB_ARG_FLOAT ? a->f : static_cast<double>(a->i)) : 0.0;
}

void CandidateCtx::set_error(pkb_ctx* c, const char* message) { self(c).error_ = message ? message : ""; }

pkb_tensor describe_shape(const spec::TensorSpec& s, const std::vector<int64_t>& shape, at::ScalarType type) {
  pkb_tensor t{};
  t.name = s.name.c_str();
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = static_cast<int32_t>(tensor::from_aten(type));
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.sizes[d] = shape[d];
    t.strides[d] = stride;
    stride *= shape[d];
    t.dynamic[d] = s.shape[d].dynamic;
  }
  t.on_host = s.host;
  return t;
}

pkb_tensor describe(const spec::TensorSpec& s, const at::Tensor& x, bool symmetric) {
  pkb_tensor t = describe_shape(s, x.sizes().vec(), x.scalar_type());
  t.data = x.data_ptr();
  t.symmetric = symmetric;
  return t;
}

}  // namespace pkb::eval
