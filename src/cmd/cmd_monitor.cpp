// SPDX-License-Identifier: Apache-2.0
// shootdown monitor: plan (validate) -> prepare (tracer, server) -> loop
// (sample, print, export) -> restore (stop server, disable tracepoints).
//
// Kernel state: the tracer opens perf tracepoint events only (no ftrace
// setting is written) and releases a tracefs mount it made as soon as the
// events are open; closing the events at exit is the whole restore.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <unordered_map>
#include <fmt/core.h>
#include <mutex>
#include <thread>
#include <unistd.h>

#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/trace_session.hpp"
#include "core/event_counts.hpp"
#include "core/cpulist.hpp"
#include "core/events.hpp"
#include "core/doctor.hpp"
#include "core/monitor.hpp"
#include "core/monitor_attrib.hpp"
#include "core/units.hpp"
#include "core/analysis.hpp"
#include "core/stall_model.hpp"
#include "sink/influx.hpp"
#include "sink/json_read.hpp"
#include "sink/monitor_out.hpp"
#include "sys/bpf_flush_counter.hpp"
#include "sys/cpus.hpp"
#include "sys/facts.hpp"
#include "sys/fs.hpp"
#include "sys/interrupts.hpp"
#include "sys/kallsyms.hpp"
#include "sys/metrics_server.hpp"
#include "sys/net.hpp"
#include "sys/perf_count.hpp"
#include "sys/perf_trace.hpp"
#include "sys/task_info.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

