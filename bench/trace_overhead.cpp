// SPDX-License-Identifier: Apache-2.0
// trace_overhead: what does the kernel tracer cost the victim? One real
// experiment (release=reuse: the control arm, no shootdowns) with a long
// baseline; during it a thread on the culprit CPU alternates blocks of two
// segments in a seeded random order: "traced" (a sys::Tracer opened with the
// run's own TracerOptions, its reader started, kept open for the segment,
// then stopped and destroyed) and "untraced" (no tracer). Same process, same
// chunk B, same pages, same victim thread: separate runs differ by more than
// the effect (different physical pages, host noise), a block's two segments
// do not. core/overhead turns the victim's samples and the segment bounds
// into per-pair p50 ratios, their median and a bootstrap CI (docs/kernel-evidence.md,
// "Tracing overhead").
//
// --aa runs the same schedule with "traced" segments that open no tracer (an
// A/A control): its interval is the method's noise floor on this machine.
//
// Exit status: 0 measured (whatever the verdict), 1 runtime failure or
// incomplete run, 2 bad input, 77 skipped (no root / no tracefs: the tracer
// cannot be opened), 130/143 interrupted.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/run_options.hpp"
#include "cmd/trace_session.hpp"
#include "core/compare.hpp"
#include "core/errors.hpp"
#include "core/overhead.hpp"
#include "core/units.hpp"
#include "experiment/experiment.hpp"
#include "sys/affinity.hpp"
#include "sys/environment.hpp"
#include "sys/fs.hpp"
#include "sys/perf_trace.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

namespace {

using namespace shootdown;

constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2, kExitSkip = 77;
constexpr std::int64_t kMs = 1000000;
// After start() the experiment waits 20 ms, then the victim starts measuring;
// the first block begins this long after start().
constexpr std::int64_t kLeadInNs = 200 * kMs;

struct Options {
  int pairs = 30;
  std::string segment = "400ms";
  std::string guard = "20ms";
  std::string baseline;  // "" = long enough for the pairs
  std::string chunk_size = "256MiB";
  std::string culprit_cpu;
  std::string victim_cpu;
  std::uint64_t seed = 1;
  int min_samples = 200;
  int resamples = 2000;
  bool rt = false;
  bool aa = false;
  bool quiet = false;
};

struct TracedInfo {
  std::int64_t open_ns = 0;   // Tracer::open + start_reader
  std::int64_t close_ns = 0;  // stop + destroy
  std::size_t victim_events = 0;
  std::int64_t lost = 0;
};

// Shared between the session (owned and destroyed by run_experiment) and main.
struct Schedule {
  sys::TracerOptions tracer;
  int pairs = 0;
  std::int64_t segment_ns = 0;
  std::int64_t transition_ns = 0;  // estimated open + close of a tracer
  bool aa = false;                 // A/A control: "traced" segments open no tracer
  std::int64_t sham_open_ns = 0;   // ... and wait as long as an open / a close took
  std::int64_t sham_close_ns = 0;
  std::int64_t baseline_ns = 0;
  std::uint64_t seed = 1;
  int victim_cpu = -1;

  std::vector<overhead::Segment> segments;  // filled by the thread
  std::vector<TracedInfo> traced;           // per traced segment, in order
  int blocks_done = 0;
  std::string error;  // the tracer failed mid-run, pinning failed...
  std::string note;   // stopped early: why
};

// exp::TraceSession whose start() launches the alternating thread; stop()
// joins it. The run's KernelTrace stays empty (the tracers are the thread's).
class AlternatingSession final : public shootdown::exp::TraceSession {
 public:
  explicit AlternatingSession(std::shared_ptr<Schedule> s) : s_(std::move(s)) {}
  ~AlternatingSession() override { finish(); }

  void start() override {
    const std::int64_t t0 = sys::mono_now_ns();
    thread_ = std::thread([this, t0] { run(t0); });
  }
  KernelTrace stop() override {
    finish();
    KernelTrace kt;
    kt.status = fmt::format("off (trace_overhead: {} blocks of a traced and an untraced segment)", s_->blocks_done);
    return kt;
  }

