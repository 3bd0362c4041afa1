// .py candidates in an embedded CPython: Triton kernels on the CUDA device, torch ops on the
// CPU device. The interpreter is the one whose torch pkb links (PKB_PYTHON_EXE), so one
// libtorch serves pkb and the candidate. Built as libpkb_python.so and loaded by
// eval/candidate.cpp for .py candidates only (python_plugin.hpp is the interface).
//
// pkb_python_prepare, before the sandbox: the interpreter starts, torch (and on CUDA Triton,
// with its driver) are imported, and pkb.sandbox_needs() (python/pkb/__init__.py) says
// what the sandbox must grant. pkb_python_load, inside it: the module is imported.
//
// Calls hand the candidate torch tensors that are views of pkb's buffers: at::from_blob over
// each pkb_tensor's data, wrapped by THPVariable_Wrap, made once per buffer and kept, in a
// pkb.Tensors list (by position and name), and a pkb.Ctx over the pkb_ctx. The rank's main
// thread holds the GIL from start to exit: Python threads a candidate starts run only while
// one of its calls does.
#include "python/embed.hpp"

#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "eval/python_plugin.hpp"
#include "pkb/host.hpp"
#include "pkb/solution.h"

#ifdef PKB_CUDA
#include <cuda_runtime.h>

namespace pkb::device {
// pkb's own one-block barrier kernel (device/kernels.cu, in the pkb binary, which exports
// its symbols): what ctx.barrier() launches on CUDA.
cudaError_t launch_barrier(uint32_t* const* pads, int rank, int world, int channel, cudaStream_t stream);
}  // namespace pkb::device
#endif

using namespace pkb::py;

namespace {

bool g_in_init = false;

pkb_ctx* ctx_of(PyObject* handle) {
  auto* c = static_cast<pkb_ctx*>(PyLong_AsVoidPtr(handle));
  if (!c && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "no pkb context");
  return c;
}

std::vector<int64_t> int_tuple(PyObject* seq, const char* what) {
  std::vector<int64_t> out;
  Ref fast(PySequence_Fast(seq, what));
  if (!fast) return out;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.get());
  for (Py_ssize_t i = 0; i < n; ++i) out.push_back(PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast.get(), i)));
  return out;
}

// ---- _pkb: the rank's built-in module --------------------------------------------------