namespace shootdown::cmd {

namespace {

struct MonitorOptions {
  std::string interval = "1s";
  std::string count;
  std::string cpus;
  bool json = false;
  std::string pid;
  std::string listen;
  std::string influx;
  std::string trace = "auto";
  int top = 5;
  int series = 20;
  std::string calibrate_from;
};

struct Plan {
  std::int64_t interval_ns = 1000000000;
  std::int64_t count = 0;  // 0 = forever
  std::vector<int> cpus;   // shown; empty = all in /proc/interrupts
  int pid = 0;
  std::string listen_host;
  int listen_port = -1;
  std::optional<influx::Url> influx;
  TraceMode trace = TraceMode::kAuto;
  std::optional<StallModel> stall_model;
};

// --calibrate-from DIR: the stall model from a run's result.json.
StallModel load_stall_model(const std::string& value) {
  std::string dir = value;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string file = dir + "/result.json";
  auto text = sys::read_file(file);
  if (!text)
    throw UsageError(
        fmt::format("--calibrate-from value '{}': {} {}; accepted: the --out DIR of a `shootdown run` "
                    "on this machine",
                    value, file, sys::path_exists(file) ? "cannot be read" : "does not exist"));
  std::string why;
  std::optional<StallModel> m;
  try {
    sink::LoadedResult loaded = sink::result_from_json(*text);
    complete_loaded_analysis(loaded.result, loaded.analysis);
    auto model = stall_model_from(loaded.analysis.attribution, fmt::format("run {} ({})", loaded.result.run_id, file));
    if (model)
      m = std::move(*model);
    else
      why = model.error();
  } catch (const sink::JsonReadError& e) {
    why = e.what();
  }
  if (!m)
    throw UsageError(
        fmt::format("--calibrate-from value '{}': {}: {}; accepted: a run whose victims received "
                    "shootdown IPIs (e.g. run --release munmap)",
                    value, file, why));
  return *m;
}

std::int64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::string clock_hms(std::int64_t wall_ns) {
  const time_t t = static_cast<time_t>(wall_ns / 1000000000LL);
  tm lt{};
  localtime_r(&t, &lt);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &lt);
  return buf;
}

Plan make_plan(const MonitorOptions& o) {
  Plan p;
  auto iv = parse_duration_ns(o.interval, 1000000000LL);
  if (!iv || *iv < 10000000LL || *iv > 3600LL * 1000000000LL)
    throw UsageError(
        fmt::format("interval value '{}' is {}; accepted: a duration from 10ms to 1h (bare number = seconds)",
                    o.interval, iv ? std::string("out of range") : iv.error()));
  p.interval_ns = *iv;
  if (!o.count.empty()) {
    auto c = parse_int(o.count);
    if (!c || *c < 1)
      throw UsageError(fmt::format("count value '{}' is not a positive integer; accepted: 1, 2, ...", o.count));
    p.count = *c;
  }
  const sys::Topology topo = sys::read_topology();
  if (!o.cpus.empty()) {
    auto l = parse_cpulist(o.cpus);
    if (!l || l->empty())
      throw UsageError(fmt::format("--cpus value '{}' is not a CPU list ({}); accepted: e.g. 0,1 or 0-3", o.cpus,
                                   l ? std::string() : l.error()));
    for (int c : *l)
      if (!topo.online.empty() && !topo.is_online(c))
        throw UsageError(fmt::format("--cpus value '{}': cpu {} is not online; accepted: {}", o.cpus, c,
                                     format_cpulist(topo.online)));
    p.cpus = *l;
  }
  const auto mode = parse_trace_mode(o.trace);
  if (!mode)
    throw UsageError(
        fmt::format("--trace value '{}' is not accepted; accepted: auto, on, bpf, ring, count, off", o.trace));
  p.trace = *mode;
  if (!o.pid.empty()) {
    auto v = parse_int(o.pid);
    if (!v || *v < 1 || *v > 4194304)
      throw UsageError(fmt::format("--pid value '{}' is not a process id; accepted: a PID in 1..4194304", o.pid));
    if (!sys::path_exists("/proc/" + std::to_string(*v)))
      throw UsageError(fmt::format("--pid value '{}': no such process", o.pid));
    if (p.trace == TraceMode::kOff || p.trace == TraceMode::kCount)
      throw UsageError(
          fmt::format("--pid value '{}' needs tracepoints; accepted only with --trace auto, on, bpf or ring", o.pid));
    p.pid = static_cast<int>(*v);
  }
  if (o.series < 0 || o.series > 1000)
    throw UsageError(fmt::format("--series value '{}' is out of range; accepted: 0..1000", o.series));
  if (o.top < 0 || o.top > 100)
    throw UsageError(fmt::format("--top value '{}' is out of range; accepted: 0..100", o.top));
  if (!o.listen.empty()) {
    // HOST:PORT, [V6]:PORT or PORT alone (then loopback).
    std::string host = "127.0.0.1", port = o.listen;
    const auto colon = o.listen.rfind(':');
    if (colon != std::string::npos) {
      host = o.listen.substr(0, colon);
      port = o.listen.substr(colon + 1);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
      if (host.empty()) host = "127.0.0.1";
    }
    auto pn = parse_int(port);
    if (!pn || *pn < 0 || *pn > 65535)
      throw UsageError(fmt::format(
          "--listen value '{}' is not HOST:PORT; accepted: 127.0.0.1:9100, :9100, 9100 (port 0..65535)", o.listen));
    p.listen_host = host;
    p.listen_port = static_cast<int>(*pn);
  }
  if (!o.calibrate_from.empty()) {
    if (o.trace != "auto" && o.trace != "on" && o.trace != "bpf")
      throw UsageError(
          fmt::format("--calibrate-from value '{}' needs handler times from the BPF engine; accepted "
                      "only with --trace auto, on or bpf (not '{}')",
                      o.calibrate_from, o.trace));
    p.stall_model = load_stall_model(o.calibrate_from);
  }
  if (!o.influx.empty()) {
    auto u = influx::parse_url(o.influx);
    if (!u)
      throw UsageError(fmt::format(
          "--influx value '{}': {}; accepted: http://HOST:PORT/write?db=NAME or udp://HOST:PORT", o.influx, u.error()));
    p.influx = *u;
  }
  return p;
}

// Shared between the loop and the /metrics handler: totals are refreshed on
// every tick and on every scrape, so a scrape sees current counters.
// Why kernel-range flushes are not counted without the BPF engine.
constexpr const char* kKernelFlushNeedsBpf = "needs the BPF engine with csd tracepoints (--trace auto, on or bpf)";

class Collector {
 public:
  // At most one source of tlb_flush counts: the BPF aggregation, the ring
  // of traced events, or the kernel-side counters (no attribution).
  Collector(std::vector<int> cpus, sys::Tracer* tracer, int pid, std::size_t max_series,
            const sys::TlbFlushCounter* counter, sys::BpfFlushCounter* bpf, std::optional<StallModel> model)
      : cpus_(std::move(cpus)), tracer_(tracer), pid_(pid), attribution_(max_series), counter_(counter), bpf_(bpf) {
    totals_.trace = tracer_ != nullptr || counter_ != nullptr || bpf_ != nullptr;
    totals_.timed = bpf_ != nullptr;
    if (bpf_) totals_.wait_unmeasured = bpf_->wait_unmeasured();
    if (bpf_) totals_.unlinked = bpf_->unlinked();
    if (bpf_) totals_.stall_model = std::move(model);
    totals_.kernel_flush_unmeasured = kKernelFlushNeedsBpf;  // until report_kernel_flush says
  }

