// What the two kinds of .py candidate share in libpkb_python.so (python_candidate.cpp: pkb's
// own pkb_run modules; original_candidate.cpp: the original ParallelKernelBench's
// solution(*inputs) modules): references, exceptions as text, tensors over pkb's memory.
#pragma once

#include <Python.h>

#include <torch/csrc/autograd/python_variable.h>

#include <ATen/ATen.h>

#include <string>
#include <utility>

#include "pkb/solution.h"

namespace pkb::py {

// ---- helpers --------------------------------------------------------------------------

// A new reference, released at scope exit.
struct Ref {
  PyObject* p = nullptr;
  Ref() = default;
  explicit Ref(PyObject* x) : p(x) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& o) noexcept : p(o.p) { o.p = nullptr; }
  Ref& operator=(Ref&& o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  ~Ref() { Py_XDECREF(p); }
  PyObject* get() const { return p; }
  PyObject* release() {
    PyObject* x = p;
    p = nullptr;
    return x;
  }
  explicit operator bool() const { return p != nullptr; }
};

// The pending Python exception as text, traceback included, and cleared. With
// `headline`, its type and the first line of its message come first (a verdict's one-line
// reason says what was raised, not "Traceback (most recent call last):").
inline std::string take_exception(bool headline = false) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (!type) return "unknown error";
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb) PyException_SetTraceback(value, tb);
  std::string text;
  if (headline) {
    Ref said(value ? PyObject_Str(value) : nullptr);
    const char* utf8 = said ? PyUnicode_AsUTF8(said.get()) : nullptr;
    std::string first = utf8 ? utf8 : "";
    first = first.substr(0, first.find('\n'));
    text = std::string(reinterpret_cast<PyTypeObject*>(type)->tp_name) + (first.empty() ? "" : ": " + first) + "\n";
    PyErr_Clear();
  }
  Ref mod(PyImport_ImportModule("traceback"));
  Ref lines(mod ? PyObject_CallMethod(mod.get(), "format_exception", "OOO", type, value ? value : Py_None,
                                      tb ? tb : Py_None)
                : nullptr);
  Ref joined(lines ? PyUnicode_Join(Ref(PyUnicode_FromString("")).get(), lines.get()) : nullptr);
  if (joined) text += PyUnicode_AsUTF8(joined.get());
  else {
    PyErr_Clear();
    Ref s(value ? PyObject_Str(value) : nullptr);
    text += s ? PyUnicode_AsUTF8(s.get()) : "unprintable exception";
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

inline at::ScalarType scalar_of(int code) {
  static const at::ScalarType kTypes[] = {at::kBFloat16, at::kHalf,  at::kFloat, at::kDouble, at::kChar,
                                          at::kShort,    at::kInt,   at::kLong,  at::kByte,   at::kBool,
                                          at::kFloat8_e4m3fn, at::kFloat8_e5m2, at::kComplexFloat,
                                          at::kComplexDouble};
  if (code < 0 || code >= int(sizeof kTypes / sizeof kTypes[0])) throw std::invalid_argument("no such pkb dtype");
  return kTypes[code];
}

inline at::Device device_of(int dev) { return dev < 0 ? at::Device(at::kCPU) : at::Device(at::kCUDA, static_cast<int8_t>(dev)); }

// A tensor over memory pkb owns (no copy, no ownership), as a Python object.
inline PyObject* wrap(void* data, c10::IntArrayRef sizes, c10::IntArrayRef strides, at::ScalarType type, at::Device dev) {
  at::TensorOptions o = at::TensorOptions().dtype(type).device(dev);
  at::Tensor t = data ? at::for_blob(data, sizes).strides(strides).options(o).target_device(dev).make_tensor()
                      : at::empty_strided(sizes, strides, o.device(at::kMeta));  // pkb_init: shapes only
  return THPVariable_Wrap(std::move(t));
}

// A pkb_arg (the spec's [args], sizes and vars) as a Python value.
inline PyObject* arg_value(const pkb_arg& a) {
  switch (a.kind) {
    case PKB_ARG_FLOAT: return PyFloat_FromDouble(a.f);
    case PKB_ARG_BOOL: return PyBool_FromLong(static_cast<long>(a.i));
    case PKB_ARG_STRING: return PyUnicode_FromString(a.s);
    case PKB_ARG_INT_LIST: {
      PyObject* l = PyList_New(a.list_len);
      for (int64_t i = 0; i < a.list_len; ++i) PyList_SET_ITEM(l, i, PyLong_FromLongLong(a.list[i]));
      return l;
    }
    default: return PyLong_FromLongLong(a.i);
  }
}

// o.name, or null (no exception pending) when it has none.
inline Ref attr(PyObject* o, const char* name) {
  if (!PyObject_HasAttrString(o, name)) return Ref();
  return Ref(PyObject_GetAttrString(o, name));
}

// The pkb package (python/pkb), imported by pkb_python_prepare.
inline PyObject* g_pkb = nullptr;

// The _pkb module's functions for original-format candidates (original_candidate.cpp),
// added to the module python_candidate.cpp makes.
PyMethodDef* original_methods();

}  // namespace pkb::py