PyObject* py_tensor(PyObject*, PyObject* args) {
  PyObject *ptr, *shape, *strides;
  int code, dev;
  if (!PyArg_ParseTuple(args, "OOOii", &ptr, &shape, &strides, &code, &dev)) return nullptr;
  void* data = PyLong_AsVoidPtr(ptr);
  std::vector<int64_t> sz = int_tuple(shape, "shape must be a sequence"), st = int_tuple(strides, "strides must be a sequence");
  if (PyErr_Occurred()) return nullptr;
  if (sz.size() != st.size()) {
    PyErr_SetString(PyExc_ValueError, "shape and strides differ in length");
    return nullptr;
  }
  try {
    return wrap(data, sz, st, scalar_of(code), device_of(dev));
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyObject* py_peer_ptr(PyObject*, PyObject* args) {
  PyObject *h, *ptr;
  int peer;
  if (!PyArg_ParseTuple(args, "OOi", &h, &ptr, &peer)) return nullptr;
  pkb_ctx* c = ctx_of(h);
  if (!c) return nullptr;
  void* p = c->peer_ptr(c, PyLong_AsVoidPtr(ptr), peer);
  if (!p) {
    PyErr_Format(PyExc_ValueError,
                 "peer(): rank %d does not exist, or the tensor is not in the symmetric heap (inputs, outputs "
                 "and ctx.symm_alloc buffers are)",
                 peer);
    return nullptr;
  }
  return PyLong_FromVoidPtr(p);
}

PyObject* py_symm_alloc(PyObject*, PyObject* args) {
  PyObject* h;
  unsigned long long bytes;
  if (!PyArg_ParseTuple(args, "OK", &h, &bytes)) return nullptr;
  pkb_ctx* c = ctx_of(h);
  if (!c) return nullptr;
  if (!g_in_init) {
    PyErr_SetString(PyExc_RuntimeError, "ctx.symm_alloc() works in pkb_init only");
    return nullptr;
  }
  void* p = c->symm_alloc(c, bytes);
  if (!p) {
    PyErr_Format(PyExc_MemoryError, "ctx.symm_alloc(%llu bytes): the symmetric heap is full (pkb eval --heap-size)",
                 bytes);
    return nullptr;
  }
  return PyLong_FromVoidPtr(p);
}

PyObject* py_host_barrier(PyObject*, PyObject* args) {
  PyObject* h;
  if (!PyArg_ParseTuple(args, "O", &h)) return nullptr;
  pkb_ctx* c = ctx_of(h);
  if (!c) return nullptr;
  if (!g_in_init) {
    PyErr_SetString(PyExc_RuntimeError, "ctx.host_barrier() works in pkb_init only; use ctx.barrier()");
    return nullptr;
  }
  c->host_barrier(c);
  Py_RETURN_NONE;
}

// ctx.barrier(channel): CPU device, a spin on the host; CUDA, pkb's barrier kernel enqueued
// on ctx->stream (the one every CUDA candidate's pkb::dev::barrier launches).
PyObject* py_pad_barrier(PyObject*, PyObject* args) {
  PyObject* h;
  int channel;
  if (!PyArg_ParseTuple(args, "Oi", &h, &channel)) return nullptr;
  pkb_ctx* c = ctx_of(h);
  if (!c) return nullptr;
  int channels = static_cast<int>(c->pad_slots / c->world) - 1;  // the last one is pkb's
  if (channel < 0 || channel >= channels) {
    PyErr_Format(PyExc_ValueError, "barrier channel %d: channels 0 to %d are yours", channel, channels - 1);
    return nullptr;
  }
  if (c->device < 0) {
    pkb::host::barrier(c->pads, c->rank, c->world, channel);
    Py_RETURN_NONE;
  }
#ifdef PKB_CUDA
  cudaError_t e = pkb::device::launch_barrier(c->pads_dev, c->rank, c->world, channel, static_cast<cudaStream_t>(c->stream));
  if (e != cudaSuccess) {
    PyErr_Format(PyExc_RuntimeError, "barrier launch: %s", cudaGetErrorString(e));
    return nullptr;
  }
  Py_RETURN_NONE;
#else
  PyErr_SetString(PyExc_RuntimeError, "this pkb was built without CUDA");
  return nullptr;
#endif
}

PyObject* py_heap_bases(PyObject*, PyObject* args) {
  PyObject* h;
  if (!PyArg_ParseTuple(args, "O", &h)) return nullptr;
  pkb_ctx* c = ctx_of(h);
  if (!c) return nullptr;
  PyObject* out = PyList_New(c->world);
  for (int r = 0; r < c->world; ++r) PyList_SET_ITEM(out, r, PyLong_FromVoidPtr(c->heap_bases[r]));
  return out;
}

PyObject* py_ctx_info(PyObject*, PyObject* args) {
  PyObject* h;
  if (!PyArg_ParseTuple(args, "O", &h)) return nullptr;
  pkb_ctx* c = ctx_of(h);
  if (!c) return nullptr;
  Ref a(PyDict_New()), pads(PyList_New(c->world));
  for (int i = 0; i < c->n_args; ++i) PyDict_SetItemString(a.get(), c->args[i].name, Ref(arg_value(c->args[i])).get());
  for (int r = 0; r < c->world; ++r) PyList_SET_ITEM(pads.get(), r, PyLong_FromVoidPtr(c->pads[r]));
  return Py_BuildValue("{s:i,s:i,s:i,s:s,s:O,s:n,s:O,s:N,s:N}", "rank", c->rank, "world", c->world, "device",
                       c->device, "problem", c->problem, "args", a.get(), "pad_slots", Py_ssize_t(c->pad_slots),
                       "pads", pads.get(), "heap_bases_dev", PyLong_FromVoidPtr(const_cast<void**>(c->heap_bases_dev)),
                       "pads_dev", PyLong_FromVoidPtr(const_cast<uint32_t**>(c->pads_dev)));
}

PyMethodDef kMethods[] = {
    {"tensor", py_tensor, METH_VARARGS, "tensor(ptr, shape, strides, pkb_dtype, device): a view of pkb's memory"},
    {"peer_ptr", py_peer_ptr, METH_VARARGS, "peer_ptr(ctx, ptr, rank)"},
    {"symm_alloc", py_symm_alloc, METH_VARARGS, "symm_alloc(ctx, bytes)"},
    {"host_barrier", py_host_barrier, METH_VARARGS, "host_barrier(ctx)"},
    {"pad_barrier", py_pad_barrier, METH_VARARGS, "pad_barrier(ctx, channel): CPU device"},
    {"heap_bases", py_heap_bases, METH_VARARGS, "heap_bases(ctx): every rank's base address"},
    {"ctx_info", py_ctx_info, METH_VARARGS, "ctx_info(ctx): what pkb.Ctx is built from"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_pkb", "The pkb rank's side of pkb.Ctx", -1, kMethods};

PyObject* init_module() {
  PyObject* m = PyModule_Create(&kModule);
  if (m && PyModule_AddFunctions(m, pkb::py::original_methods()) != 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}

// ---- the candidate ---------------------------------------------------------------------

class PythonCandidate : public pkb::eval::Candidate {
 public:
  PythonCandidate(Ref module, Ref init, Ref run, Ref fin)
      : module_(std::move(module)), init_(std::move(init)), run_(std::move(run)), fin_(std::move(fin)) {}

  int init(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, const std::vector<pkb_tensor>& out) override {
    if (!init_) return 0;
    g_in_init = true;
    std::vector<pkb_tensor> o = out;
    int rc = call("pkb_init", init_.get(), ctx, in, o);
    g_in_init = false;
    return rc;
  }

  int run(pkb_ctx* ctx, const std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) override {
    return call("pkb_run", run_.get(), ctx, in, out);
  }

  void finalize(pkb_ctx* ctx) override {
    if (!fin_ || !py_ctx_) return;
    Ref r(PyObject_CallOneArg(fin_.get(), py_ctx_.get()));
    if (!r) fprintf(stderr, "pkb_finalize raised an exception (ignored):\n%s\n", take_exception().c_str());
    (void)ctx;
  }

  std::string returned(const char* entry, int rc) const override {
    return raised_ ? std::string(entry) + " raised an exception" : Candidate::returned(entry, rc);
  }

 private:
  // The Python object of a tensor: made on first sight of its buffer, then kept.
  PyObject* tensor(const pkb_tensor& t, int dev) {
    std::vector<int64_t> sizes(t.sizes, t.sizes + t.ndim), strides(t.strides, t.strides + t.ndim);
    auto key = std::make_tuple(t.data, t.dtype, sizes);
    auto it = tensors_.find(key);
    if (it != tensors_.end()) return it->second.get();
    at::Device d = t.on_host || dev < 0 ? at::Device(at::kCPU) : device_of(dev);
    PyObject* obj = wrap(t.data, sizes, strides, scalar_of(t.dtype), d);
    if (!obj) return nullptr;
    return tensors_.emplace(key, Ref(obj)).first->second.get();
  }

  PyObject* names(const std::vector<pkb_tensor>& ts, Ref& cache) {
    if (!cache) {
      cache = Ref(PyDict_New());
      for (size_t i = 0; i < ts.size(); ++i)
        PyDict_SetItemString(cache.get(), ts[i].name, Ref(PyLong_FromSize_t(i)).get());
    }
    return cache.get();
  }

  // pkb.Tensors over `ts`.
  Ref tensors(const std::vector<pkb_tensor>& ts, int dev, Ref& names_cache) {
    Ref list(PyList_New(static_cast<Py_ssize_t>(ts.size())));
    for (size_t i = 0; i < ts.size(); ++i) {
      PyObject* t = tensor(ts[i], dev);
      if (!t) return Ref();
      Py_INCREF(t);
      PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), t);
    }
    return Ref(PyObject_CallMethod(g_pkb, "_tensors", "OO", list.get(), names(ts, names_cache)));
  }

  bool make_ctx(pkb_ctx* ctx) {
    if (py_ctx_) return true;
    Ref handle(PyLong_FromVoidPtr(ctx));
    Ref info(PyObject_CallMethod(Ref(PyImport_ImportModule("_pkb")).get(), "ctx_info", "O", handle.get()));
    if (!info) return false;
    py_ctx_ = Ref(PyObject_CallMethod(g_pkb, "Ctx", "OO", handle.get(), info.get()));
    return bool(py_ctx_);
  }

  int call(const char* entry, PyObject* fn, pkb_ctx* ctx, const std::vector<pkb_tensor>& in,
           std::vector<pkb_tensor>& out) {
    raised_ = false;
    int dev = ctx->device;
    Ref ins, outs, r;
    try {
      if (make_ctx(ctx) && (ins = tensors(in, dev, in_names_)) && (outs = tensors(out, dev, out_names_)))
        r = Ref(PyObject_CallFunctionObjArgs(fn, py_ctx_.get(), ins.get(), outs.get(), nullptr));
    } catch (const std::exception& e) {  // a bad buffer description: pkb's fault, not the candidate's
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    if (!r) return fail(ctx, entry);
    if (r.get() != Py_None) {
      long rc = PyLong_Check(r.get()) ? PyLong_AsLong(r.get()) : 1;
      if (rc != 0) {
        if (!PyLong_Check(r.get())) ctx->set_error(ctx, (std::string(entry) + " returned something other than None or an int").c_str());
        return rc == -1 && PyErr_Occurred() ? fail(ctx, entry) : static_cast<int>(rc);
      }
    }
    // Sizes of data-dependent dims the call reported (Tensors.set_size).
    Ref sizes(PyObject_GetAttrString(outs.get(), "_sizes"));
    if (sizes && sizes.get() != Py_None) {
      Ref fast(PySequence_Fast(sizes.get(), "sizes"));
      for (Py_ssize_t k = 0; fast && k < PySequence_Fast_GET_SIZE(fast.get()); ++k) {
        long i, d;
        long long n;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast.get(), k), "llL", &i, &d, &n)) return fail(ctx, entry);
        if (i < 0 || i >= long(out.size()) || d < 0 || d >= out[i].ndim) {
          ctx->set_error(ctx, "outputs.set_size(): no such output or dim");
          return 1;
        }
        out[i].sizes[d] = n;
      }
    }
    PyErr_Clear();
    return 0;
  }

  int fail(pkb_ctx* ctx, const char* entry) {
    raised_ = true;
    std::string tb = take_exception(true);
    ctx->set_error(ctx, tb.c_str());
    (void)entry;
    return 1;
  }

  Ref module_, init_, run_, fin_, py_ctx_, in_names_, out_names_;
  std::map<std::tuple<void*, int32_t, std::vector<int64_t>>, Ref> tensors_;
  bool raised_ = false;
};

void append(std::vector<std::string>& out, PyObject* list) {
  Ref fast(PySequence_Fast(list, "list"));
  for (Py_ssize_t i = 0; fast && i < PySequence_Fast_GET_SIZE(fast.get()); ++i)
    out.push_back(PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast.get(), i)));
}

