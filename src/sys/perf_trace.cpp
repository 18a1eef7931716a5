// SPDX-License-Identifier: Apache-2.0
#include "sys/perf_trace.hpp"
#include "sys/fd_limit.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <fmt/core.h>
#include <linux/perf_event.h>
#include <map>
#include <sys/ioctl.h>
#include <unistd.h>

#include "sys/affinity.hpp"
#include "sys/fs.hpp"
#include "sys/kallsyms.hpp"
#include "sys/perf_fuzz.hpp"
#include "sys/perf_ring.hpp"
#include "sys/tracefs.hpp"
#include "sys/tsc.hpp"

namespace shootdown::sys {

namespace {

// A growable array that never moves or frees its elements until destroyed:
// the reader appends here while victims are measured, and any munmap of an
// old, larger buffer would send TLB-shootdown IPIs to our own victim CPUs.
template <typename T, std::size_t kChunk = 16384>
class ChunkedVec {
 public:
  ChunkedVec() { chunks_.reserve(4096); }  // pointer table: 32 KiB, heap (brk), not mmap
  void push_back(const T& v) {
    if (size_ % kChunk == 0 && size_ / kChunk == chunks_.size()) chunks_.push_back(std::make_unique<T[]>(kChunk));
    chunks_[size_ / kChunk][size_ % kChunk] = v;
    ++size_;
  }
  std::size_t size() const { return size_; }
  const T& operator[](std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  T& operator[](std::size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  // Forget the contents, keep the chunks (no free while measuring).
  void clear() { size_ = 0; }
  // Removes the elements `take` says yes to, in order, keeping the chunks.
  template <class Take>
  void remove_if(Take take) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      if (take((*this)[i])) continue;
      if (w != i) (*this)[w] = (*this)[i];
      ++w;
    }
    size_ = w;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::size_t size_ = 0;
};

struct Spec {
  const char* system;
  const char* name;
  EventType type;
  const char* fa;  // field -> KernelEvent::a
  const char* fb;  // -> b
  const char* fc;  // -> c
  bool culprit_callchain;
  bool victims_only = false;  // not opened on the culprit CPU
};

// The kernel evidence (docs/kernel-evidence.md explains each).
constexpr std::array<Spec, 16> kSpecs{{
    {"tlb", "tlb_flush", EventType::kTlbFlush, "reason", "pages", nullptr, true},
    {"irq_vectors", "call_function_entry", EventType::kCallFunctionEntry, "vector", nullptr, nullptr, false},
    {"irq_vectors", "call_function_exit", EventType::kCallFunctionExit, "vector", nullptr, nullptr, false},
    {"irq_vectors", "call_function_single_entry", EventType::kCallFunctionSingleEntry, "vector", nullptr, nullptr,
     false},
    {"irq_vectors", "call_function_single_exit", EventType::kCallFunctionSingleExit, "vector", nullptr, nullptr, false},
    {"irq_vectors", "local_timer_entry", EventType::kLocalTimerEntry, "vector", nullptr, nullptr, false},
    {"irq_vectors", "local_timer_exit", EventType::kLocalTimerExit, "vector", nullptr, nullptr, false},
    {"irq_vectors", "reschedule_entry", EventType::kReschedEntry, "vector", nullptr, nullptr, false},
    {"irq_vectors", "reschedule_exit", EventType::kReschedExit, "vector", nullptr, nullptr, false},
    {"irq", "irq_handler_entry", EventType::kIrqHandlerEntry, "irq", nullptr, nullptr, false},
    {"irq", "irq_handler_exit", EventType::kIrqHandlerExit, "irq", "ret", nullptr, false},
    {"ipi", "ipi_send_cpu", EventType::kIpiSendCpu, "cpu", "callsite", "callback", true},
    {"ipi", "ipi_send_cpumask", EventType::kIpiSendCpumask, "cpumask", "callsite", "callback", true},
    {"csd", "csd_function_entry", EventType::kCsdFunctionEntry, nullptr, "func", "csd", false},
    {"csd", "csd_function_exit", EventType::kCsdFunctionExit, nullptr, "func", "csd", false},
    // When the victim was off its CPU (preempted, RT-throttled): no IPI can
    // reach it then. Victim CPUs only: the culprit CPU's switches are not needed.
    {"sched", "sched_switch", EventType::kSchedSwitch, "prev_pid", "next_pid", "prev_state", false, true},
}};

struct Format {
  Field a, b, c;
};

struct Slot {  // one perf event (tracepoint x CPU)
  int fd = -1;
  int cpu = -1;
  const Spec* spec = nullptr;
  const Format* format = nullptr;
  bool callchain = false;
  std::uint64_t id = 0;  // PERF_EVENT_IOC_ID
};

}  // namespace

// PolledRings::mu guards events/chains/ips and the rings' tails.
struct Tracer::Impl : PolledRings {
  TracerOptions opts;
  Kallsyms ksyms;
  std::vector<std::unique_ptr<Format>> formats;
  std::vector<Slot> slots;
  std::map<std::uint64_t, std::size_t> slot_by_id;