  // Whether kernel-range flushes are counted: "" yes, else why not; and
  // the functions that are not watched.
  void set_kernel_flush(std::string unmeasured, std::string unwatched) {
    std::lock_guard<std::mutex> lk(mu_);
    totals_.kernel_flush_unmeasured = std::move(unmeasured);
    totals_.kernel_flush_unwatched = std::move(unwatched);
  }

  // Doctor's finding that remote flushes here go without IPIs (INVLPGB
  // broadcast, arm64): what every count and time here then misses.
  void set_no_ipi_flushes(std::string found) {
    std::lock_guard<std::mutex> lk(mu_);
    totals_.no_ipi_flushes = std::move(found);
  }

  // Everything: /proc/interrupts, the kernel-side counters and the traced
  // events (interval ticks and scrapes).
  MonitorTotals refresh() {
    std::lock_guard<std::mutex> lk(mu_);
    auto snap = sys::read_interrupts();
    if (!snap) throw RuntimeError(snap.error());
    totals_.mono_ns = snap->mono_ns;
    totals_.wall_ns = wall_now_ns();
    if (totals_.cpus.empty()) {
      const auto& order = cpus_.empty() ? snap->cpus : cpus_;
      for (int c : order) totals_.cpus.push_back(MonitorCpu{c, 0, 0, {}});
    }
    for (auto& c : totals_.cpus) {
      c.tlb = snap->get("TLB", c.cpu).value_or(0);
      c.cal = snap->get("CAL", c.cpu).value_or(0);
    }
    if (counter_)
      for (auto& c : totals_.cpus) c.flush = counter_->read(c.cpu);
    if (bpf_) {
      const auto by_cpu = bpf_->read_reasons();
      const auto times = bpf_->read_times();
      for (auto& c : totals_.cpus) {
        if (c.cpu < 0) continue;
        const auto i = static_cast<std::size_t>(c.cpu);
        if (i < by_cpu.size()) c.flush = by_cpu[i];
        if (i < times.size()) {
          c.handler_ns = times[i].handler_ns;
          c.handler_irqs = times[i].handler_irqs;
          c.wait_ns = times[i].wait_ns;
          c.waits = times[i].waits;
          c.wrong_ns = times[i].wrong_ns;
          c.wrong_irqs = times[i].wrong_irqs;
          c.kflush_ns = times[i].kflush_ns;
          c.kflush_irqs = times[i].kflush_irqs;
          c.kflush_initiated = times[i].kflush_initiated;
          c.kflush_ipis = times[i].kflush_queued;
          c.kflush_noirq = times[i].kflush_noirq;
        }
      }
    }
    fold_locked(snap->mono_ns, /*prune=*/true);
    return totals_;
  }

