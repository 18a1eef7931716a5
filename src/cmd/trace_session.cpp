// SPDX-License-Identifier: Apache-2.0
#include "cmd/trace_session.hpp"

#include <algorithm>

#include "experiment/event_folding.hpp"
#include "sys/tsc.hpp"

namespace shootdown::cmd {

namespace {

class KernelTraceSession final : public exp::TraceSession {
 public:
  explicit KernelTraceSession(std::unique_ptr<sys::Tracer> t) : tracer_(std::move(t)) {}
  void start() override { tracer_->start_reader(); }
  std::int32_t reader_tid() const override { return tracer_->reader_tid(); }
  void fold(std::span<const std::pair<std::int64_t, std::int64_t>> ranges) override {
    exp::fold_ranges(*tracer_, ranges, folded_);
  }
  void ipis(std::span<const int> cpus, std::int64_t from_ns, std::int64_t until_ns,
            const std::function<void(int, std::int64_t)>& each) override {
    tracer_->each_event_between(from_ns, until_ns, [&](const KernelEvent& e) {
      if (is_ipi_arrival(e) && std::find(cpus.begin(), cpus.end(), e.cpu) != cpus.end()) each(e.cpu, e.mono_ns);
    });
  }
  KernelTrace stop() override {
    KernelTrace kt = tracer_->stop();
    kt.folded = std::move(folded_);
    return kt;
  }

 private:
  std::unique_ptr<sys::Tracer> tracer_;  // its destructor closes everything on early exits
  FoldedEvents folded_;
};

class Window final : public exp::TraceSession {
 public:
  explicit Window(sys::Tracer& t) : t_(t) {}
  std::int32_t reader_tid() const override { return t_.reader_tid(); }
  void start() override {
    t_.drain();
    (void)t_.take_events();  // between trials: not ours to analyse
    lost0_ = t_.lost_events();
    start_ns_ = sys::mono_now_ns();
  }
  KernelTrace stop() override {
    KernelTrace kt;
    kt.stop_ns = sys::mono_now_ns();
    t_.drain();
    kt.enabled = true;
    kt.status = "on (one tracer for all trials)";
    kt.tracepoints = t_.tracepoints();
    kt.missing = t_.missing();
    kt.start_ns = start_ns_;
    kt.lost_events = t_.lost_events() - lost0_;
    for (auto& e : t_.take_events())
      if (e.mono_ns >= start_ns_) kt.events.push_back(e);
    kt.cpumasks = t_.cpumasks();
    if (std::string note = t_.cpumask_note(); !note.empty()) kt.missing.push_back(std::move(note));
    std::stable_sort(kt.events.begin(), kt.events.end(),
                     [](const KernelEvent& a, const KernelEvent& b) { return a.mono_ns < b.mono_ns; });
    for (const auto& e : kt.events)
      if (e.type == EventType::kCsdFunctionEntry || e.type == EventType::kCsdFunctionExit) {
        const auto addr = static_cast<std::uint64_t>(e.b);
        if (addr && !kt.symbols.count(addr)) kt.symbols.emplace(addr, t_.symbolize(addr));
      }
    return kt;
  }

 private:
  sys::Tracer& t_;
  std::int64_t start_ns_ = 0;
  std::int64_t lost0_ = 0;
};

}  // namespace

sys::TracerOptions tracer_options(const std::vector<int>& cpus, int culprit_cpu, bool callchains, int avoid_cpu) {
  sys::TracerOptions o;
  o.cpus = cpus;
  o.culprit_cpu = culprit_cpu;
  o.callchains = callchains;
  o.reader_cpu = culprit_cpu;
  if (culprit_cpu < 0 && avoid_cpu >= 0)
    for (int c : cpus)
      if (c != avoid_cpu) {
        o.reader_cpu = c;
        break;
      }
  return o;
}

sys::TracerOptions kernel_trace_options(const Plan& plan, bool callchains) {
  std::vector<int> cpus{plan.culprit_cpu};
  cpus.insert(cpus.end(), plan.victim_cpus.begin(), plan.victim_cpus.end());
  return tracer_options(cpus, plan.culprit_cpu, callchains);
}

Expected<std::unique_ptr<exp::TraceSession>> open_kernel_trace(const Plan& plan) {
  auto t = sys::Tracer::open(kernel_trace_options(plan));
  if (!t) return Error{t.error()};
  return std::unique_ptr<exp::TraceSession>(std::make_unique<KernelTraceSession>(std::move(*t)));
}

Expected<std::unique_ptr<exp::TraceSession>> SharedTracer::open(const Plan& plan) {
  if (!tried_) {
    tried_ = true;
    if (auto t = sys::Tracer::open(kernel_trace_options(plan, /*callchains=*/false)))
      tracer_ = std::move(*t);
    else
      why_ = t.error();
  }
  if (!tracer_) return Error{why_};
  return std::unique_ptr<exp::TraceSession>(std::make_unique<Window>(*tracer_));
}

}  // namespace shootdown::cmd