  ChunkedVec<KernelEvent> events;
  struct ChainRef {
    std::size_t first = 0;
    std::uint32_t count = 0;
  };
  ChunkedVec<ChainRef, 4096> chains;
  ChunkedVec<std::uint64_t, 65536> ips;
  std::int64_t lost_records = 0;

  // ipi_send_cpumask targets beyond CPU 63 (KernelEvent::cpumask), interned:
  // a run sends to a few distinct sets of CPUs, so the table stays small and
  // its indices stay valid for every event taken; a new set allocates once,
  // on the heap (a deque never moves or frees a block while measuring).
  struct WordsLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  static constexpr std::size_t kMaxMasks = 65536;
  std::map<std::vector<std::uint64_t>, std::int32_t, WordsLess> mask_index;
  std::deque<CpuMask> masks;
  std::int64_t masks_dropped = 0;  // sends whose set would have been mask kMaxMasks + 1
  std::array<std::uint64_t, kMaxCpumaskWords> mask_words{};

  std::int32_t intern_mask(std::span<const std::uint64_t> w) {
    if (auto it = mask_index.find(w); it != mask_index.end()) return it->second;
    if (masks.size() >= kMaxMasks) {
      ++masks_dropped;
      return -1;
    }
    const auto i = static_cast<std::int32_t>(masks.size());
    masks.emplace_back(std::vector<std::uint64_t>(w.begin(), w.end()));
    mask_index.emplace(std::vector<std::uint64_t>(w.begin(), w.end()), i);
    return i;
  }

  std::string mask_note() const {
    return fmt::format(
        "cpumasks: {} ipi_send_cpumask event(s) kept only CPUs 0-63 of their targets (more than {} "
        "distinct target sets)",
        masks_dropped, kMaxMasks);
  }

  std::atomic<std::int32_t> reader_tid{0};

  void drain_all() {
    drain_rings([this](const std::uint8_t* rec, const perf_event_header& hdr) { handle(rec, hdr); });
  }