 private:
  void finish() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Sleeps until mono ns `until`; false when stop() was called.
  bool sleep_until(std::int64_t until) {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      if (stop_) return false;
      const std::int64_t now = sys::mono_now_ns();
      if (now >= until) return true;
      cv_.wait_for(lk, std::chrono::nanoseconds(until - now));
    }
  }
  bool stopping() {
    std::lock_guard<std::mutex> lk(mu_);
    return stop_;
  }

  void run(std::int64_t t0) {
    Schedule& s = *s_;
    if (const auto pinned = sys::pin_this_thread(s.tracer.reader_cpu); !pinned) {
      s.error = fmt::format("cannot pin the segment thread to culprit CPU {}: {}", s.tracer.reader_cpu, pinned.error());
      return;
    }
    // Blocks must end inside the baseline (the release comes after it).
    const std::int64_t baseline_end = t0 + 20 * kMs + s.baseline_ns;
    compare::Rng rng(s.seed);
    if (!sleep_until(t0 + kLeadInNs)) return;
    for (int b = 0; b < s.pairs; ++b) {
      if (sys::mono_now_ns() + 2 * s.segment_ns + s.transition_ns > baseline_end) {
        s.note = fmt::format("baseline ended after {} of {} blocks (give a longer --baseline)", b, s.pairs);
        return;
      }
      const bool traced_first = rng.below(2) == 1;
      for (int k = 0; k < 2; ++k) {
        overhead::Segment seg;
        seg.block = b;
        seg.traced = (k == 0) == traced_first;
        if (seg.traced && s.aa) {
          // Same gaps as a real traced segment, no tracer.
          TracedInfo info;
          const std::int64_t o0 = sys::mono_now_ns();
          if (!sleep_until(o0 + s.sham_open_ns)) return;
          seg.start_ns = sys::mono_now_ns();
          info.open_ns = seg.start_ns - o0;
          const bool full = sleep_until(seg.start_ns + s.segment_ns);
          seg.end_ns = sys::mono_now_ns();
          if (!full || !sleep_until(seg.end_ns + s.sham_close_ns)) return;
          info.close_ns = sys::mono_now_ns() - seg.end_ns;
          s.traced.push_back(info);
        } else if (seg.traced) {
          TracedInfo info;
          const std::int64_t o0 = sys::mono_now_ns();
          auto opened = sys::Tracer::open(s.tracer);
          if (!opened) {
            s.error = "the tracer could not be opened mid-run: " + opened.error();
            return;
          }
          auto tracer = std::move(*opened);
          tracer->start_reader();
          seg.start_ns = sys::mono_now_ns();
          info.open_ns = seg.start_ns - o0;
          const bool full = sleep_until(seg.start_ns + s.segment_ns);
          seg.end_ns = sys::mono_now_ns();
          {
            const KernelTrace kt = tracer->stop();
            for (const auto& e : kt.events)
              if (e.cpu == s.victim_cpu) ++info.victim_events;
            info.lost = kt.lost_events;
          }
          tracer.reset();
          info.close_ns = sys::mono_now_ns() - seg.end_ns;
          if (!full) return;  // an unfinished segment is not measured
          s.traced.push_back(info);
        } else {
          seg.start_ns = sys::mono_now_ns();
          const bool full = sleep_until(seg.start_ns + s.segment_ns);
          seg.end_ns = sys::mono_now_ns();
          if (!full) return;
        }
        s.segments.push_back(seg);
      }
      s.blocks_done = b + 1;
      if (stopping()) return;
    }
  }

