// SPDX-License-Identifier: Apache-2.0
#include "sys/perf_sampler.hpp"
#include "sys/fd_limit.hpp"

#include <algorithm>
#include <array>
#include <asm/perf_regs.h>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <fmt/core.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <unistd.h>

extern "C" {
#include <traceevent/event-parse.h>
}

#include "sys/perf_fuzz.hpp"
#include "sys/perf_ring.hpp"
#include "sys/perf_trace.hpp"
#include "sys/tracefs.hpp"
#include "sys/tsc.hpp"

namespace shootdown::sys {

namespace {

enum class Kind { kFlushSend, kFlushRecv, kIpiCpu, kIpiMask, kCsdQueue, kDummy };

struct Slot {
  int fd = -1;
  int cpu = -1;
  Kind kind = Kind::kDummy;
  std::uint64_t id = 0;
};

// Three user registers, in perf_regs bit order (BP < SP < IP).
constexpr std::uint64_t kRegsMask = (1ULL << PERF_REG_X86_BP) | (1ULL << PERF_REG_X86_SP) | (1ULL << PERF_REG_X86_IP);

}  // namespace

struct FlushSampler::Impl {
  SamplerOptions opts;
  std::vector<Slot> slots;
  std::vector<PerfRing> rings;
  std::map<std::uint64_t, std::size_t> by_id;
  Field f_reason, f_pages, f_cpu, f_mask, f_site_cpu, f_cb_cpu, f_site_mask, f_cb_mask, f_csd_cpu, f_csd_site,
      f_csd_func;
  std::mutex mu;
  SamplerData data;
  std::unordered_multimap<std::uint64_t, std::uint32_t> stack_index;  // hash -> data.stacks index
  SampledStack scratch_stack;
  std::array<std::uint64_t, kMaxCpumaskWords> mask_words{};
  std::vector<std::uint8_t> scratch = std::vector<std::uint8_t>(65536);
  std::thread reader;
  std::atomic<bool> stop_reader{false};
  bool stopped = false;

  void drain_all() {
    std::lock_guard<std::mutex> lk(mu);
    for (auto& r : rings)
      r.drain(scratch.data(), [this](const std::uint8_t* rec, const perf_event_header& hdr) { handle(rec, hdr); });
  }