  void handle(const std::uint8_t* rec, const perf_event_header& hdr) {
    RecordReader rd(rec, hdr);
    auto u64 = [&](std::uint64_t& v) { return rd.u64(v); };
    if (count_lost(rd, hdr, lost_records) || hdr.type != PERF_RECORD_SAMPLE) return;
    // Layout for IDENTIFIER|TID|TIME|CPU[|CALLCHAIN]|RAW (perf_event_open(2)).
    std::uint64_t id = 0, pidtid = 0, time = 0, cpures = 0;
    if (!u64(id)) return;
    auto it = slot_by_id.find(id);
    if (it == slot_by_id.end()) return;
    const Slot& s = slots[it->second];
    if (!u64(pidtid) || !u64(time) || !u64(cpures)) return;
    KernelEvent ev;
    ev.mono_ns = static_cast<std::int64_t>(time);
    ev.cpu = static_cast<std::int32_t>(cpures & 0xffffffffu);
    ev.pid = static_cast<std::int32_t>(pidtid & 0xffffffffu);
    ev.tid = static_cast<std::int32_t>(pidtid >> 32);
    ev.type = s.spec->type;
    const std::uint8_t* chain = nullptr;
    std::uint64_t nr = 0;
    if (s.callchain && (!u64(nr) || !rd.take_u64s(nr, chain))) return;
    std::uint32_t raw_size = 0;
    const std::uint8_t* raw = nullptr;
    if (!rd.u32(raw_size) || !rd.take(raw_size, raw)) return;
    const Format& f = *s.format;
    if (s.spec->type == EventType::kIpiSendCpumask) {
      const std::size_t n = read_dynamic_words(raw, raw_size, f.a, mask_words);
      ev.a = n ? static_cast<std::int64_t>(mask_words[0]) : 0;
      if (n > 1) ev.cpumask = intern_mask({mask_words.data(), n});
    } else {
      ev.a = read_field(raw, raw_size, f.a);
    }
    ev.b = read_field(raw, raw_size, f.b);
    ev.c = read_field(raw, raw_size, f.c);
    const bool keep_chain = chain && (ev.type != EventType::kTlbFlush || ev.a == kTlbRemoteSendIpi);
    if (keep_chain) {
      ChainRef ref{ips.size(), 0};
      for (std::uint64_t i = 0; i < nr; ++i) {
        std::uint64_t ip = 0;
        std::memcpy(&ip, chain + 8 * i, 8);
        if (ip >= static_cast<std::uint64_t>(PERF_CONTEXT_MAX)) continue;  // PERF_CONTEXT_KERNEL etc.
        ips.push_back(ip);
        ++ref.count;
      }
      ev.callchain = static_cast<std::int32_t>(chains.size());
      chains.push_back(ref);
    }
    events.push_back(ev);
  }

  Callchain make_chain(int index) const {
    Callchain c;
    if (index < 0 || static_cast<std::size_t>(index) >= chains.size()) return c;
    const ChainRef& ref = chains[static_cast<std::size_t>(index)];
    for (std::uint32_t i = 0; i < ref.count; ++i) {
      const std::uint64_t ip = ips[ref.first + i];
      c.ips.push_back(ip);
      std::string s = ksyms.symbolize(ip);
      c.symbols.push_back(s.empty() ? fmt::format("{:#x}", ip) : s);
    }
    return c;
  }

  void disable_all() {
    for (auto& s : slots)
      if (s.fd >= 0) ::ioctl(s.fd, PERF_EVENT_IOC_DISABLE, 0);
  }

  std::int64_t read_format_lost() const {
    std::int64_t lost = 0;
    for (auto& s : slots) {
      if (s.fd < 0) continue;
      std::uint64_t buf[2] = {0, 0};  // PERF_FORMAT_LOST: { u64 value; u64 lost; }
      if (::read(s.fd, buf, sizeof buf) == static_cast<ssize_t>(sizeof buf)) lost += static_cast<std::int64_t>(buf[1]);
    }
    return lost;
  }

