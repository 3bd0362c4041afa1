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

void Outputs::add(const std::string& name, at::Tensor slot, std::vector<bool> dynamic) {
  names_.push_back(name);
  sizes_.push_back(slot.sizes().vec());
  dynamic.resize(static_cast<size_t>(slot.dim()), false);
  dynamic_.push_back(std::move(dynamic));
  slots_.push_back(std::move(slot));
}

size_t Outputs::index(const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return i;
  throw std::out_of_range("no output called '" + name + "'");
}

at::Tensor& Outputs::operator[](const std::string& name) { return slots_[index(name)]; }

void Outputs::set(const std::string& name, const at::Tensor& y) { set(index(name), y); }

void Outputs::set(const std::vector<at::Tensor>& ys) {
  if (ys.size() != slots_.size())
    throw std::runtime_error("the reference set " + std::to_string(ys.size()) + " outputs; the spec declares " +
                             std::to_string(slots_.size()));
  for (size_t i = 0; i < ys.size(); ++i) set(i, ys[i]);
}

void Outputs::set(size_t i, const at::Tensor& y) {
  const at::Tensor& slot = slots_.at(i);
  const std::string what = "the reference's output '" + names_[i] + "'";
  if (!y.defined()) throw std::runtime_error(what + " is no tensor");
  if (y.scalar_type() != slot.scalar_type())
    throw std::runtime_error(what + " is " + c10::toString(y.scalar_type()) + "; the spec declares " +
                             c10::toString(slot.scalar_type()));
  if (y.device() != slot.device())
    throw std::runtime_error(what + " is on " + y.device().str() + "; the spec declares it on " + slot.device().str());
  bool fits = y.dim() == slot.dim();
  for (int64_t d = 0; fits && d < y.dim(); ++d)
    fits = dynamic_[i][d] ? y.size(d) <= slot.size(d) : y.size(d) == slot.size(d);
  if (!fits)
    throw std::runtime_error(what + " has shape " + tensor::shape_str(y.sizes()) + "; the spec declares " +
                             tensor::shape_str(slot.sizes()) + " (data-dependent dims at most that)");
  sizes_[i] = y.sizes().vec();
  at::Tensor into = slot;
  for (int64_t d = 0; d < y.dim(); ++d)
    if (y.size(d) != slot.size(d)) into = into.narrow(d, 0, y.size(d));
  if (y.data_ptr() == into.data_ptr() && y.strides() == into.strides()) return;  // written in place
  ++copies_;
  // One raw copy where both are dense in row-major order at y's sizes; else copy_.
  bool raw = y.is_contiguous() && into.is_contiguous();
  if (raw) device::copy_bytes(y.device(), into.data_ptr(), y.data_ptr(), y.nbytes());
  else into.copy_(y, /*non_blocking=*/true);
}

void Outputs::set_size(size_t i, int64_t dim, int64_t size) {
  const at::Tensor& slot = slots_.at(i);
  if (dim < 0 || dim >= slot.dim() || !dynamic_[i][dim])
    throw std::runtime_error("the reference set the size of dim " + std::to_string(dim) + " of output '" + names_[i] +
                             "', which is not a data-dependent dim");
  if (size < 0 || size > slot.size(dim))
    throw std::runtime_error("the reference set dim " + std::to_string(dim) + " of output '" + names_[i] + "' to " +
                             std::to_string(size) + "; its capacity is " + std::to_string(slot.size(dim)));
  sizes_[i][dim] = size;
}

std::vector<at::Tensor> Outputs::results() const {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < slots_.size(); ++i) {
    at::Tensor y = slots_[i];
    for (int64_t d = 0; d < y.dim(); ++d)
      if (sizes_[i][d] != y.size(d)) y = y.narrow(d, 0, sizes_[i][d]);
    out.push_back(y);
  }
  return out;
}

void Outputs::reset_sizes() {
  for (size_t i = 0; i < slots_.size(); ++i) sizes_[i] = slots_[i].sizes().vec();
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

namespace {

std::vector<bool> dynamic_dims(const spec::TensorSpec& t) {
  std::vector<bool> d;
  for (auto& dim : t.shape) d.push_back(dim.dynamic);
  return d;
}

}  // namespace

Outputs make_outputs(const RefCtx& ctx) {
  Outputs out;
  for (auto& t : ctx.spec().outputs) {
    at::Device where = t.host ? at::Device(at::kCPU) : ctx.device();
    at::TensorOptions o = at::TensorOptions().dtype(tensor::resolve(t.dtype, ctx.dtype())).device(where);
    out.add(t.name, at::empty(spec::shape_of(t, ctx.vars()), o), dynamic_dims(t));
  }
  return out;
}

Outputs outputs_over(const spec::ProblemSpec& spec, const std::vector<at::Tensor>& slots) {
  Outputs out;
  for (size_t i = 0; i < spec.outputs.size(); ++i) out.add(spec.outputs[i].name, slots.at(i), dynamic_dims(spec.outputs[i]));
  return out;
}

}  // namespace ref
}  // namespace pkb