  std::shared_ptr<Schedule> s_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

std::int64_t duration_opt(const char* name, const std::string& v) {
  auto d = parse_duration_ns(v);
  if (!d || *d <= 0)
    throw std::invalid_argument(fmt::format("{} '{}': {} (accepted: a positive duration like 400ms, 2s)", name, v,
                                            d ? std::string("must be positive") : d.error()));
  return *d;
}

// "0.52 0.61 0.70" from /proc/loadavg ("0.52 0.61 0.70 1/234 5678").
std::string loadavg() {
  const std::string s = sys::trim(sys::read_file_or("/proc/loadavg", "?"));
  std::size_t pos = 0;
  for (int n = 0; n < 3 && pos != std::string::npos; ++n) pos = s.find(' ', pos + (n > 0 ? 1 : 0));
  return pos == std::string::npos ? s : s.substr(0, pos);
}

std::string ns_cell(double v) {
  return std::isfinite(v) ? fmt::format("{:.0f}", v) : std::string("-");
}
std::string ratio_cell(double v) {
  return std::isfinite(v) ? fmt::format("{:.4f}", v) : std::string("-");
}

int run(const Options& o) {
  // The plan: the `run` subcommand's own option validation, with the control
  // arm and a baseline long enough for every block.
  if (o.pairs < 1 || o.pairs > 10000)
    throw std::invalid_argument(fmt::format("--pairs {}: out of range [1, 10000]", o.pairs));
  if (o.min_samples < 1)
    throw std::invalid_argument(fmt::format("--min-samples {}: must be at least 1", o.min_samples));
  if (o.resamples < 100 || o.resamples > 1000000)
    throw std::invalid_argument(fmt::format("--resamples {}: out of range [100, 1000000]", o.resamples));
  const std::int64_t segment_ns = duration_opt("--segment", o.segment);
  const auto guard = parse_duration_ns(o.guard);
  if (!guard || *guard < 0)
    throw std::invalid_argument(fmt::format("--guard '{}': {} (accepted: a duration like 20ms, 0ms)", o.guard,
                                            guard ? std::string() : guard.error()));
  if (*guard >= segment_ns)
    throw std::invalid_argument(
        fmt::format("--guard {}: not shorter than --segment {} (nothing would be measured)", o.guard, o.segment));
  const std::int64_t need_ns = kLeadInNs + static_cast<std::int64_t>(o.pairs) * 2 * segment_ns;
  std::int64_t baseline_ns = 0;
  if (!o.baseline.empty()) {
    baseline_ns = duration_opt("--baseline", o.baseline);
    if (baseline_ns < need_ns)
      throw std::invalid_argument(
          fmt::format("--baseline {}: shorter than {} pairs of 2 x {} plus the {} lead-in (need more than {})",
                      o.baseline, o.pairs, o.segment, format_duration_ns(kLeadInNs), format_duration_ns(need_ns)));
  }

  cli::RunOptions ro;
  ro.release = "reuse";
  ro.chunk_size = o.chunk_size;
  ro.chunk_size_given = true;
  ro.culprit_cpu = o.culprit_cpu;
  ro.victim_cpus = o.victim_cpu;
  ro.trace = "on";
  ro.after = "100ms";
  ro.rt = o.rt;
  ro.quiet = o.quiet;
  ro.trigger = "after=1s";
  ro.baseline = "1s";  // replaced below, once the tracer's cost is known
  std::vector<std::string> warnings;
  Plan plan = cli::validate_run_options(ro, cli::read_machine_facts(), &warnings);
  if (plan.victim_cpus.size() != 1)
    throw std::invalid_argument("--victim-cpu: give one CPU (the comparison uses one victim)");

  // Can the tracer be opened at all? Also times one open/close.
  auto schedule = std::make_shared<Schedule>();
  schedule->tracer = cmd::kernel_trace_options(plan);
  std::size_t tracepoints = 0, missing = 0;
  {
    const std::int64_t t0 = sys::mono_now_ns();
    auto opened = sys::Tracer::open(schedule->tracer);
    if (!opened) {
      std::fprintf(stderr, "trace_overhead: skipped: the kernel tracer cannot be opened: %s\n", opened.error().c_str());
      return kExitSkip;
    }
    auto t = std::move(*opened);
    tracepoints = t->tracepoints().size();
    missing = t->missing().size();
    t->start_reader();
    const std::int64_t t1 = sys::mono_now_ns();
    t->stop();
    t.reset();
    const std::int64_t t2 = sys::mono_now_ns();
    schedule->sham_open_ns = t1 - t0;
    schedule->sham_close_ns = t2 - t1;
    // Margin: the victims will be running (and the machine may be busier).
    schedule->transition_ns = std::max<std::int64_t>(t2 - t0, 50 * kMs) * 3 / 2;
  }
  if (baseline_ns == 0)
    baseline_ns = need_ns + static_cast<std::int64_t>(o.pairs) * schedule->transition_ns + 500 * kMs;
  plan.baseline_ns = baseline_ns;
  plan.trigger = Trigger::kAfter;
  plan.trigger_after_ns = baseline_ns;
  // Every raw sample of the segments is compared: no folding (issue 19's
  // default budget would fold a baseline of seconds). The store takes its
  // share of MemAvailable and the memory cgroup, as run did before.
  plan.memory_limit = 0;

  schedule->pairs = o.pairs;
  schedule->segment_ns = segment_ns;
  schedule->baseline_ns = baseline_ns;
  schedule->seed = o.seed;
  schedule->aa = o.aa;
  schedule->victim_cpu = plan.victim_cpus[0];
  schedule->segments.reserve(static_cast<std::size_t>(o.pairs) * 2);
  schedule->traced.reserve(static_cast<std::size_t>(o.pairs));

  const Environment env = sys::read_environment();
  const std::string load_before = loadavg();
  std::printf(
      "trace_overhead: %d pairs of %s traced/untraced segments (guard %s, order seeded %llu), release reuse, "
      "chunk %s, batch %s, baseline %s\n",
      o.pairs, format_duration_ns(segment_ns).c_str(), format_duration_ns(*guard).c_str(),
      static_cast<unsigned long long>(o.seed), format_size(plan.chunk_size).c_str(), format_size(plan.batch).c_str(),
      format_duration_ns(baseline_ns).c_str());
  if (o.aa)
    std::printf(
        "A/A CONTROL (--aa): the \"traced\" segments open no tracer; they wait %s before and %s after, as an "
        "open and a close took\n",
        format_duration_ns(schedule->sham_open_ns).c_str(), format_duration_ns(schedule->sham_close_ns).c_str());
  std::printf(
      "culprit cpu%d (segment thread, tracer reader), victim cpu%d%s; kernel %s; load average %s; tracer: %zu "
      "tracepoints (%zu missing), callchains on the culprit\n",
      plan.culprit_cpu, plan.victim_cpus[0], plan.rt ? " SCHED_FIFO" : "", env.kernel.c_str(), load_before.c_str(),
      tracepoints, missing);
  std::fflush(stdout);
  for (const auto& w : warnings) std::fprintf(stderr, "trace_overhead: warning: %s\n", w.c_str());

  sys::StopSignals signals;
  exp::Hooks hooks;
  if (!o.quiet) hooks.on_phase = [](const std::string& p) { std::fprintf(stderr, "trace_overhead: %s\n", p.c_str()); };
  hooks.open_trace = [schedule](const Plan&) -> Expected<std::unique_ptr<exp::TraceSession>> {
    return std::unique_ptr<exp::TraceSession>(std::make_unique<AlternatingSession>(schedule));
  };
  Result r;
  try {
    r = exp::run_experiment(plan, hooks);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "trace_overhead: error: %s\n", e.what());
    return kExitError;
  }
  const std::string load_after = loadavg();
  for (const auto& w : r.warnings) std::fprintf(stderr, "trace_overhead: warning: %s\n", w.c_str());
  if (!schedule->error.empty()) {
    std::fprintf(stderr, "trace_overhead: error: %s\n", schedule->error.c_str());
    return kExitError;
  }
  if (r.victims.empty()) {
    std::fprintf(stderr, "trace_overhead: error: no victim samples (%s)\n",
                 r.incomplete_reason.empty() ? "no victim" : r.incomplete_reason.c_str());
    return r.exit_signal ? sys::exit_code_for_signal(r.exit_signal) : kExitError;
  }