  void close_all() {
    rings.clear();  // unmaps
    for (auto& s : slots)
      if (s.fd >= 0) ::close(s.fd);
    for (auto& s : slots) s.fd = -1;
  }
};

Tracer::Tracer() : impl_(std::make_unique<Impl>()) {}

Tracer::~Tracer() {
  if (!impl_) return;
  impl_->join_reader();
  impl_->disable_all();
  impl_->close_all();
}

namespace {

// A tracepoint of kSpecs found in this kernel, with its id and field offsets.
struct Resolved {
  const Spec* spec;
  int id;
  const Format* format;
};

// The ids and formats of kSpecs (those not in this kernel go to `missing`);
// the formats are kept in im.formats. Needs tracefs, which is released
// (unmounted, when mounted here) on return: the perf events do not.
Expected<std::vector<Resolved>> resolve_tracepoints(Tracer::Impl& im, std::vector<std::string>& missing) {
  auto loader = TracepointLoader::open();
  if (!loader) return Error{loader.error()};
  std::vector<Resolved> resolved;
  for (const Spec& sp : kSpecs) {
    const char* const names[] = {sp.fa, sp.fb, sp.fc};
    const TracepointFields tp = (*loader)->fields(sp.system, sp.name, names);
    if (tp.id < 0) {
      missing.push_back(tp.missing);
      continue;
    }
    auto f = std::make_unique<Format>();
    f->a = tp.fields[0];
    f->b = tp.fields[1];
    f->c = tp.fields[2];
    resolved.push_back({&sp, tp.id, f.get()});
    im.formats.push_back(std::move(f));
  }
  if (resolved.empty()) return Error{"none of the tracepoints exist in this kernel"};
  return resolved;
}

// What opening the events on every CPU gathers.
struct EventOpening {
  const TracerOptions& opts;
  std::size_t data_bytes;
  std::vector<std::string>& missing;  // notes the tracer keeps (callchains refused)
  std::vector<std::string> errors;    // events that could not be opened
  bool format_lost = true;            // PERF_FORMAT_LOST, until a kernel before 6.0 refuses it
  std::map<const Spec*, int> opened_cpus;
};

// perf_event_open of one tracepoint on one CPU: without PERF_FORMAT_LOST on
// kernels before 6.0 (from then on), and without the callchain where it is
// refused (noted in missing). -1 and errno when it cannot be opened.
long open_tracepoint(perf_event_attr& attr, int cpu, const Resolved& r, EventOpening& op) {
  const bool want_chain = (attr.sample_type & PERF_SAMPLE_CALLCHAIN) != 0;
  long fd = open_cpu_event(&attr, cpu);
  if (fd < 0 && errno == EINVAL && op.format_lost) {  // kernels before 6.0 lack PERF_FORMAT_LOST
    op.format_lost = false;
    attr.read_format = 0;
    fd = open_cpu_event(&attr, cpu);
  }
  if (fd < 0 && want_chain) {
    const int e = errno;
    attr.sample_type &= ~static_cast<std::uint64_t>(PERF_SAMPLE_CALLCHAIN);
    fd = open_cpu_event(&attr, cpu);
    if (fd >= 0)  // on with no callchain
      op.missing.push_back(
          fmt::format("{}:{} callchains on cpu{}: {}", r.spec->system, r.spec->name, cpu, std::strerror(e)));
  }
  return fd;
}

// Every resolved tracepoint on `cpu`, all into one ring (kept in im.rings).
void open_cpu(Tracer::Impl& im, int cpu, const std::vector<Resolved>& resolved, EventOpening& op) {
  const TracerOptions& opts = op.opts;
  CpuRing ring(cpu, op.data_bytes, /*halve_on_limit=*/true,  // perf_event_mlock_kb
               fmt::format("mmap of the ring ({} pages)", opts.ring_pages));
  for (const Resolved& r : resolved) {
    if (r.spec->victims_only && cpu == opts.culprit_cpu) continue;
    const bool want_chain = opts.callchains && cpu == opts.culprit_cpu && r.spec->culprit_callchain;
    perf_event_attr attr = polled_attr(op.data_bytes);  // never wakes (see header)
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.config = static_cast<std::uint64_t>(r.id);
    attr.sample_type |= PERF_SAMPLE_RAW | (want_chain ? PERF_SAMPLE_CALLCHAIN : 0);
    attr.read_format = op.format_lost ? PERF_FORMAT_LOST : 0;
    attr.exclude_callchain_user = 1;  // kernel frames only: cheaper, and the user stack is the blame command's job
    const long fd = open_tracepoint(attr, cpu, r, op);
    const int open_errno = errno;
    const std::string label = fmt::format("{}:{} on cpu{}", r.spec->system, r.spec->name, cpu);
    if (fd < 0) {
      op.errors.push_back(fmt::format("{}: perf_event_open: {}", label, std::strerror(open_errno)));
      continue;
    }
    const auto id = ring.add(static_cast<int>(fd), label);
    if (!id) {
      op.errors.push_back(id.error());
      if (ring.map_failed()) break;  // no ring on this CPU: nothing else can be read here
      continue;
    }
    const bool callchain = (attr.sample_type & PERF_SAMPLE_CALLCHAIN) != 0;
    im.slot_by_id[*id] = im.slots.size();
    im.slots.push_back(Slot{static_cast<int>(fd), cpu, r.spec, r.format, callchain, *id});
    ++op.opened_cpus[r.spec];
  }
  if (ring.mapped()) im.rings.push_back(std::move(ring.ring()));
}

// "system:name", or "system:name (n of m CPUs)" when some CPUs could not open it.
std::vector<std::string> opened_tracepoints(const std::vector<Resolved>& resolved, const EventOpening& op) {
  std::vector<std::string> out;
  for (const Resolved& r : resolved) {
    const std::string full = std::string(r.spec->system) + ":" + r.spec->name;
    const auto at = op.opened_cpus.find(r.spec);
    const int n = at == op.opened_cpus.end() ? 0 : at->second;
    int wanted = 0;
    for (int cpu : op.opts.cpus) wanted += !(r.spec->victims_only && cpu == op.opts.culprit_cpu);
    if (n > 0 && n == wanted)
      out.push_back(full);
    else if (n > 0)
      out.push_back(fmt::format("{} ({} of {} CPUs)", full, n, wanted));
  }
  return out;
}

}  // namespace

Expected<std::unique_ptr<Tracer>> Tracer::open(const TracerOptions& opts) {
  if (const Status can = check_tracing(opts.cpus, "no CPUs to trace"); !can) return Error{can.error()};
  std::unique_ptr<Tracer> t(new Tracer());
  Impl& im = *t->impl_;
  im.opts = opts;
  const auto resolved = resolve_tracepoints(im, t->missing_);
  if (!resolved) return Error{resolved.error()};
  im.ksyms = Kallsyms::load();

  EventOpening op{opts, ring_data_bytes(opts.ring_pages), t->missing_, {}, true, {}};
  // One descriptor per tracepoint and CPU: 72 CPUs need more than the usual 1024.
  if (const Status room = raise_fd_limit(static_cast<std::uint64_t>(opts.cpus.size()) * resolved->size()); !room)
    op.errors.push_back(room.error());
  for (int cpu : opts.cpus) open_cpu(im, cpu, *resolved, op);
  if (im.slots.empty()) return Error{op.errors.empty() ? "no tracepoint could be opened" : op.errors.front()};
  for (auto& e : op.errors) t->missing_.push_back(e);
  t->tracepoints_ = opened_tracepoints(*resolved, op);
  for (auto& s : im.slots) ::ioctl(s.fd, PERF_EVENT_IOC_ENABLE, 0);
  t->start_ns_ = mono_now_ns();
  return t;
}

void Tracer::start_reader() {
  Impl& im = *impl_;
  if (im.reader.joinable() || im.stopped) return;
  im.stop_reader.store(false);
  im.reader = std::thread([&im] {
    im.reader_tid.store(static_cast<std::int32_t>(::gettid()), std::memory_order_relaxed);
    if (im.opts.reader_cpu >= 0) (void)pin_this_thread(im.opts.reader_cpu);
    poll_until(im.stop_reader, im.opts.poll_interval_us, [&im] { im.drain_all(); });
  });
}

std::int32_t Tracer::reader_tid() const {
  return impl_->reader_tid.load(std::memory_order_relaxed);
}

void Tracer::drain() {
  if (!impl_->stopped) impl_->drain_all();
}

std::vector<KernelEvent> Tracer::take_events() {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  std::vector<KernelEvent> out;
  out.reserve(im.events.size());
  for (std::size_t i = 0; i < im.events.size(); ++i) out.push_back(im.events[i]);
  im.events.clear();  // chains stay: their indices remain valid
  return out;
}

void Tracer::take_events_between(std::span<const std::pair<std::int64_t, std::int64_t>> ranges,
                                 const std::function<void(const KernelEvent&)>& each) {
  if (ranges.empty()) return;
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  im.events.remove_if([&](const KernelEvent& e) {
    // The last range starting at or before the event holds it, if any does.
    auto it =
        std::upper_bound(ranges.begin(), ranges.end(), e.mono_ns,
                         [](std::int64_t t, const std::pair<std::int64_t, std::int64_t>& r) { return t < r.first; });
    if (it == ranges.begin() || e.mono_ns >= std::prev(it)->second) return false;
    each(e);
    return true;
  });
}

void Tracer::each_event_between(std::int64_t from_ns, std::int64_t until_ns,
                                const std::function<void(const KernelEvent&)>& each) const {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  for (std::size_t i = 0; i < im.events.size(); ++i) {
    const KernelEvent& e = im.events[i];
    if (e.mono_ns >= from_ns && e.mono_ns < until_ns) each(e);
  }
}

void Tracer::event_times(int cpu, std::int64_t from_ns, std::int64_t until_ns,
                         const std::function<bool(const KernelEvent&)>& want, std::vector<std::int64_t>& out) const {
  const std::size_t at = out.size();
  each_event_between(from_ns, until_ns, [&](const KernelEvent& e) {
    if (e.cpu == cpu && want(e)) out.push_back(e.mono_ns);
  });
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(at), out.end());
}

std::vector<CpuMask> Tracer::cpumasks() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return {impl_->masks.begin(), impl_->masks.end()};
}