  // Only the traced events, between ticks: a process that exits before the
  // next tick is still named (its comm and cgroup read while it lives),
  // without re-reading /proc/interrupts or the counters.
  void tally_traced_events() {
    std::lock_guard<std::mutex> lk(mu_);
    if (totals_.cpus.empty()) return;  // the first refresh() lays out the CPUs
    fold_locked(sys::mono_now_ns(), /*prune=*/false);
  }

 private:
  void fold_locked(std::int64_t now_ns, bool prune) {
    if (bpf_) fold_bpf_locked(now_ns, prune);
    if (!tracer_) return;
    EventTally tally;
    TallyFilter f;
    f.pid = pid_;
    const auto events = tracer_->take_events();
    tally_events(events, f, tally);
    for (auto& c : totals_.cpus)
      if (auto it = tally.cpus.find(c.cpu); it != tally.cpus.end())
        for (int r = 0; r < kTlbFlushReasons; ++r)
          c.flush[static_cast<std::size_t>(r)] += it->second.tlb_flush[static_cast<std::size_t>(r)];
    // Per process and cgroup (bounded series), from the same events.
    for (const auto& ev : events) {
      if (ev.type != EventType::kTlbFlush || ev.a < 0 || ev.a >= kTlbFlushReasons) continue;
      if (pid_ > 0 && ev.pid != pid_) continue;
      attribution_.add_flush(static_cast<int>(ev.a), ev.pid, now_ns, [&](int pid) { return tasks_.get(pid, now_ns); });
    }
    attribution_.fill(totals_);
    totals_.lost_events = tracer_->lost_events();
  }

  // The kernel's table {tgid, reason} -> count, read as deltas since the
  // last fold. A process that is gone keeps the name and cgroup the kernel
  // saw; once its last count is folded its entry is erased (prune, at
  // intervals and scrapes), which keeps the table bounded on a host whose
  // processes come and go.
  void fold_bpf_locked(std::int64_t now_ns, bool prune) {
    std::map<int, bool> quiet;  // tgid -> nothing new in any of its entries
    for (const auto& t : bpf_->tasks()) {
      sys::BpfTaskCount& seen = bpf_seen_[{t.tgid, t.reason}];
      const std::int64_t delta = t.count - seen.count, delta_ns = t.ns - seen.ns;
      const std::int64_t delta_inflicted = t.inflicted_ns - seen.inflicted_ns;
      const std::int64_t delta_other = t.inflicted_other_ns - seen.inflicted_other_ns;
      seen = t;
      bool& q = quiet.try_emplace(t.tgid, true).first->second;
      q = q && delta == 0 && delta_ns == 0 && delta_inflicted == 0;
      auto lookup = [&](int pid) {
        TaskInfo ti = tasks_.get(pid, now_ns);
        if (ti.comm == "?" && !t.comm.empty()) ti.comm = t.comm;
        if (ti.cgroup == "?" && t.cgroup_id != 0) ti.cgroup = cgroup_of_id(t.cgroup_id);
        return ti;
      };
      if (t.reason == sys::kBpfKeyKernelFlushInit)  // ns: the csds (IPIs) queued
        attribution_.add_kernel_flush(t.tgid, delta, delta_ns, 0, 0, now_ns, lookup);
      else if (t.reason == sys::kBpfKeyKernelFlushHit)
        attribution_.add_kernel_flush(t.tgid, 0, 0, delta, delta_ns, now_ns, lookup);
      else
        attribution_.add(t.reason, t.tgid, delta, delta_ns, now_ns, lookup, delta_inflicted, delta_other);
    }
    if (prune)
      for (const auto& [tgid, q] : quiet)
        if (q && tgid > 0 && !sys::path_exists("/proc/" + std::to_string(tgid))) {
          bpf_->erase(tgid);
          bpf_seen_.erase({tgid, 1});
          bpf_seen_.erase({tgid, 4});
          bpf_seen_.erase({tgid, sys::kBpfKeyKernelFlushHit});
          bpf_seen_.erase({tgid, sys::kBpfKeyKernelFlushInit});
        }
    attribution_.fill(totals_);
    totals_.lost_events = bpf_->unattributed();
  }

