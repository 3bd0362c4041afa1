#include "eval/reference_candidate.hpp"

#include <ATen/ATen.h>

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

class ReferenceRun : public ReferenceCandidate {
 public:
  ReferenceRun(const spec::ProblemSpec& spec, const std::string& size, int world, int rank, at::Device device,
                     at::ScalarType dt, Comm& comm)
      : spec_(spec), device_(device),
        ctx_(spec_, spec_.vars_for(size, world, rank), device, dt, &comm, /*seed=*/0),
        reference_(ref::create_reference(spec_.slug)) {
    reference_->setup(ctx_);
    for (auto& t : spec_.outputs) capacity_.push_back(spec::shape_of(t, ctx_.vars()));
  }

  void set_form(ReferenceForm form) override { form_ = form; }

  int init(pkb_ctx*, const std::vector<pkb_tensor>&, const std::vector<pkb_tensor>&) override { return 0; }

  // The reference on views of the set's inputs (those it may change, it changes there, as
  // a candidate would) and outputs, made once and kept while the set's slots stay where they
  // are. A data-dependent dim's size goes back through pkb_tensor::sizes.
  int run(pkb_ctx* c, const std::vector<pkb_tensor>& in, std::vector<pkb_tensor>& out) override {
    try {
      const Inputs& x = inputs_over(in);
      Outputs& y = outputs_over(out);
      y.reset_sizes();
      if (form_ == ReferenceForm::into_outputs) {
        reference_->run(ctx_, x, y);
      } else {
        Outputs own = ref::make_outputs(ctx_);
        reference_->run(ctx_, x, own);
        std::vector<at::Tensor> made = own.results();
        for (size_t i = 0; i < made.size(); ++i) y.set(i, made[i]);
      }
      for (size_t i = 0; i < out.size(); ++i)
        for (int d = 0; d < out[i].ndim; ++d) out[i].sizes[d] = y.sizes(i)[d];
      return 0;
    } catch (const std::exception& e) {
      c->set_error(c, e.what());
      return 1;
    }
  }

  void finalize(pkb_ctx*) override {}

  std::string returned(const char* entry, int rc) const override {
    return std::string("the reference as a candidate (") + entry + ") failed, code " + std::to_string(rc);
  }

 private:
  // Views of the set's inputs: the last ones while every slot is where it was, at the same
  // sizes and strides (a reference that changed a view's shape in place gets new ones).
  const Inputs& inputs_over(const std::vector<pkb_tensor>& in) {
    bool same = inputs_.size() == in.size();
    for (size_t i = 0; same && i < in.size(); ++i) {
      const at::Tensor& v = inputs_.at(i);
      same = v.data_ptr() == in[i].data && v.sizes().equals(c10::IntArrayRef(in[i].sizes, in[i].ndim)) &&
             v.strides().equals(c10::IntArrayRef(in[i].strides, in[i].ndim));
    }
    if (!same) {
      inputs_ = Inputs();
      for (size_t i = 0; i < in.size(); ++i)
        inputs_.add(spec_.inputs[i].name, view_of(in[i], c10::IntArrayRef(in[i].sizes, in[i].ndim), device_));
    }
    return inputs_;
  }

  // The set's outputs at their declared shapes: a call's sizes start at the capacity,
  // whatever the last one reported.
  Outputs& outputs_over(const std::vector<pkb_tensor>& out) {
    bool same = outputs_.size() == out.size();
    for (size_t i = 0; same && i < out.size(); ++i) same = outputs_.at(i).data_ptr() == out[i].data;
    if (!same) {
      std::vector<at::Tensor> views;
      for (size_t i = 0; i < out.size(); ++i) views.push_back(view_of(out[i], capacity_.at(i), device_));
      outputs_ = ref::outputs_over(spec_, views);
    }
    return outputs_;
  }

  spec::ProblemSpec spec_;  // the Ctx keeps a reference to it
  at::Device device_;
  ReferenceForm form_ = ReferenceForm::into_outputs;
  ref::RefCtx ctx_;
  std::unique_ptr<Reference> reference_;
  std::vector<std::vector<int64_t>> capacity_;  // each output's declared shape
  Inputs inputs_;
  Outputs outputs_;
};

}  // namespace

std::unique_ptr<ReferenceCandidate> make_reference_candidate(const spec::ProblemSpec& spec, const std::string& size,
                                                             int world, int rank, at::Device device, at::ScalarType dt,
                                                             Comm& comm) {
  return std::make_unique<ReferenceRun>(spec, size, world, rank, device, dt, comm);
}

}  // namespace pkb::eval