// The interpreter with pkb's package (and so torch) imported; a second call finds it done.
// A fork server may have done it already (pkb_python_preload), for every rank it forks.
bool start_interpreter(std::string* error) {
  if (!Py_IsInitialized()) {
    PyImport_AppendInittab("_pkb", &init_module);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;  // signals stay pkb's
    config.parse_argv = 0;
    config.write_bytecode = 0;  // site-packages are read-only in the sandbox
    config.buffered_stdio = 0;  // a rank's last lines reach the parent as they are printed
    PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, PKB_PYTHON_EXE);
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
      *error = std::string("cannot start the Python interpreter (") + PKB_PYTHON_EXE + "): " +
               (st.err_msg ? st.err_msg : "unknown error");
      return false;
    }
    Ref dir(PyUnicode_FromString(PKB_PYTHON_DIR));
    PyList_Insert(PySys_GetObject("path"), 0, dir.get());
  }
  if (!g_pkb) g_pkb = PyImport_ImportModule("pkb");
  if (!g_pkb) {
    *error = "cannot import pkb's Python package from " + std::string(PKB_PYTHON_DIR) + ":\n" + take_exception();
    return false;
  }
  return true;
}

}  // namespace

extern "C" bool pkb_python_preload(std::string* error) { return start_interpreter(error); }