  std::string cgroup_of_id(std::uint64_t id) {
    if (cgroup_paths_.size() > 4096) cgroup_paths_.clear();
    auto [it, fresh] = cgroup_paths_.try_emplace(id);
    if (fresh) it->second = sys::cgroup_v2_path_of_id(id);
    return it->second.empty() ? "?" : it->second;
  }

  std::mutex mu_;
  std::vector<int> cpus_;
  sys::Tracer* tracer_;
  int pid_;
  MonitorAttribution attribution_;
  const sys::TlbFlushCounter* counter_;
  sys::BpfFlushCounter* bpf_;
  std::map<std::pair<int, int>, sys::BpfTaskCount> bpf_seen_;  // {tgid, reason} -> what was folded
  std::unordered_map<std::uint64_t, std::string> cgroup_paths_;
  sys::TaskInfoCache tasks_;
  MonitorTotals totals_;
};

// The kernel-range flush functions monitor watches, by kallsyms name.
constexpr std::pair<const char*, std::uint64_t sys::KernelFlushFuncs::*> kKernelFlushFuncs[] = {
    {"do_kernel_range_flush", &sys::KernelFlushFuncs::do_kernel_range_flush},
    {"do_flush_tlb_all", &sys::KernelFlushFuncs::do_flush_tlb_all},
    {"__cpa_flush_tlb", &sys::KernelFlushFuncs::cpa_flush_tlb}};

class MonitorTool final : public Tool {
 public:
  explicit MonitorTool(const MonitorOptions& o) : o_(o) {}

  void plan() override { plan_ = make_plan(o_); }