  // Only the baseline: segments are cut at the first release.
  const std::int64_t window_end = r.releases.empty() ? r.measure_end_ns : r.releases.front().before_ns;
  std::vector<overhead::Segment> segs;
  int clipped = 0;
  for (overhead::Segment s : schedule->segments) {
    if (s.start_ns >= window_end) {
      ++clipped;
      continue;
    }
    if (s.end_ns > window_end) {
      s.end_ns = window_end;
      ++clipped;
    }
    segs.push_back(s);
  }

  overhead::Options ao;
  ao.guard_ns = *guard;
  ao.min_samples = static_cast<std::size_t>(o.min_samples);
  ao.bootstrap.resamples = o.resamples;
  ao.bootstrap.seed = o.seed;
  const overhead::Report rep = overhead::analyze(r.victims[0], segs, ao);

  // Per pair: p50/p90/p99 traced and untraced (ns per batch) and the ratio.
  std::printf("\n%4s %-9s %8s %8s %7s  %8s %8s %7s  %8s %8s %7s  %15s %7s\n", "pair", "first", "p50 on", "p50 off",
              "ratio", "p90 on", "p90 off", "ratio", "p99 on", "p99 off", "ratio", "samples on/off", "events");
  std::size_t traced_seen = 0;
  std::vector<std::size_t> traced_index(rep.segments.size(), SIZE_MAX);  // segment -> schedule->traced
  for (std::size_t i = 0; i < rep.segments.size(); ++i)
    if (rep.segments[i].seg.traced) traced_index[i] = traced_seen++;
  for (const auto& p : rep.pairs) {
    const auto& on = rep.segments[p.traced];
    const auto& off = rep.segments[p.untraced];
    const std::size_t ti = traced_index[p.traced];
    const std::string events = ti < schedule->traced.size() ? std::to_string(schedule->traced[ti].victim_events) : "-";
    std::printf("%4d %-9s %8s %8s %7s  %8s %8s %7s  %8s %8s %7s  %7zu/%-7zu %7s\n", p.block + 1,
                on.seg.start_ns < off.seg.start_ns ? "traced" : "untraced", ns_cell(on.pct[overhead::kP50]).c_str(),
                ns_cell(off.pct[overhead::kP50]).c_str(), ratio_cell(p.ratio[overhead::kP50]).c_str(),
                ns_cell(on.pct[overhead::kP90]).c_str(), ns_cell(off.pct[overhead::kP90]).c_str(),
                ratio_cell(p.ratio[overhead::kP90]).c_str(), ns_cell(on.pct[overhead::kP99]).c_str(),
                ns_cell(off.pct[overhead::kP99]).c_str(), ratio_cell(p.ratio[overhead::kP99]).c_str(), on.samples,
                off.samples, events.c_str());
  }
  std::printf("\n");
  std::int64_t open_max = 0, close_max = 0, lost = 0;
  for (const auto& t : schedule->traced) {
    open_max = std::max(open_max, t.open_ns);
    close_max = std::max(close_max, t.close_ns);
    lost += t.lost;
  }
  std::printf(
      "blocks %d of %d; segments skipped (< %d samples after the guard) %zu, unpaired blocks %zu, cut at the "
      "release %d; tracer%s open <= %s, close <= %s, lost events %lld; load average after %s\n",
      schedule->blocks_done, o.pairs, o.min_samples, rep.skipped_segments, rep.unpaired_blocks, clipped,
      o.aa ? " (sham)" : "", format_duration_ns(open_max).c_str(), format_duration_ns(close_max).c_str(),
      static_cast<long long>(lost), load_after.c_str());
  if (!schedule->note.empty()) std::printf("note: %s\n", schedule->note.c_str());
  // Drift within a block shows as a difference between the two orders.
  std::vector<double> traced_first, untraced_first;
  for (const auto& p : rep.pairs)
    (rep.segments[p.traced].seg.start_ns < rep.segments[p.untraced].seg.start_ns ? traced_first : untraced_first)
        .push_back(p.ratio[overhead::kP50]);
  std::printf("p50 ratio by order: traced first %s (%zu pairs), untraced first %s (%zu pairs)\n",
              ratio_cell(compare::median(traced_first)).c_str(), traced_first.size(),
              ratio_cell(compare::median(untraced_first)).c_str(), untraced_first.size());
  std::printf("%s\n", overhead::summary_line(rep, overhead::kP50).c_str());
  std::printf("(information) %s\n", overhead::summary_line(rep, overhead::kP90).c_str());
  std::printf("(information) %s\n", overhead::summary_line(rep, overhead::kP99).c_str());
  std::fflush(stdout);

