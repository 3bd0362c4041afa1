// .pt files as Python's torch.save writes them: a zip (caffe2's PyTorchStreamWriter) with
// data.pkl, a protocol-2 pickle that rebuilds each tensor with
// torch._utils._rebuild_tensor_v3(storage, offset, size, stride, False, OrderedDict(), dtype)
// over an UntypedStorage record data/<k>. libtorch's own pickler names typed storages
// (torch.Float8_e4m3fnStorage) that Python torch does not have, and tags dicts with a
// global that torch.load(weights_only=True) refuses; this writer does neither. The reader
// takes this format and the _rebuild_tensor_v2 one of older torch.save files.
#include "tensor/pickle.hpp"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <variant>

namespace pkb::tensor {

namespace {

const std::vector<std::pair<at::ScalarType, const char*>> kDtypes = {
    {at::kBFloat16, "bfloat16"}, {at::kHalf, "float16"},   {at::kFloat, "float32"},
    {at::kDouble, "float64"},    {at::kChar, "int8"},      {at::kShort, "int16"},
    {at::kInt, "int32"},         {at::kLong, "int64"},     {at::kByte, "uint8"},
    {at::kBool, "bool"},         {at::kFloat8_e4m3fn, "float8_e4m3fn"}, {at::kFloat8_e5m2, "float8_e5m2"},
    {at::kComplexFloat, "complex64"}, {at::kComplexDouble, "complex128"}};

// Storage classes of _rebuild_tensor_v2 files.
const std::vector<std::pair<at::ScalarType, const char*>> kStorages = {
    {at::kBFloat16, "BFloat16Storage"}, {at::kHalf, "HalfStorage"},   {at::kFloat, "FloatStorage"},
    {at::kDouble, "DoubleStorage"},     {at::kChar, "CharStorage"},   {at::kShort, "ShortStorage"},
    {at::kInt, "IntStorage"},           {at::kLong, "LongStorage"},   {at::kByte, "ByteStorage"},
    {at::kBool, "BoolStorage"},         {at::kComplexFloat, "ComplexFloatStorage"},
    {at::kComplexDouble, "ComplexDoubleStorage"}};

class Pickler {
 public:
  std::string out = "\x80\x02";  // PROTO 2

  void global(const std::string& module, const std::string& name) { out += "c" + module + "\n" + name + "\n"; }
  void str(const std::string& s) {
    out += 'X';
    u32(static_cast<uint32_t>(s.size()));
    out += s;
  }
  void integer(int64_t v) {
    if (v >= 0 && v < (int64_t{1} << 31)) {
      out += 'J';
      u32(static_cast<uint32_t>(v));
      return;
    }
    out += '\x8a';  // LONG1: little-endian two's complement
    out += '\x08';
    for (int i = 0; i < 8; ++i) out += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  }
  void tuple(const std::vector<int64_t>& xs) {
    out += '(';
    for (int64_t x : xs) integer(x);
    out += 't';
  }
  // A tensor whose bytes are storage record `key`.
  void tensor(const at::Tensor& t, const std::string& key) {
    global("torch._utils", "_rebuild_tensor_v3");
    out += '(';
    out += '(';  // the persistent id: ('storage', UntypedStorage, key, 'cpu', nbytes)
    str("storage");
    global("torch.storage", "UntypedStorage");
    str(key);
    str("cpu");
    integer(static_cast<int64_t>(t.nbytes()));
    out += "tQ";
    integer(0);
    tuple(t.sizes().vec());
    tuple(t.strides().vec());
    out += '\x89';  // NEWFALSE: requires_grad
    global("collections", "OrderedDict");
    out += ")R";  // OrderedDict(): backward hooks
    std::string name;
    for (auto& [type, n] : kDtypes)
      if (type == t.scalar_type()) name = n;
    if (name.empty()) throw std::invalid_argument(std::string("cannot save dtype ") + c10::toString(t.scalar_type()));
    global("torch", name);
    out += "tR";
  }

 private:
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  }
};

// What the reader's stack holds.
struct Value;
using ValueP = std::shared_ptr<Value>;
struct Global {
  std::string module, name;
};
struct Storage {
  at::ScalarType type;  // v2 files name it; v3 files give it with the tensor
  std::string key;
};
struct Value {
  std::variant<std::monostate, int64_t, double, bool, std::string, Global, Storage, at::Tensor, std::vector<ValueP>,
               std::vector<std::pair<ValueP, ValueP>>>
      v;
};

class Unpickler {
 public:
  Unpickler(const std::string& data, caffe2::serialize::PyTorchStreamReader& zip, const std::string& prefix)
      : d_(data), zip_(zip), prefix_(prefix) {}