  void prepare() override {
    // Tracepoints on every online CPU: initiators can run anywhere. The
    // engine: BPF aggregation in the kernel (bpf; auto and on prefer it),
    // every event through a perf ring (ring; the fallback where BPF cannot
    // load), or per-reason counters only (count).
    std::string bpf_why;
    if (plan_.trace == TraceMode::kCount) {
      auto counter = sys::TlbFlushCounter::open(sys::read_topology().online);
      if (!counter) throw RuntimeError("kernel-side tlb_flush counters unavailable: " + counter.error());
      counter_ = std::move(*counter);
      trace_status_ = "count (kernel-side counters, no per-process attribution)";
    } else if (plan_.trace == TraceMode::kAuto || plan_.trace == TraceMode::kOn || plan_.trace == TraceMode::kBpf) {
      const sys::Kallsyms syms = sys::Kallsyms::load();
      for (const auto& [name, addr] : kKernelFlushFuncs) kflush_funcs_.*addr = syms.address_of(name);
      if (auto bpf = sys::BpfFlushCounter::open(plan_.pid, syms.address_of("flush_tlb_func"), kflush_funcs_))
        bpf_ = std::move(*bpf);
      else
        bpf_why = bpf.error();
      if (bpf_) {
        trace_status_ = fmt::format("bpf ({}{}; timed: handlers{}{})", bpf_->attach_point(),
                                    plan_.pid > 0 ? fmt::format(", pid {}", plan_.pid) : "",
                                    bpf_->wait_method().empty() ? "" : ", wait by " + bpf_->wait_method(),
                                    bpf_->unlinked().empty() ? ", csd link" : "");
        if (!bpf_->wait_unmeasured().empty())
          std::fprintf(stderr, "shootdown monitor: initiators' wait not measured: %s\n",
                       bpf_->wait_unmeasured().c_str());
      } else if (plan_.trace == TraceMode::kBpf) {
        throw RuntimeError("BPF aggregation unavailable: " + bpf_why + " (--trace ring uses a perf ring instead)");
      }
    }
    if (!bpf_ && !counter_ && plan_.trace != TraceMode::kOff) {
      std::string why;
      if (auto tracer = sys::Tracer::open(tracer_options(sys::read_topology().online, -1, false)))
        tracer_ = std::move(*tracer);
      else
        why = tracer.error();
      if (!tracer_) {
        if (plan_.trace != TraceMode::kAuto || plan_.pid > 0)
          throw RuntimeError(
              fmt::format("tracepoints unavailable: {}{}", why, plan_.pid > 0 ? " (--pid needs them)" : ""));
        trace_status_ = "unavailable: " + why;
        std::fprintf(stderr, "shootdown monitor: tracepoints unavailable (%s); showing /proc/interrupts only\n",
                     why.c_str());
      } else {
        tracer_->start_reader();
        trace_status_ = plan_.pid > 0 ? fmt::format("ring (pid {})", plan_.pid) : "ring";
        if (!bpf_why.empty()) {
          trace_status_ += " (BPF unavailable)";
          std::fprintf(
              stderr, "shootdown monitor: BPF aggregation unavailable (%s); every tlb_flush goes through a perf ring\n",
              bpf_why.c_str());
        }
      }
    }
    collector_ = std::make_unique<Collector>(plan_.cpus, tracer_.get(), plan_.pid, static_cast<std::size_t>(o_.series),
                                             counter_.get(), bpf_.get(), plan_.stall_model);
    report_kernel_flush();
    if (plan_.stall_model && !bpf_)
      throw RuntimeError("--calibrate-from: the BPF engine did not load (" + bpf_why +
                         "): no handler times to estimate the stall from");
    if (plan_.stall_model)
      std::fprintf(stderr, "shootdown monitor: estimating stall: %s\n", plan_.stall_model->describe().c_str());
    const DoctorFinding broadcast = check_broadcast_flush(sys::read_doctor_facts());
    if (const std::string note = flushes_without_ipis_note(broadcast); !note.empty()) {
      collector_->set_no_ipi_flushes(broadcast.found);
      std::fprintf(stderr, "shootdown monitor: warning: %s\n", note.c_str());
    }
    if (plan_.listen_port >= 0) {
      // The Prometheus endpoint: stopped and joined by its destructor on every exit.
      Collector* collector = collector_.get();
      auto server = sys::MetricsServer::bind(
          plan_.listen_host, plan_.listen_port, [collector] { return monitor_exposition(collector->refresh()); },
          prom::kContentType, sys::MetricsServerLimits{});
      if (!server)
        throw RuntimeError(
            fmt::format("cannot listen on {}:{} ({})", plan_.listen_host, plan_.listen_port, server.error()));
      server_ = std::move(*server);
      server_->start();
      std::fprintf(stderr, "shootdown monitor: serving http://%s:%d/metrics\n", plan_.listen_host.c_str(),
                   server_->port());
    }
  }