  if (!r.complete) {
    std::fprintf(stderr, "trace_overhead: error: run incomplete: %s\n", r.incomplete_reason.c_str());
    return r.exit_signal ? sys::exit_code_for_signal(r.exit_signal) : kExitError;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "trace_overhead: baseline latency of the victim with the kernel tracer open vs closed, inside one run\n"
      "(release=reuse, so no shootdowns). Blocks of one traced and one untraced segment in a seeded random\n"
      "order; per block the ratio traced/untraced of the segment p50; the median ratio with a bootstrap CI.",
      "trace_overhead"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--pairs", o.pairs, "Blocks of one traced and one untraced segment (default 30)");
  app.add_option("--segment", o.segment, "Length of each segment (default 400ms)");
  app.add_option("--guard", o.guard,
                 "Dropped at the start of each segment: opening/closing tracepoints patches kernel text and IPIs every "
                 "CPU (default 20ms)");
  app.add_option("--baseline", o.baseline,
                 "Baseline of the run (default: the lead-in + pairs x (2 x segment + tracer open/close time) + 0.5 s)");
  app.add_option("--chunk-size", o.chunk_size, "Size of chunks A and B (default 256MiB)");
  app.add_option("--culprit-cpu", o.culprit_cpu,
                 "Culprit CPU: the segment thread and the tracer reader (default: as run)");
  app.add_option("--victim-cpu", o.victim_cpu, "The one victim CPU (default: as run)");
  app.add_option("--seed", o.seed, "Seed of the segment order and of the bootstrap (default 1)");
  app.add_option("--min-samples", o.min_samples,
                 "A segment with fewer samples after the guard is skipped (default 200)");
  app.add_option("--resamples", o.resamples, "Bootstrap resamples (default 2000)");
  app.add_flag("--rt", o.rt, "Run the victim SCHED_FIFO, as run --rt");
  app.add_flag("--aa", o.aa,
               "A/A control: the \"traced\" segments open no tracer (same timing), so the ratio shows the method's "
               "noise floor on this machine");
  app.add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
  app.footer(
      "OUTPUT: a line per pair (p50/p90/p99 in ns per batch, traced and untraced, their ratios, samples kept, the\n"
      "victim CPU's trace events in the traced segment), then\n"
      "  median p50 ratio traced/untraced = X [95% CI a, b] over N pairs: within target (< 1%) | above target | "
      "inconclusive\n"
      "and the same for p90 and p99 (information). Within target: the CI lies inside [0.99, 1.01].\n\n"
      "EXIT STATUS: 0 measured (any verdict), 1 runtime failure, 2 bad input, 77 skipped (needs root and tracefs),\n"
      "130/143 interrupted.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (auto& ch : msg)
      if (ch == '\n') ch = ' ';
    std::fprintf(stderr, "trace_overhead: %s (see 'trace_overhead --help')\n", msg.c_str());
    return kExitUsage;
  }
  try {
    return run(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "trace_overhead: %s\n", e.what());
    return kExitUsage;
  } catch (const UsageError& e) {  // cli::validate_run_options
    std::fprintf(stderr, "trace_overhead: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_overhead: error: %s\n", e.what());
    return kExitError;
  }
}