  void handle(const std::uint8_t* rec, const perf_event_header& hdr) {
    RecordReader rd(rec, hdr);
    const std::uint8_t*& p = rd.p;
    const std::uint8_t* const end = rd.end;
    auto u64 = [&](std::uint64_t& v) { return rd.u64(v); };
    auto u32 = [&](std::uint32_t& v) { return rd.u32(v); };
    // Dummy-event side records carry the sample_id trailer {pid,tid; time; identifier}.
    auto trailer_time = [&]() -> std::int64_t {
      if (hdr.size < sizeof hdr + 24) return 0;
      std::uint64_t t = 0;
      std::memcpy(&t, end - 16, 8);
      return static_cast<std::int64_t>(t);
    };
    switch (hdr.type) {
      case PERF_RECORD_LOST: {
        std::uint64_t id = 0, lost = 0;
        if (u64(id) && u64(lost)) data.lost += static_cast<std::int64_t>(lost);
        return;
      }
      case PERF_RECORD_LOST_SAMPLES: {
        std::uint64_t lost = 0;
        if (u64(lost)) data.lost += static_cast<std::int64_t>(lost);
        return;
      }
      case PERF_RECORD_MMAP2: {
        MmapRecord m;
        std::uint32_t pid = 0, tid = 0, maj = 0, min = 0, prot = 0, flags = 0;
        std::uint64_t gen = 0;
        if (!u32(pid) || !u32(tid) || !u64(m.start) || !u64(m.len) || !u64(m.pgoff) || !u32(maj) || !u32(min) ||
            !u64(m.ino) || !u64(gen) || !u32(prot) || !u32(flags))
          return;
        const auto* name = reinterpret_cast<const char*>(p);
        const std::size_t maxlen = static_cast<std::size_t>(end - p);
        m.path.assign(name, strnlen(name, maxlen));
        if (m.path.empty() || m.path[0] != '/' || (hdr.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) return;
        m.pid = static_cast<int>(pid);
        m.maj = maj;
        m.min = min;
        m.prot = prot;
        m.mono_ns = trailer_time();
        data.mmaps.push_back(std::move(m));
        return;
      }
      case PERF_RECORD_FORK: {
        std::uint32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
        std::uint64_t t = 0;
        if (!u32(pid) || !u32(ppid) || !u32(tid) || !u32(ptid) || !u64(t)) return;
        data.forks.push_back(ForkRecord{static_cast<std::int64_t>(t), static_cast<int>(pid), static_cast<int>(ppid),
                                        static_cast<int>(tid)});
        return;
      }
      case PERF_RECORD_SAMPLE:
        break;
      default:
        return;
    }
    // IDENTIFIER | TID | TIME | CPU [| CALLCHAIN] | RAW [| REGS_USER | STACK_USER]
    std::uint64_t id = 0, pidtid = 0, time = 0, cpures = 0;
    if (!u64(id)) return;
    auto it = by_id.find(id);
    if (it == by_id.end()) return;
    const Slot& s = slots[it->second];
    if (!u64(pidtid) || !u64(time) || !u64(cpures)) return;
    const int pid = static_cast<int>(pidtid & 0xffffffffu);
    const int tid = static_cast<int>(pidtid >> 32);
    const int cpu = static_cast<int>(cpures & 0xffffffffu);
    const std::uint8_t* chain = nullptr;
    std::uint64_t nr = 0;
    if (s.kind == Kind::kFlushSend && (!u64(nr) || !rd.take_u64s(nr, chain))) return;
    std::uint32_t raw_size = 0;
    const std::uint8_t* raw = nullptr;
    if (!u32(raw_size) || !rd.take(raw_size, raw)) return;
    switch (s.kind) {
      case Kind::kFlushRecv:
        ++data.received[{cpu, pid}];
        return;
      case Kind::kCsdQueue: {
        SampledIpi q;
        q.mono_ns = static_cast<std::int64_t>(time);
        q.cpu = cpu;
        q.pid = pid;
        q.tid = tid;
        q.queued = true;
        const auto c = read_field(raw, raw_size, f_csd_cpu);
        if (c >= 0 && c < 65536) q.targets.set(static_cast<int>(c));
        q.callsite = static_cast<std::uint64_t>(read_field(raw, raw_size, f_csd_site));
        q.callback = static_cast<std::uint64_t>(read_field(raw, raw_size, f_csd_func));
        data.ipis.push_back(q);
        return;
      }
      case Kind::kIpiCpu:
      case Kind::kIpiMask: {
        SampledIpi ipi;
        ipi.mono_ns = static_cast<std::int64_t>(time);
        ipi.cpu = cpu;
        ipi.pid = pid;
        ipi.tid = tid;
        ipi.single = s.kind == Kind::kIpiCpu;
        if (ipi.single) {
          const auto c = read_field(raw, raw_size, f_cpu);
          if (c >= 0 && c < 65536) ipi.targets.set(static_cast<int>(c));
          ipi.callsite = static_cast<std::uint64_t>(read_field(raw, raw_size, f_site_cpu));
          ipi.callback = static_cast<std::uint64_t>(read_field(raw, raw_size, f_cb_cpu));
        } else {
          const std::size_t n = read_dynamic_words(raw, raw_size, f_mask, mask_words);
          ipi.targets = CpuMask({mask_words.begin(), mask_words.begin() + static_cast<std::ptrdiff_t>(n)});
          ipi.callsite = static_cast<std::uint64_t>(read_field(raw, raw_size, f_site_mask));
          ipi.callback = static_cast<std::uint64_t>(read_field(raw, raw_size, f_cb_mask));
        }
        if (ipi.callback == 0) return;  // reschedule kicks (no function to run)
        data.ipis.push_back(ipi);
        return;
      }
      case Kind::kFlushSend:
        break;
      case Kind::kDummy:
        return;
    }
    if (data.flushes.size() >= opts.max_flush_samples) {
      ++data.dropped;
      return;
    }
    SampledFlush f;
    f.mono_ns = static_cast<std::int64_t>(time);
    f.cpu = cpu;
    f.pid = pid;
    f.tid = tid;
    f.pages = read_field(raw, raw_size, f_pages);
    if (f.pages == static_cast<std::int64_t>(~0ULL >> 1) || static_cast<std::uint64_t>(f.pages) == ~0ULL) f.pages = -1;
    SampledStack& st = scratch_stack;  // reused: no allocation once warm
    st.kernel_ips.clear();
    st.user_ips.clear();
    st.pid = pid;
    st.sp_word = 0;
    st.has_sp_word = false;
    bool user = false;
    for (std::uint64_t i = 0; i < nr; ++i) {
      std::uint64_t ip = 0;
      std::memcpy(&ip, chain + 8 * i, 8);
      if (ip >= static_cast<std::uint64_t>(PERF_CONTEXT_MAX)) {
        user = ip == static_cast<std::uint64_t>(PERF_CONTEXT_USER);
        continue;
      }
      (user ? st.user_ips : st.kernel_ips).push_back(ip);
    }
    std::uint64_t abi = 0;
    if (u64(abi) && abi != PERF_SAMPLE_REGS_ABI_NONE) {
      std::uint64_t bp = 0, sp = 0, ip = 0;
      if (!u64(bp) || !u64(sp) || !u64(ip)) return;
    }
    std::uint64_t size = 0;
    if (u64(size) && size > 0 && size <= rd.left() && rd.left() - size >= 8) {
      std::uint64_t dyn = 0;
      std::memcpy(&dyn, p + size, 8);
      if (dyn >= 8) {
        std::memcpy(&st.sp_word, p, 8);
        st.has_sp_word = true;
      }
    }
    f.stack = intern(st);
    data.flushes.push_back(f);
  }

  // The index of `st` in data.stacks, appended when new.
  std::uint32_t intern(const SampledStack& st) {
    std::uint64_t h = 1469598103934665603ULL ^ static_cast<std::uint64_t>(st.pid);
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
    for (auto ip : st.kernel_ips) mix(ip);
    mix(~0ULL);
    for (auto ip : st.user_ips) mix(ip);
    mix(st.has_sp_word ? st.sp_word : ~1ULL);
    auto [lo, hi] = stack_index.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      const SampledStack& o = data.stacks[it->second];
      if (o.pid == st.pid && o.has_sp_word == st.has_sp_word && o.sp_word == st.sp_word &&
          o.kernel_ips == st.kernel_ips && o.user_ips == st.user_ips)
        return it->second;
    }
    const auto idx = static_cast<std::uint32_t>(data.stacks.size());
    data.stacks.push_back(st);
    stack_index.emplace(h, idx);
    return idx;
  }

