#include "ref/context.hpp"

#include <ATen/ATen.h>

#include <sstream>
#include <stdexcept>

#include "device/device.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/init.hpp"

namespace pkb {

at::TensorOptions Ctx::options(at::ScalarType t) const { return at::TensorOptions().device(device()).dtype(t); }

void Inputs::add(const std::string& name, at::Tensor t) {
  names_.push_back(name);
  tensors_.push_back(std::move(t));
}

const at::Tensor& Inputs::operator[](const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return tensors_[i];
  throw std::out_of_range("no input called '" + name + "'");
}

at::Tensor& Inputs::operator[](const std::string& name) {
  return const_cast<at::Tensor&>(static_cast<const Inputs&>(*this)[name]);
}

Inputs Inputs::clone() const {
  Inputs c;
  for (size_t i = 0; i < names_.size(); ++i) c.add(names_[i], tensors_[i].clone());
  return c;
}

namespace ref {

namespace {
constexpr int64_t kRankStream = 1, kSharedStream = 2;
}

RefCtx::RefCtx(const spec::ProblemSpec& spec, spec::Vars vars, at::Device device, at::ScalarType dt, Comm* comm,
               uint64_t seed)
    : spec_(spec), vars_(std::move(vars)), device_(device), dt_(dt), comm_(comm), seed_(seed) {
  begin_trial(-1);
}

void RefCtx::begin_trial(int t) {
  trial_ = t;
  int64_t trial_key = t + 1;
  rng_ = device::generator(device_, tensor::derive_seed(seed_, trial_key, kRankStream * 1000003 + rank()));
  shared_rng_ = device::generator(device_, tensor::derive_seed(seed_, trial_key, kSharedStream));
}

Comm& RefCtx::comm() {
  if (!comm_)
    throw std::logic_error(spec_.slug + ": the reference communicated where it has no communicator (make_inputs, "
                                        "which pkb also runs for other ranks' inputs, must not communicate)");
  return *comm_;
}

Inputs RefCtx::inputs_of(int rank, int64_t key, Reference& ref) const {
  RefCtx other(spec_, spec_.vars_at_rank(vars_, rank), device_, dt_, nullptr, seed_);
  other.begin_trial(static_cast<int>(key));
  return build_inputs(other, ref);
}

int64_t RefCtx::size(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) throw std::out_of_range(spec_.slug + ": no size or var called '" + name + "'");
  return static_cast<int64_t>(it->second);
}

const spec::ArgValue& RefCtx::arg(const std::string& name) const {
  for (auto& a : spec_.args)
    if (a.name == name) return a.value;
  throw std::out_of_range(spec_.slug + ": no arg called '" + name + "' in [args]");
}

int64_t RefCtx::arg_int(const std::string& name) const { return std::get<int64_t>(arg(name)); }
double RefCtx::arg_float(const std::string& name) const {
  const auto& v = arg(name);
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}
bool RefCtx::arg_bool(const std::string& name) const { return std::get<bool>(arg(name)); }
std::string RefCtx::arg_str(const std::string& name) const { return std::get<std::string>(arg(name)); }
std::vector<int64_t> RefCtx::arg_list(const std::string& name) const { return std::get<std::vector<int64_t>>(arg(name)); }

Inputs build_inputs(RefCtx& ctx, Reference& ref) {
  Inputs in;
  for (auto& t : ctx.spec().inputs) {
    at::Generator& gen = t.shared ? ctx.shared_rng() : ctx.rng();
    at::Tensor x = tensor::make_input(t, ctx.vars(), tensor::resolve(t.dtype, ctx.dtype()), ctx.device(), gen);
    in.add(t.name, t.host ? x.cpu() : x);
  }
  ref.make_inputs(ctx, in);
  for (size_t i = 0; i < ctx.spec().inputs.size(); ++i) {
    const auto& t = ctx.spec().inputs[i];
    const at::Tensor& x = in.at(i);
    auto want = spec::shape_of(t, ctx.vars());
    at::ScalarType type = tensor::resolve(t.dtype, ctx.dtype());
    if (x.sizes().vec() != want || x.scalar_type() != type)
      throw std::runtime_error("reference make_inputs left input '" + t.name + "' as " + c10::toString(x.scalar_type()) +
                               tensor::shape_str(x.sizes()) + "; " + ctx.spec().path + ":" + std::to_string(t.line) +
                               " declares " + c10::toString(type) + tensor::shape_str(want));
  }
  return in;
}

const Inputs& DrawnInputs::of(int rank) const {
  if (rank < 0 || rank >= ctx_.world())
    throw std::out_of_range("inputs of rank " + std::to_string(rank) + " asked for; ranks are 0.." +
                            std::to_string(ctx_.world() - 1));
  auto it = drawn_.find(rank);
  if (it == drawn_.end()) it = drawn_.emplace(rank, ctx_.inputs_of(rank, key_, ref_)).first;
  return it->second;
}

void check_outputs(const RefCtx& ctx, const std::vector<at::Tensor>& outputs, const std::string& who) {
  const auto& spec = ctx.spec();
  if (outputs.size() != spec.outputs.size())
    throw std::runtime_error(who + " returned " + std::to_string(outputs.size()) + " outputs; " + spec.path +
                             " declares " + std::to_string(spec.outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& t = spec.outputs[i];
    const at::Tensor& y = outputs[i];
    std::string where = spec.path + ":" + std::to_string(t.line);
    if (!y.defined()) throw std::runtime_error(who + " returned no tensor for output '" + t.name + "'");
    at::ScalarType type = tensor::resolve(t.dtype, ctx.dtype());
    if (y.scalar_type() != type)
      throw std::runtime_error(who + " output '" + t.name + "' is " + c10::toString(y.scalar_type()) + "; " + where +
                               " declares " + c10::toString(type));
    auto want = spec::shape_of(t, ctx.vars());
    bool ok = y.dim() == static_cast<int64_t>(want.size());
    for (size_t d = 0; ok && d < want.size(); ++d)
      ok = t.shape[d].dynamic ? y.size(d) <= want[d] : y.size(d) == want[d];
    if (!ok)
      throw std::runtime_error(who + " output '" + t.name + "' has shape " + tensor::shape_str(y.sizes()) + "; " + where +
                               " declares " + tensor::shape_str(want) + " (dims written <= are upper bounds)");
    if (t.host != y.is_cpu() && ctx.device().is_cuda())
      throw std::runtime_error(who + " output '" + t.name + "' is on " + y.device().str() + "; " + where +
                               (t.host ? " declares it on the host" : " expects it on the rank's device"));
  }
}

}  // namespace ref
}  // namespace pkb
