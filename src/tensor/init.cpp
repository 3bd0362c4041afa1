#include "tensor/init.hpp"

#include <sstream>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>

namespace pkb::tensor {

at::Tensor view_of(void* data, c10::IntArrayRef shape, at::ScalarType type, at::Device device) {
  return at::for_blob(data, shape).options(at::TensorOptions().dtype(type).device(device)).target_device(device).make_tensor();
}

std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

uint64_t derive_seed(uint64_t run_seed, int64_t trial, int64_t stream) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(run_seed) ^ static_cast<uint64_t>(trial)) ^ static_cast<uint64_t>(stream));
}

namespace {

// randint on the CPU device. ATen draws CPU integers one element at a time (a serial kernel
// around mt19937): a third of a small CPU evaluation's time, and of the test suite's input
// making. Here the generator gives one 64-bit key and each element is a counter-based hash
// (splitmix64) of the key and its index, mapped onto [lo, hi) by a multiply-shift: the same
// seed gives the same values, in parallel and several times faster. Empty where the dtype is
// not one it writes or cannot hold the range (the caller then draws with ATen).
at::Tensor randint_on_cpu(int64_t lo, int64_t hi, const std::vector<int64_t>& shape, at::Generator& gen,
                          at::ScalarType type) {
  static const std::set<at::ScalarType> kWritten = {at::kByte,  at::kChar,   at::kShort,    at::kInt, at::kLong,
                                                    at::kFloat, at::kDouble, at::kBFloat16, at::kHalf};
  if (!kWritten.count(type) || hi <= lo) return {};
  const uint64_t range = static_cast<uint64_t>(hi - lo);
  at::Tensor x;
  AT_DISPATCH_ALL_TYPES_AND2(at::kBFloat16, at::kHalf, type, "randint_on_cpu", [&] {
    // A range the dtype cannot hold exactly is left to ATen, which says so: nothing drawn
    // or allocated here first.
    using limits = std::numeric_limits<scalar_t>;
    bool fits;
    if constexpr (limits::is_integer)
      fits = lo >= static_cast<int64_t>(limits::lowest()) && hi - 1 <= static_cast<int64_t>(limits::max());
    else
      fits = std::max(-lo, hi - 1) <= (int64_t{1} << limits::digits);
    if (!fits) return;
    uint64_t key;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      key = at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
    }
    x = at::empty(shape, at::TensorOptions().dtype(type));
    const int64_t n = x.numel();
    scalar_t* out = x.data_ptr<scalar_t>();
    at::parallel_for(0, n, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        uint64_t z = key + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        auto offset = static_cast<uint64_t>((static_cast<unsigned __int128>(z) * range) >> 64);
        out[i] = static_cast<scalar_t>(lo + static_cast<int64_t>(offset));
      }
    });
  });
  return x;
}

}  // namespace

// Elements of a random input drawn at once (256 MiB of fp32).
constexpr int64_t kDrawChunk = int64_t{1} << 26;

at::Tensor make_input(const spec::TensorSpec& t, const spec::Vars& vars, at::ScalarType type, at::Device device,
                      at::Generator& gen) {
  std::vector<int64_t> shape = spec::shape_of(t, vars);
  std::string rule = t.init.call_name();
  std::vector<double> args;
  for (auto& a : t.init.call_args()) args.push_back(a.eval(vars));
  auto arg = [&](size_t i, double fallback) { return i < args.size() ? args[i] : fallback; };
  auto want = [&](size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi)
      throw std::invalid_argument("input '" + t.name + "': " + rule + "() takes " + std::to_string(lo) + " to " +
                                  std::to_string(hi) + " arguments");
  };
  at::TensorOptions opts = at::TensorOptions().device(device);
  bool floating = at::isFloatingType(type) || at::isComplexType(type);
  // Random floats are drawn in fp32 (complex64 for complex) and then cast, so the same
  // seed gives the same values in every floating dtype up to rounding.
  at::ScalarType draw = at::isComplexType(type) ? at::kComplexFloat : at::kFloat;
  at::Tensor x;
  if (rule == "randn" || rule == "uniform") {
    if (!floating)
      throw std::invalid_argument("input '" + t.name + "': " + rule + " needs a floating dtype; use randint for " +
                                  c10::toString(type));
    if (rule == "randn") want(0, 2);
    else want(2, 2);
    auto draw_n = [&](at::IntArrayRef s) {
      return rule == "randn" ? at::randn(s, gen, opts.dtype(draw)).mul_(arg(0, 1.0)).add_(arg(1, 0.0))
                             : at::rand(s, gen, opts.dtype(draw)).mul_(args[1] - args[0]).add_(args[0]);
    };
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (n <= kDrawChunk) {
      x = draw_n(shape);
    } else {
      // A large tensor is drawn a chunk at a time (in every dtype alike, so a seed still gives
      // the same values in each): whole, a bf16 tensor's fp32 draw would need twice its own
      // memory again (the 57 GB table of gnn_feature_fetch_projection: 114 GB more).
      x = at::empty(shape, opts.dtype(type));
      at::Tensor flat = x.view({-1});
      for (int64_t off = 0; off < n; off += kDrawChunk) {
        int64_t len = std::min(kDrawChunk, n - off);
        flat.narrow(0, off, len).copy_(draw_n({len}));
      }
    }
  } else if (rule == "randint") {
    want(2, 2);
    // Drawn straight in the target type where ATen can (much faster than int64 + cast).
    auto lo = static_cast<int64_t>(args[0]), hi = static_cast<int64_t>(args[1]);
    if (device.is_cpu()) x = randint_on_cpu(lo, hi, shape, gen, type);
    if (!x.defined()) {
      bool direct = !at::isComplexType(type) && type != at::kBool && !at::isFloat8Type(type);
      x = at::randint(lo, hi, shape, gen, opts.dtype(direct ? type : at::kLong));
    }
  } else if (rule == "zeros" || rule == "custom") {
    want(0, 0);
    x = at::zeros(shape, opts.dtype(type));
  } else if (rule == "ones") {
    want(0, 0);
    x = at::ones(shape, opts.dtype(type));
  } else if (rule == "full") {
    want(1, 1);
    x = at::full(shape, args[0], opts.dtype(at::kDouble));
  } else if (rule == "arange") {
    want(0, 0);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    x = at::arange(n, opts.dtype(at::kLong)).view(shape);
  } else if (rule == "linspace") {
    want(2, 2);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    x = at::linspace(args[0], args[1], n, opts.dtype(at::kDouble)).view(shape);
  } else {
    throw std::invalid_argument("input '" + t.name + "': unknown init " + rule);
  }
  return x.to(type);
}

}  // namespace pkb::tensor