  void close_all() {
    rings.clear();  // unmaps
    for (auto& s : slots)
      if (s.fd >= 0) ::close(s.fd);
    slots.clear();
  }
};

FlushSampler::FlushSampler() : impl_(std::make_unique<Impl>()) {}

FlushSampler::~FlushSampler() {
  if (!impl_) return;
  impl_->stop_reader.store(true);
  if (impl_->reader.joinable()) impl_->reader.join();
  for (auto& s : impl_->slots) ::ioctl(s.fd, PERF_EVENT_IOC_DISABLE, 0);
  impl_->close_all();
}

std::unique_ptr<FlushSampler> FlushSampler::open(const SamplerOptions& opts, std::string* why) {
  auto fail = [&](std::string w) -> std::unique_ptr<FlushSampler> {
    if (why) *why = std::move(w);
    return nullptr;
  };
  if (opts.cpus.empty()) return fail("no CPUs to sample");
  std::string perm;
  if (!tracing_permitted(&perm)) return fail(perm);
  std::unique_ptr<FlushSampler> s(new FlushSampler());
  Impl& im = *s->impl_;
  im.opts = opts;

  int tlb_id = -1, ipi_cpu_id = -1, ipi_mask_id = -1, csd_id = -1;
  {
    std::string tw;
    auto tfs = Tracefs::acquire(&tw);
    if (!tfs) return fail(tw);
    tep_handle* tep = tep_alloc();
    if (!tep) return fail("libtraceevent: tep_alloc failed");
    auto load = [&](const char* sys, const char* name,
                    std::initializer_list<std::pair<const char*, Field*>> fields) -> int {
      std::vector<const char*> names;
      for (const auto& f : fields) names.push_back(f.first);
      const TracepointFields tp = load_tracepoint_fields(*tfs, tep, sys, name, names);
      if (tp.id < 0) {
        im.data.missing.push_back(tp.missing);
        return -1;
      }
      std::size_t k = 0;
      for (const auto& f : fields) *f.second = tp.fields[k++];
      return tp.id;
    };
    tlb_id = load("tlb", "tlb_flush", {{"reason", &im.f_reason}, {"pages", &im.f_pages}});
    ipi_cpu_id =
        load("ipi", "ipi_send_cpu", {{"cpu", &im.f_cpu}, {"callsite", &im.f_site_cpu}, {"callback", &im.f_cb_cpu}});
    ipi_mask_id = load("ipi", "ipi_send_cpumask",
                       {{"cpumask", &im.f_mask}, {"callsite", &im.f_site_mask}, {"callback", &im.f_cb_mask}});
    csd_id =
        load("csd", "csd_queue_cpu", {{"cpu", &im.f_csd_cpu}, {"callsite", &im.f_csd_site}, {"func", &im.f_csd_func}});
    tep_free(tep);
  }
  if (tlb_id < 0)
    return fail("tlb:tlb_flush is not available: " +
                (im.data.missing.empty() ? std::string("?") : im.data.missing.front()));

  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t data_bytes = static_cast<std::size_t>(opts.ring_pages) * static_cast<std::size_t>(page);
  std::vector<std::string> errors;
  // A few descriptors per CPU (the dummy, the flush events): 512 CPUs need more than 1024.
  if (std::string fwhy; !raise_fd_limit(static_cast<std::uint64_t>(opts.cpus.size()) * 8, &fwhy))
    errors.push_back(fwhy);
  for (int cpu : opts.cpus) {
    PerfRing ring;
    auto add = [&](Kind kind, int tp_id, const char* filter) {
      perf_event_attr a = polled_attr(data_bytes);  // never wakes: we poll
      if (kind == Kind::kDummy) {
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_DUMMY;
        a.mmap = 1;
        a.mmap2 = 1;
        a.mmap_data = 1;  // the r--p first segment too: module load bias needs the offset-0 mapping
        a.task = 1;
      } else {
        a.type = PERF_TYPE_TRACEPOINT;
        a.config = static_cast<std::uint64_t>(tp_id);
        a.sample_type |= PERF_SAMPLE_RAW;
      }
      if (kind == Kind::kFlushSend) {
        a.sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = kRegsMask;
        a.sample_stack_user = static_cast<std::uint32_t>(std::max(8, opts.stack_bytes / 8 * 8));
      }
      long fd = open_cpu_event(&a, cpu);
      if (fd < 0) {
        errors.push_back(
            fmt::format("cpu{} event {}: perf_event_open: {}", cpu, static_cast<int>(kind), std::strerror(errno)));
        return;
      }
      Slot sl;
      sl.fd = static_cast<int>(fd);
      sl.cpu = cpu;
      sl.kind = kind;
      if (filter && ::ioctl(sl.fd, PERF_EVENT_IOC_SET_FILTER, filter) != 0) {
        errors.push_back(fmt::format("cpu{}: filter '{}': {}", cpu, filter, std::strerror(errno)));
        ::close(sl.fd);
        return;
      }
      if (::ioctl(sl.fd, PERF_EVENT_IOC_ID, &sl.id) != 0) {
        errors.push_back(fmt::format("cpu{}: PERF_EVENT_IOC_ID: {}", cpu, std::strerror(errno)));
        ::close(sl.fd);
        return;
      }
      if (!ring.mapped()) {
        if (!ring.map(sl.fd, data_bytes, /*halve_on_limit=*/false)) {
          errors.push_back(fmt::format("cpu{}: mmap of the ring: {}", cpu, std::strerror(errno)));
          ::close(sl.fd);
          return;
        }
      } else if (!ring.redirect(sl.fd)) {
        errors.push_back(fmt::format("cpu{}: SET_OUTPUT: {}", cpu, std::strerror(errno)));
        ::close(sl.fd);
        return;
      }
      im.by_id[sl.id] = im.slots.size();
      im.slots.push_back(sl);
    };
    add(Kind::kFlushSend, tlb_id, "reason == 4");
    if (!ring.mapped()) continue;
    add(Kind::kFlushRecv, tlb_id, "reason == 1");
    if (ipi_cpu_id >= 0) add(Kind::kIpiCpu, ipi_cpu_id, nullptr);
    if (ipi_mask_id >= 0) add(Kind::kIpiMask, ipi_mask_id, nullptr);
    if (csd_id >= 0) add(Kind::kCsdQueue, csd_id, nullptr);
    add(Kind::kDummy, -1, nullptr);
    im.rings.push_back(std::move(ring));
  }
  if (im.rings.empty()) return fail(errors.empty() ? "nothing could be opened" : errors.front());
  for (auto& e : errors) im.data.missing.push_back(e);
  for (auto& sl : im.slots) ::ioctl(sl.fd, PERF_EVENT_IOC_ENABLE, 0);
  im.data.start_ns = mono_now_ns();
  return s;
}

void FlushSampler::start_reader() {
  Impl& im = *impl_;
  if (im.reader.joinable() || im.stopped) return;
  im.reader = std::thread([&im] { poll_until(im.stop_reader, im.opts.poll_interval_us, [&im] { im.drain_all(); }); });
}

SamplerData FlushSampler::stop() {
  Impl& im = *impl_;
  if (im.stopped) return {};
  for (auto& sl : im.slots) ::ioctl(sl.fd, PERF_EVENT_IOC_DISABLE, 0);
  const std::int64_t stop_ns = mono_now_ns();
  im.stop_reader.store(true);
  if (im.reader.joinable()) im.reader.join();
  im.drain_all();
  im.stopped = true;
  im.close_all();
  SamplerData out = std::move(im.data);
  out.stop_ns = stop_ns;
  return out;
}

SamplerData decode_sampler_ring(void* page, std::size_t data_offset, std::size_t data_size) {
  FlushSampler::Impl im;
  const Kind kinds[] = {Kind::kFlushSend, Kind::kFlushRecv, Kind::kIpiCpu,
                        Kind::kIpiMask,   Kind::kCsdQueue,  Kind::kDummy};
  for (std::size_t i = 0; i < std::size(kinds); ++i) {
    im.slots.push_back(Slot{-1, 0, kinds[i], i + 1});
    im.by_id[i + 1] = i;
  }
  const Field f8{8, 8, false, false, false}, f16{16, 8, false, false, false}, f24{24, 8, false, false, false};
  im.f_reason = f8;
  im.f_pages = f16;
  im.f_cpu = f8;
  im.f_site_cpu = f16;
  im.f_cb_cpu = f24;
  im.f_mask = Field{8, 4, false, true, false};
  im.f_site_mask = f16;
  im.f_cb_mask = f24;
  im.f_csd_cpu = f8;
  im.f_csd_site = f16;
  im.f_csd_func = f24;
  PerfRing ring;
  ring.attach_unowned(page, data_offset, data_size);
  im.rings.push_back(std::move(ring));
  im.drain_all();
  im.rings.clear();
  return std::move(im.data);
}

}  // namespace shootdown::sys