CpuMask Tracer::cpumask(int index) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (index < 0 || static_cast<std::size_t>(index) >= impl_->masks.size()) return {};
  return impl_->masks[static_cast<std::size_t>(index)];
}

std::string Tracer::cpumask_note() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->masks_dropped ? impl_->mask_note() : std::string();
}

Callchain Tracer::callchain(int index) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->make_chain(index);
}

std::string Tracer::symbolize(std::uint64_t addr) const {
  std::string s = impl_->ksyms.symbolize(addr);
  return s.empty() ? fmt::format("{:#x}", addr) : s;
}

std::string Tracer::function_name(std::uint64_t addr) const {
  return impl_->ksyms.function(addr);
}

std::int64_t Tracer::lost_events() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->lost_records;
}

KernelTrace Tracer::stop() {
  KernelTrace kt;
  Impl& im = *impl_;
  if (im.stopped) return kt;
  im.disable_all();
  kt.stop_ns = mono_now_ns();
  im.join_reader();
  im.drain_all();
  im.stopped = true;
  // Lost samples are counted both per event (PERF_FORMAT_LOST) and per ring
  // (PERF_RECORD_LOST); they describe the same drops, so take the larger.
  kt.lost_events = std::max(im.read_format_lost(), im.lost_records);
  im.close_all();

  kt.enabled = true;
  kt.status = "on";
  kt.tracepoints = tracepoints_;
  kt.missing = missing_;
  kt.start_ns = start_ns_;
  kt.events.reserve(im.events.size());
  for (std::size_t i = 0; i < im.events.size(); ++i) kt.events.push_back(im.events[i]);
  // Per CPU the ring is in order; across CPUs merge by time (stable: keeps
  // a CPU's entry before its exit when timestamps tie).
  std::stable_sort(kt.events.begin(), kt.events.end(),
                   [](const KernelEvent& a, const KernelEvent& b) { return a.mono_ns < b.mono_ns; });
  kt.cpumasks.assign(im.masks.begin(), im.masks.end());
  if (im.masks_dropped) kt.missing.push_back(im.mask_note());
  kt.callchains.reserve(im.chains.size());
  for (std::size_t i = 0; i < im.chains.size(); ++i) kt.callchains.push_back(im.make_chain(static_cast<int>(i)));
  if (!im.ksyms.empty()) {
    for (const auto& e : kt.events) {
      auto add = [&](std::int64_t a) {
        const auto addr = static_cast<std::uint64_t>(a);
        if (addr == 0 || kt.symbols.count(addr)) return;
        std::string s = im.ksyms.symbolize(addr);
        if (!s.empty()) kt.symbols.emplace(addr, std::move(s));
      };
      switch (e.type) {
        case EventType::kCsdFunctionEntry:
        case EventType::kCsdFunctionExit:
          add(e.b);
          break;
        case EventType::kIpiSendCpu:
        case EventType::kIpiSendCpumask:
          add(e.b);
          add(e.c);
          break;
        default:
          break;
      }
    }
  } else {
    kt.missing.push_back("symbols: /proc/kallsyms unreadable or addresses hidden (kptr_restrict)");
  }
  return kt;
}

