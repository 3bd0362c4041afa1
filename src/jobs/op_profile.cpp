#include "jobs/op_profile.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include <ATen/record_function.h>

namespace pkb::jobs {

namespace {

using Clock = std::chrono::steady_clock;

// The profile of this thread (one at a time: a thread times one loop at a time).
thread_local OpProfile* t_profile = nullptr;

struct Started : at::ObserverContext {
  Clock::time_point at;
  bool nested = false;
};

}  // namespace

struct OpProfileCallbacks {
  static std::unique_ptr<at::ObserverContext> start(const at::RecordFunction&) {
    OpProfile* p = t_profile;
    if (!p || !p->inside_) return nullptr;
    auto s = std::make_unique<Started>();
    s->nested = p->depth_++ > 0;
    s->at = Clock::now();
    return s;
  }

  static void end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
    auto end = Clock::now();
    OpProfile* p = t_profile;
    if (!p || !ctx) return;  // started outside a call, or before this profile
    auto* s = static_cast<Started*>(ctx);
    --p->depth_;
    OpProfile::Total& t = p->totals_[{fn.name(), s->nested}];
    t.us += std::chrono::duration<double, std::micro>(end - s->at).count();
    ++t.count;
  }
};

OpProfile::OpProfile() {
  t_profile = this;
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&OpProfileCallbacks::start, &OpProfileCallbacks::end)
                                           .needsInputs(false)
                                           .needsOutputs(false)
                                           .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
}

OpProfile::~OpProfile() {
  at::removeCallback(handle_);
  if (t_profile == this) t_profile = nullptr;
}

void OpProfile::inside(bool yes) {
  inside_ = yes;
  if (!yes) depth_ = 0;  // an op that threw out of a call never ended
}

std::vector<eval::OpHost> OpProfile::per_call(size_t calls) const {
  std::vector<eval::OpHost> out;
  double n = static_cast<double>(std::max<size_t>(calls, 1));
  for (auto& [key, t] : totals_) out.push_back({key.first, static_cast<double>(t.count) / n, t.us / n, key.second});
  std::stable_sort(out.begin(), out.end(), [](const eval::OpHost& a, const eval::OpHost& b) { return a.us > b.us; });
  return out;
}

}  // namespace pkb::jobs