  ValueP run() {
    for (;;) {
      char op = byte();
      switch (op) {
        case '\x80': byte(); break;                  // PROTO
        case '\x95': take(8); break;                 // FRAME
        case '.': return pop();                      // STOP
        case '(': marks_.push_back(stack_.size()); break;
        case 'c': {                                  // GLOBAL
          std::string m = line(), n = line();
          push(Global{m, n});
          break;
        }
        case 'X': push(std::string(take(u32()))); break;
        case '\x8c': push(std::string(take(static_cast<uint8_t>(byte())))); break;  // SHORT_BINUNICODE
        case 'J': push(static_cast<int64_t>(static_cast<int32_t>(u32()))); break;
        case 'K': push(static_cast<int64_t>(static_cast<uint8_t>(byte()))); break;
        case 'M': {
          uint8_t lo = static_cast<uint8_t>(byte()), hi = static_cast<uint8_t>(byte());
          push(static_cast<int64_t>(lo | (hi << 8)));
          break;
        }
        case '\x8a': {                               // LONG1
          size_t n = static_cast<uint8_t>(byte());
          std::string b = take(n);
          uint64_t v = 0;
          for (size_t i = 0; i < n && i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
          if (n < 8 && n > 0 && (b[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);
          push(static_cast<int64_t>(v));
          break;
        }
        case 'G': {                                  // BINFLOAT, big-endian
          std::string b = take(8);
          uint64_t u = 0;
          for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<uint8_t>(b[i]);
          double x;
          std::memcpy(&x, &u, 8);
          push(x);
          break;
        }
        case '\x88': push(true); break;
        case '\x89': push(false); break;
        case 'N': push(std::monostate{}); break;
        case ')': push(std::vector<ValueP>{}); break;
        case 't': push(since_mark()); break;
        case '\x85': case '\x86': case '\x87': {
          size_t n = static_cast<size_t>(op - '\x84');
          std::vector<ValueP> items(stack_.end() - n, stack_.end());
          stack_.resize(stack_.size() - n);
          push(items);
          break;
        }
        case '}': push(std::vector<std::pair<ValueP, ValueP>>{}); break;
        case ']': push(std::vector<ValueP>{}); break;
        case 's': {                                  // SETITEM
          ValueP v = pop(), k = pop();
          dict(stack_.back()).emplace_back(k, v);
          break;
        }
        case 'u': {                                  // SETITEMS
          std::vector<ValueP> kv = since_mark();
          for (size_t i = 0; i + 1 < kv.size(); i += 2) dict(stack_.back()).emplace_back(kv[i], kv[i + 1]);
          break;
        }
        case 'q': memo_[static_cast<uint8_t>(byte())] = stack_.back(); break;
        case 'r': memo_[u32()] = stack_.back(); break;
        case '\x94': memo_[memo_.size()] = stack_.back(); break;  // MEMOIZE
        case 'h': stack_.push_back(memo_.at(static_cast<uint8_t>(byte()))); break;
        case 'j': stack_.push_back(memo_.at(u32())); break;
        case 'Q': push(storage(pop())); break;      // BINPERSID
        case 'R': {
          ValueP args = pop(), fn = pop();
          stack_.push_back(call(fn, args));
          break;
        }
        default:
          throw std::runtime_error(std::string("unsupported pickle opcode 0x") + "0123456789abcdef"[(op >> 4) & 15] +
                                   "0123456789abcdef"[op & 15] + " (not a tensor file pkb or torch.save wrote)");
      }
    }
  }

 private:
  char byte() {
    if (i_ >= d_.size()) throw std::runtime_error("truncated pickle");
    return d_[i_++];
  }
  std::string take(size_t n) {
    if (i_ + n > d_.size()) throw std::runtime_error("truncated pickle");
    std::string s = d_.substr(i_, n);
    i_ += n;
    return s;
  }
  uint32_t u32() {
    std::string b = take(4);
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[i]);
    return v;
  }
  std::string line() {
    size_t e = d_.find('\n', i_);
    if (e == std::string::npos) throw std::runtime_error("truncated pickle");
    std::string s = d_.substr(i_, e - i_);
    i_ = e + 1;
    return s;
  }
  template <class T>
  void push(T x) {
    auto v = std::make_shared<Value>();
    v->v = std::move(x);
    stack_.push_back(v);
  }
  ValueP pop() {
    if (stack_.empty()) throw std::runtime_error("malformed pickle");
    ValueP v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<ValueP> since_mark() {
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ValueP> items(stack_.begin() + m, stack_.end());
    stack_.resize(m);
    return items;
  }
  static std::vector<std::pair<ValueP, ValueP>>& dict(ValueP& v) {
    return std::get<std::vector<std::pair<ValueP, ValueP>>>(v->v);
  }
  static const std::vector<ValueP>& items(const ValueP& v) { return std::get<std::vector<ValueP>>(v->v); }
  static int64_t num(const ValueP& v) { return std::get<int64_t>(v->v); }

  Storage storage(const ValueP& pid) {
    const auto& t = items(pid);  // ('storage', class, key, location, numel)
    Global cls = std::get<Global>(t.at(1)->v);
    Storage s{at::kByte, std::get<std::string>(t.at(2)->v)};
    for (auto& [type, name] : kStorages)
      if (cls.name == name) s.type = type;
    return s;
  }

  ValueP call(const ValueP& fn, const ValueP& args) {
    Global g = std::get<Global>(fn->v);
    auto out = std::make_shared<Value>();
    if (g.name == "OrderedDict") {
      out->v = std::vector<std::pair<ValueP, ValueP>>{};
    } else if (g.name == "_rebuild_tensor_v2" || g.name == "_rebuild_tensor_v3") {
      const auto& a = items(args);
      Storage s = std::get<Storage>(a.at(0)->v);
      at::ScalarType type = s.type;
      if (g.name == "_rebuild_tensor_v3") {
        std::string name = std::get<Global>(a.at(6)->v).name;
        for (auto& [t, n] : kDtypes)
          if (name == n) type = t;
      }
      auto [data, bytes] = zip_.getRecord(prefix_ + "data/" + s.key);
      at::Tensor flat = at::empty({static_cast<int64_t>(bytes)}, at::kByte);
      std::memcpy(flat.data_ptr(), data.get(), bytes);
      std::vector<int64_t> size, stride;
      for (auto& x : items(a.at(2))) size.push_back(num(x));
      for (auto& x : items(a.at(3))) stride.push_back(num(x));
      out->v = flat.view(type).as_strided(size, stride, num(a.at(1))).clone();
    } else {
      throw std::runtime_error("unsupported global " + g.module + "." + g.name + " in a tensor file");
    }
    return out;
  }

  const std::string& d_;
  caffe2::serialize::PyTorchStreamReader& zip_;
  std::string prefix_;
  size_t i_ = 0;
  std::vector<ValueP> stack_;
  std::vector<size_t> marks_;
  std::map<size_t, ValueP> memo_;
};

}  // namespace

void write_pt(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors, bool as_dict) {
  Pickler p;
  std::vector<at::Tensor> stored;
  auto add = [&](const at::Tensor& t) {
    stored.push_back(t.cpu().contiguous());
    p.tensor(stored.back(), std::to_string(stored.size() - 1));
  };
  if (as_dict) {
    p.out += "}(";  // EMPTY_DICT, MARK ... SETITEMS
    for (auto& [name, t] : tensors) {
      p.str(name);
      add(t);
    }
    p.out += 'u';
  } else {
    add(tensors.at(0).second);
  }
  p.out += '.';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write " + path);
  caffe2::serialize::PyTorchStreamWriter zip([&](const void* b, size_t n) {
    f.write(static_cast<const char*>(b), static_cast<std::streamsize>(n));
    return n;
  });
  zip.writeRecord("data.pkl", p.out.data(), p.out.size());
  for (size_t k = 0; k < stored.size(); ++k)
    zip.writeRecord("data/" + std::to_string(k), stored[k].data_ptr(), stored[k].nbytes());
  zip.writeEndOfFile();
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<std::pair<std::string, at::Tensor>> read_pt(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader zip(path);  // record names are relative to the archive folder
  if (!zip.hasRecord("data.pkl")) throw std::runtime_error(path + " has no data.pkl: not a torch.save file");
  auto [data, n] = zip.getRecord("data.pkl");
  std::string pkl(static_cast<const char*>(data.get()), n);
  ValueP v = Unpickler(pkl, zip, "").run();
  std::vector<std::pair<std::string, at::Tensor>> out;
  if (auto* t = std::get_if<at::Tensor>(&v->v)) return {{"", *t}};
  auto* d = std::get_if<std::vector<std::pair<ValueP, ValueP>>>(&v->v);
  if (!d) throw std::runtime_error(path + " holds neither a tensor nor a dict of tensors");
  for (auto& [k, x] : *d) {
    auto* name = std::get_if<std::string>(&k->v);
    auto* t = std::get_if<at::Tensor>(&x->v);
    if (!name || !t) throw std::runtime_error(path + ": a dict entry is not (name, tensor)");
    out.emplace_back(*name, *t);
  }
  return out;
}

}  // namespace pkb::tensor
