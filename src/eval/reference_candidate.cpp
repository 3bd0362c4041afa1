#include "eval/reference_candidate.hpp"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <chrono>

#include "device/device.hpp"
#include "ref/context.hpp"
#include "ref/registry.hpp"
#include "spec/spec.hpp"
#include "tensor/dtypes.hpp"

namespace pkb::eval {

namespace {

// A view of pkb's buffer `t` at `sizes` (its capacity strides), on the rank's device or the host.
// The device goes in the options too: for_blob takes the tensor's dispatch key from them, so
// a CUDA view made with target_device alone ran CPU kernels (oneDNN's matmul) on device
// memory, which crashed on the H200 and could not on the CPU device.
at::Tensor view_of(const pkb_tensor& t, c10::IntArrayRef sizes, at::Device device) {
  std::vector<int64_t> strides(t.strides, t.strides + t.ndim);
  at::Device where = t.on_host ? at::Device(at::kCPU) : device;
  auto type = tensor::to_aten(static_cast<spec::DType>(t.dtype));
  return at::for_blob(t.data, sizes).strides(strides).options(at::TensorOptions().dtype(type).device(where)).target_device(where).make_tensor();
}

// Whether `y` goes into pkb's buffer `t` as its bytes: the same element type and place, both
// dense in row-major order at y's sizes. Then one raw copy does it, where copy_ costs the
// candidate's side (not the judges', whose reference returns its tensors) more host a call
// (`pkb::output_copy` took 7-25 us on the H200 under --profile-ops).
bool copies_raw(const pkb_tensor& t, const at::Tensor& y, at::Device device) {
  at::Device where = t.on_host ? at::Device(at::kCPU) : device;
  if (y.device() != where || !y.is_contiguous() || y.dim() != t.ndim ||
      y.scalar_type() != tensor::to_aten(static_cast<spec::DType>(t.dtype)))
    return false;
  int64_t dense = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (y.size(d) != 1 && t.strides[d] != dense) return false;
    dense *= y.size(d);
  }
  return true;
}

class ReferenceCandidate : public Candidate {
 public:
  ReferenceCandidate(const spec::ProblemSpec& spec, const std::string& size, int world, int rank, at::Device device,
                     at::ScalarType dt, Comm& comm)
      : spec_(spec), device_(device),
        ctx_(spec_, spec_.vars_for(size, world, rank), device, dt, &comm, /*seed=*/0),
        reference_(ref::create_reference(spec_.slug)) {
    reference_->setup(ctx_);
  }

  int init(pkb_ctx*, const std::vector<pkb_tensor>&, const std::vector<pkb_tensor>&) override { return 0; }

  // The reference on views of the set's inputs (those it may change, it changes there, as
  // the judges' reference does on theirs), its outputs copied into the set's, each at the
  // size it has (a data-dependent dim is reported back through pkb_tensor::sizes). The
  // judges time the reference's run alone, on inputs made before the call: so the views
  // are made once and kept while the set's slots stay where they are, and the outputs'
  // shapes are checked against bounds worked out once (the check's message only on a
  // mismatch). What is left of pkb's in the call is the output copy (records say its time).
  int run(pkb_ctx* c, const std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) override {
    try {
      const Inputs& x = inputs_over(in);
      std::vector<at::Tensor> y = reference_->run(ctx_, x);
      auto copy = std::chrono::steady_clock::now();
      RECORD_USER_SCOPE("pkb::output_copy");  // --profile-ops: the one op the judges' reference has not
      if (!outputs_fit(y)) ref::check_outputs(ctx_, y, "the reference");  // throws, saying what is wrong
      for (size_t i = 0; i < out.size(); ++i) {
        for (int d = 0; d < out[i].ndim; ++d) out[i].sizes[d] = y[i].size(d);
        if (copies_raw(out[i], y[i], device_)) device::copy_bytes(y[i].device(), out[i].data, y[i].data_ptr(), y[i].nbytes());
        else view_of(out[i], y[i].sizes(), device_).copy_(y[i], /*non_blocking=*/true);
      }
      copy_us_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - copy).count();
      return 0;
    } catch (const std::exception& e) {
      c->set_error(c, e.what());
      return 1;
    }
  }

  void finalize(pkb_ctx*) override {}

  double adapter_us() const override { return copy_us_; }

  std::string returned(const char* entry, int rc) const override {
    return std::string("the reference as a candidate (") + entry + ") failed, code " + std::to_string(rc);
  }

 private:
  // Views of the set's inputs: the last ones while every slot is where it was, at the same
  // sizes and strides (a reference that changed a view's shape in place gets new ones).
  const Inputs& inputs_over(const std::vector<pkb_tensor>& in) {
    bool same = views_.size() == in.size();
    for (size_t i = 0; same && i < in.size(); ++i) {
      const at::Tensor& v = views_.at(i);
      same = v.data_ptr() == in[i].data && v.sizes().equals(c10::IntArrayRef(in[i].sizes, in[i].ndim)) &&
             v.strides().equals(c10::IntArrayRef(in[i].strides, in[i].ndim));
    }
    if (!same) {
      views_ = Inputs();
      for (size_t i = 0; i < in.size(); ++i)
        views_.add(spec_.inputs[i].name, view_of(in[i], c10::IntArrayRef(in[i].sizes, in[i].ndim), device_));
    }
    return views_;
  }

  // ref::check_outputs' conditions, on bounds worked out once.
  bool outputs_fit(const std::vector<at::Tensor>& y) {
    if (bounds_.empty())
      for (auto& t : spec_.outputs) {
        bounds_.push_back(spec::shape_of(t, ctx_.vars()));
        types_.push_back(tensor::resolve(t.dtype, ctx_.dtype()));
      }
    if (y.size() != spec_.outputs.size()) return false;
    for (size_t i = 0; i < y.size(); ++i) {
      const spec::TensorSpec& t = spec_.outputs[i];
      if (!y[i].defined() || y[i].scalar_type() != types_[i] ||
          y[i].dim() != static_cast<int64_t>(bounds_[i].size()) || (t.host != y[i].is_cpu() && device_.is_cuda()))
        return false;
      for (size_t d = 0; d < bounds_[i].size(); ++d)
        if (t.shape[d].dynamic ? y[i].size(d) > bounds_[i][d] : y[i].size(d) != bounds_[i][d]) return false;
    }
    return true;
  }

  spec::ProblemSpec spec_;  // the Ctx keeps a reference to it
  at::Device device_;
  ref::RefCtx ctx_;
  std::unique_ptr<Reference> reference_;
  Inputs views_;
  std::vector<std::vector<int64_t>> bounds_;  // each output's shape, its dynamic dims' upper bounds
  std::vector<at::ScalarType> types_;
  double copy_us_ = 0;  // the last run's check and copy of the outputs (adapter_us)
};

}  // namespace

std::unique_ptr<Candidate> make_reference_candidate(const spec::ProblemSpec& spec, const std::string& size, int world,
                                                    int rank, at::Device device, at::ScalarType dt, Comm& comm) {
  return std::make_unique<ReferenceCandidate>(spec, size, world, rank, device, dt, comm);
}

}  // namespace pkb::eval