Status tracing_permitted() {
  auto say = [](std::string w) -> Status { return Error{std::move(w)}; };
  bool capable = ::geteuid() == 0;
  if (!capable) {
    // CapEff bits: CAP_SYS_ADMIN 21, CAP_PERFMON 38 (capabilities(7)).
    const std::string status = read_file_or("/proc/self/status", "");
    const auto pos = status.find("CapEff:");
    if (pos != std::string::npos) {
      try {
        const std::uint64_t caps = std::stoull(status.substr(pos + 7), nullptr, 16);
        capable = (caps & (1ULL << 21)) || (caps & (1ULL << 38));
      } catch (const std::exception&) {}
    }
  }
  const std::string tfs = find_tracefs_mount(read_file_or("/proc/mounts", ""));
  if (!capable) {
    const std::string par = trim(read_file_or("/proc/sys/kernel/perf_event_paranoid", "2"));
    if (par != "-1")
      return say("not root and no CAP_PERFMON, and kernel.perf_event_paranoid=" + par +
                 " (CPU-wide tracepoint samples need -1): run as root or sysctl kernel.perf_event_paranoid=-1");
    if (tfs.empty())
      return say("tracefs is not mounted and mounting it needs root (mount -t tracefs nodev /sys/kernel/tracing)");
    if (::access((tfs + "/events").c_str(), R_OK | X_OK) != 0) return say("tracefs at " + tfs + " is not readable");
  }
  if (tfs.empty() && ::access("/sys/kernel/tracing", F_OK) != 0) {
    if (read_file_or("/proc/filesystems", "").find("tracefs") == std::string::npos)
      return say("no tracefs: the kernel has none (/proc/filesystems; CONFIG_TRACING off)");
    return say("tracefs not mounted and /sys/kernel/tracing does not exist to mount it on");
  }
  return Ok{};
}

std::size_t decode_tracer_ring(void* page, std::size_t data_offset, std::size_t data_size) {
  Tracer::Impl im;
  static const Format kFormat{Field{8, 8, false, false, false}, Field{16, 8, true, false, false},
                              Field{24, 8, false, false, false}};
  static const Format kMaskFormat{Field{8, 4, false, true, false}, Field{16, 8, false, false, false},
                                  Field{24, 8, false, false, false}};
  for (std::size_t i = 0; i < kSpecs.size(); ++i) {
    const Spec& spec = kSpecs[i];
    const Format* f = spec.type == EventType::kIpiSendCpumask ? &kMaskFormat : &kFormat;
    im.slots.push_back(Slot{-1, 0, &spec, f, spec.culprit_callchain, i + 1});
    im.slot_by_id[i + 1] = i;
  }
  PerfRing ring;
  ring.attach_unowned(page, data_offset, data_size);
  im.rings.push_back(std::move(ring));
  im.drain_all();
  im.rings.clear();
  for (std::size_t i = 0; i < im.events.size(); ++i)
    if (im.events[i].callchain >= 0) (void)im.make_chain(im.events[i].callchain);
  return im.events.size();
}

}  // namespace shootdown::sys