extern "C" void pkb_python_after_fork_child(char** envp) {
  PyOS_AfterFork_Child();
  // os.environ was copied from the server's environment when the interpreter started;
  // clear() and update() go through unsetenv and setenv, leaving the C environment as it was.
  Ref fresh(PyDict_New());
  for (char** e = envp; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq || eq == *e) continue;
    Ref k(PyUnicode_DecodeFSDefaultAndSize(*e, eq - *e)), v(PyUnicode_DecodeFSDefault(eq + 1));
    if (k && v) PyDict_SetItem(fresh.get(), k.get(), v.get());
  }
  Ref os(PyImport_ImportModule("os"));
  Ref environ_(os ? PyObject_GetAttrString(os.get(), "environ") : nullptr);
  Ref cleared(environ_ ? PyObject_CallMethod(environ_.get(), "clear", nullptr) : nullptr);
  Ref updated(cleared ? PyObject_CallMethod(environ_.get(), "update", "O", fresh.get()) : nullptr);
  if (!updated) {  // the rank's environment is half gone: it must not run
    PyErr_Print();
    _exit(127);
  }
}

extern "C" bool pkb_python_prepare(bool cuda, pkb::eval::LoadNeeds* needs, std::string* error) {
  if (!start_interpreter(error)) return false;
  Ref got(PyObject_CallMethod(g_pkb, "sandbox_needs", "O", cuda ? Py_True : Py_False));
  if (!got) {
    *error = "cannot prepare Python for the candidate:\n" + take_exception();
    return false;
  }
  // Borrowed references.
  append(needs->read, PyDict_GetItemString(got.get(), "read"));
  append(needs->write, PyDict_GetItemString(got.get(), "write"));
  append(needs->exec, PyDict_GetItemString(got.get(), "exec"));
  needs->processes = true;
  if (PyErr_Occurred()) {
    *error = "pkb.sandbox_needs() answered badly:\n" + take_exception();
    return false;
  }
  return true;
}

extern "C" pkb::eval::Candidate* pkb_python_load(const char* path, std::string* error) {
  Ref module(PyObject_CallMethod(g_pkb, "_load", "s", path));
  if (!module || PyUnicode_Check(module.get())) {
    *error = "the candidate does not import:\n" + (module ? std::string(PyUnicode_AsUTF8(module.get())) : take_exception());
    return nullptr;
  }
  Ref run = attr(module.get(), "pkb_run");
  if (!run || !PyCallable_Check(run.get())) {
    *error = "the candidate defines no pkb_run(ctx, inputs, outputs)";
    return nullptr;
  }
  Ref init = attr(module.get(), "pkb_init"), fin = attr(module.get(), "pkb_finalize");
  PyErr_Clear();
  return new PythonCandidate(std::move(module), std::move(init), std::move(run), std::move(fin));
}
