#include "cmd/trace_session.hpp"

#include "sys/perf_trace.hpp"

namespace shootdown::cmd {

namespace {

class KernelTraceSession final : public exp::TraceSession {
 public:
  explicit KernelTraceSession(std::unique_ptr<sys::Tracer> t) : tracer_(std::move(t)) {}
  void start() override { tracer_->start_reader(); }
  KernelTrace stop() override { return tracer_->stop(); }

 private:
  std::unique_ptr<sys::Tracer> tracer_;  // its destructor closes everything on early exits
};

}  // namespace

sys::TracerOptions kernel_trace_options(const Plan& plan) {
  sys::TracerOptions o;
  o.cpus.push_back(plan.culprit_cpu);
  for (int v : plan.victim_cpus) o.cpus.push_back(v);
  o.culprit_cpu = plan.culprit_cpu;
  o.reader_cpu = plan.culprit_cpu;  // never a victim CPU
  o.callchains = true;
  return o;
}

std::unique_ptr<exp::TraceSession> open_kernel_trace(const Plan& plan, std::string* why) {
  auto t = sys::Tracer::open(kernel_trace_options(plan), why);
  if (!t) return nullptr;
  return std::make_unique<KernelTraceSession>(std::move(t));
}

}  // namespace shootdown::cmd