  void run() override {
    const bool tty = !o_.json && ::isatty(STDOUT_FILENO) == 1;
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    MonitorTotals prev = collector_->refresh();
    if (!o_.json && !tty)
      std::fputs(format_monitor_header(tracer_ != nullptr || counter_ != nullptr || bpf_ != nullptr).c_str(), stdout);
    std::fflush(stdout);
    std::int64_t next = prev.mono_ns + plan_.interval_ns;
    for (std::int64_t n = 0; plan_.count == 0 || n < plan_.count; ++n) {
      // Sleep in short slices so SIGINT/SIGTERM end the loop promptly. With
      // the tracer, fold its events in every 100 ms between intervals: a
      // process's comm and cgroup are read from /proc while it lives, so a
      // short-lived initiator (a job that exits before the next interval or
      // scrape) is still attributed to its name and cgroup, not to "?".
      std::int64_t folded = sys::mono_now_ns();
      while (!sys::StopSignals::stop_requested()) {
        const std::int64_t now = sys::mono_now_ns();
        const std::int64_t left = next - now;
        if (left <= 0) break;
        if ((tracer_ || bpf_) && now - folded >= 100000000) {
          collector_->tally_traced_events();
          folded = now;
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(left, 50000000)));
      }
      if (sys::StopSignals::stop_requested()) break;
      next += plan_.interval_ns;
      MonitorTotals cur = collector_->refresh();
      const MonitorInterval iv = monitor_interval(prev, cur, static_cast<std::size_t>(o_.top));
      prev = cur;
      if (o_.json) {
        std::fputs((monitor_json_line(iv, trace_status_) + "\n").c_str(), stdout);
      } else if (tty) {
        const std::string title = fmt::format("shootdown monitor  {}  every {}  trace: {}", clock_hms(iv.wall_ns),
                                              format_duration_ns(plan_.interval_ns), trace_status_);
        std::fputs(("\033[H\033[2J" + format_monitor_screen(iv, title.substr(0, 79))).c_str(), stdout);
      } else {
        std::fputs(format_monitor_lines(iv, clock_hms(iv.wall_ns)).c_str(), stdout);
      }
      std::fflush(stdout);
      if (plan_.influx) send_influx(iv, host);
    }
    server_.reset();
    if (tracer_) tracer_->stop();  // disables and closes every event
    if (tty) std::fputs("\n", stdout);
  }

  // A signal is the normal way to end `monitor` (forever by default): exit 0.
  int report() override { return kExitOk; }

 private:
  void send_influx(const MonitorInterval& iv, const char* host) {
    const std::string body = influx::encode_lines(monitor_points(iv, host));
    std::string err;
    if (plan_.influx->scheme == influx::Url::Scheme::kHttp) {
      sys::RetryPolicy pol;
      pol.max_attempts = 2;  // the next interval brings fresh totals anyway
      pol.connect_timeout_ms = 500;
      pol.read_timeout_ms = 2000;
      auto r =
          sys::http_post(fmt::format("http://{}:{}{}",
                                     plan_.influx->host.find(':') != std::string::npos ? "[" + plan_.influx->host + "]"
                                                                                       : plan_.influx->host,
                                     plan_.influx->port, plan_.influx->target),
                         body, "text/plain; charset=utf-8", pol);
      if (!r.ok) err = r.error;
    } else {
      std::size_t oversized = 0;
      auto grams = influx::split_datagrams(body, influx::kUdpMaxPayload, &oversized);
      if (const Status sent = sys::udp_send(plan_.influx->host, plan_.influx->port, grams); !sent)
        err = sent.error().empty() ? "send failed" : sent.error();
    }
    // One warning per distinct failure, not one per interval.
    if (!err.empty() && err != last_influx_error_)
      std::fprintf(stderr, "shootdown monitor: warning: --influx %s: %s (monitoring continues)\n",
                   plan_.influx->text.c_str(), err.c_str());
    last_influx_error_ = err;
  }

  // Whether kernel-range flushes (no tlb_flush tracepoint) are counted,
  // on stderr and in the totals: never zeros as if measured.
  void report_kernel_flush() {
    std::string unmeasured, unwatched;
    if (!bpf_)
      unmeasured = kKernelFlushNeedsBpf;
    else if (!bpf_->csd_attached())
      unmeasured = "csd tracepoints (kernel 6.5+) not attached: " + bpf_->csd_unattached();
    else if (!kflush_funcs_.any())
      unmeasured = "do_kernel_range_flush, do_flush_tlb_all and __cpa_flush_tlb not in /proc/kallsyms";
    for (const auto& [name, addr] : kKernelFlushFuncs)
      if (unmeasured.empty() && kflush_funcs_.*addr == 0)
        unwatched += (unwatched.empty() ? "" : ", ") + std::string(name);
    if (!unwatched.empty()) unwatched += " not in /proc/kallsyms: its flushes are not counted";
    if (!unmeasured.empty())
      std::fprintf(stderr, "shootdown monitor: kernel-range TLB flushes not counted: %s\n", unmeasured.c_str());
    else if (!unwatched.empty())
      std::fprintf(stderr, "shootdown monitor: kernel-range TLB flushes: %s\n", unwatched.c_str());
    collector_->set_kernel_flush(unmeasured, unwatched);
  }

  const MonitorOptions& o_;
  sys::KernelFlushFuncs kflush_funcs_;
  Plan plan_;
  std::unique_ptr<sys::Tracer> tracer_;
  std::unique_ptr<sys::TlbFlushCounter> counter_;
  std::unique_ptr<sys::BpfFlushCounter> bpf_;
  std::string trace_status_ = "off (--trace off)";
  std::unique_ptr<Collector> collector_;
  std::unique_ptr<sys::MetricsServer> server_;  // after collector_: stopped before it goes
  std::string last_influx_error_;
};

}  // namespace

Command add_monitor(CLI::App& root) {
  auto o = std::make_shared<MonitorOptions>();
  CLI::App* app = root.add_subcommand("monitor", "Live per-CPU TLB shootdown and IPI rates");
  app->add_option("interval", o->interval, "Sampling interval (e.g. 1s, 500ms; bare number = seconds)")
      ->capture_default_str();
  app->add_option("count", o->count, "Number of intervals, then exit (default: until Ctrl-C)");
  app->add_option("--cpus", o->cpus, "Show only these CPUs, e.g. 0,1 or 2-3 (default: all)");
  app->add_flag("--json", o->json, "One JSON object per interval on stdout (JSON lines)");
  app->add_option("--pid", o->pid, "Count only tlb_flush events of this process's threads (needs tracepoints)");
  app->add_option("--listen", o->listen, "Serve Prometheus /metrics on HOST:PORT (PORT alone = 127.0.0.1)");
  app->add_option("--influx", o->influx,
                  "Send points each interval: http://HOST:PORT/write?db=NAME or udp://HOST:PORT");
  app->add_option("--trace", o->trace,
                  "tlb:tlb_flush tracepoints: auto (if permitted), on (required); both count in the kernel with "
                  "BPF and fall back to a perf ring; bpf or ring (that engine only), count (kernel-side counters only: "
                  "no per-process/cgroup attribution), off")
      ->capture_default_str();
  app->add_option("--top", o->top, "Top initiating processes to show (0..100)")->capture_default_str();
  app->add_option("--calibrate-from", o->calibrate_from,
                  "Estimate the stall threads feel from handler times, with the model a `shootdown run` measured on "
                  "this machine (its --out DIR)");
  app->add_option("--series", o->series,
                  "Named processes and cgroups kept in exported series, each (0..1000; the rest is 'other')")
      ->capture_default_str();
  return tool_command<MonitorTool>(
      app, o,
      {.notes = "TLB and CAL rates come from /proc/interrupts (no root needed). With tracepoints\n"
                "(root) also tlb:tlb_flush by reason and the processes that send shootdowns\n"
                "(reason 4). On a terminal a top-like screen, otherwise one line per CPU per\n"
                "interval. Stops on Ctrl-C/SIGTERM with exit status 0. Fields: docs/monitor.md.",
       .examples = {"shootdown monitor                        every second until Ctrl-C",
                    "shootdown monitor 250ms 40 --cpus 1      CPU 1, 40 intervals of 250 ms",
                    "shootdown monitor --json 1 10 | jq -c '.cpus[] | {cpu, tlb_per_s}'",
                    "shootdown monitor --listen 127.0.0.1:9177           Prometheus scrape target",
                    "shootdown monitor --influx http://127.0.0.1:8086/write?db=shootdown",
                    "sudo shootdown monitor --pid $(pidof myapp)          flushes myapp initiates",
                    "sudo shootdown run --release munmap --out cal && sudo shootdown monitor --calibrate-from cal",
                    "                                         handler seconds plus an estimated stall"},
       .exit_status = ""});
}

}  // namespace shootdown::cmd
