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

#include "sys/perf_fuzz.hpp"
#include "sys/perf_ring.hpp"
#include "sys/perf_trace.hpp"
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

// The ids of the tracepoints the sampler opens (-1: not in this kernel).
struct TracepointIds {
  int tlb = -1, ipi_cpu = -1, ipi_mask = -1, csd = -1;
};

// What every sample starts with (IDENTIFIER | TID | TIME | CPU [| CALLCHAIN]
// | RAW): the event it belongs to, and where its callchain and raw payload are.
struct SampleHead {
  Kind kind = Kind::kDummy;
  std::int64_t time = 0;
  int pid = 0, tid = 0, cpu = -1;
  const std::uint8_t* chain = nullptr;  // kFlushSend only: nr instruction pointers
  std::uint64_t nr = 0;
  const std::uint8_t* raw = nullptr;
  std::uint32_t raw_size = 0;
};

}  // namespace

struct FlushSampler::Impl : PolledRings {
  SamplerOptions opts;
  std::vector<Slot> slots;
  std::map<std::uint64_t, std::size_t> by_id;
  Field f_reason, f_pages, f_cpu, f_mask, f_site_cpu, f_cb_cpu, f_site_mask, f_cb_mask, f_csd_cpu, f_csd_site,
      f_csd_func;
  SamplerData data;
  std::unordered_multimap<std::uint64_t, std::uint32_t> stack_index;  // hash -> data.stacks index
  SampledStack scratch_stack;
  std::array<std::uint64_t, kMaxCpumaskWords> mask_words{};

  void drain_all() {
    drain_rings([this](const std::uint8_t* rec, const perf_event_header& hdr) { handle(rec, hdr); });
  }

  void handle(const std::uint8_t* rec, const perf_event_header& hdr) {
    RecordReader rd(rec, hdr);
    if (hdr.type != PERF_RECORD_SAMPLE) {
      handle_side_record(rd, hdr);
      return;
    }
    SampleHead h;
    if (!read_head(rd, h)) return;
    switch (h.kind) {
      case Kind::kFlushRecv:
        ++data.received[{h.cpu, h.pid}];
        return;
      case Kind::kCsdQueue:
        on_csd_queue(h);
        return;
      case Kind::kIpiCpu:
      case Kind::kIpiMask:
        on_ipi(h);
        return;
      case Kind::kFlushSend:
        on_flush(rd, h);
        return;
      case Kind::kDummy:
        return;
    }
  }

  // The records that are not samples: losses, and the dummy event's
  // mappings and forks.
  void handle_side_record(RecordReader& rd, const perf_event_header& hdr) {
    if (count_lost(rd, hdr, data.lost)) return;
    auto u64 = [&](std::uint64_t& v) { return rd.u64(v); };
    auto u32 = [&](std::uint32_t& v) { return rd.u32(v); };
    switch (hdr.type) {
      case PERF_RECORD_MMAP2:
        on_mmap2(rd, hdr);
        return;
      case PERF_RECORD_FORK: {
        std::uint32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
        std::uint64_t t = 0;
        if (!u32(pid) || !u32(ppid) || !u32(tid) || !u32(ptid) || !u64(t)) return;
        data.forks.push_back(ForkRecord{static_cast<std::int64_t>(t), static_cast<int>(pid), static_cast<int>(ppid),
                                        static_cast<int>(tid)});
        return;
      }
      default:
        return;
    }
  }

  void on_mmap2(RecordReader& rd, const perf_event_header& hdr) {
    auto u64 = [&](std::uint64_t& v) { return rd.u64(v); };
    auto u32 = [&](std::uint32_t& v) { return rd.u32(v); };
    MmapRecord m;
    std::uint32_t pid = 0, tid = 0, maj = 0, min = 0, prot = 0, flags = 0;
    std::uint64_t gen = 0;
    if (!u32(pid) || !u32(tid) || !u64(m.start) || !u64(m.len) || !u64(m.pgoff) || !u32(maj) || !u32(min) ||
        !u64(m.ino) || !u64(gen) || !u32(prot) || !u32(flags))
      return;
    const auto* name = reinterpret_cast<const char*>(rd.p);
    const std::size_t maxlen = static_cast<std::size_t>(rd.end - rd.p);
    m.path.assign(name, strnlen(name, maxlen));
    if (m.path.empty() || m.path[0] != '/' || (hdr.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) return;
    m.pid = static_cast<int>(pid);
    m.maj = maj;
    m.min = min;
    m.prot = prot;
    // The dummy event's side records end with the sample_id trailer {pid,tid; time; identifier}.
    if (hdr.size >= sizeof hdr + 24) {
      std::uint64_t t = 0;
      std::memcpy(&t, rd.end - 16, 8);
      m.mono_ns = static_cast<std::int64_t>(t);
    }
    data.mmaps.push_back(std::move(m));
  }

  // false when the sample is cut short or of no event of ours.
  bool read_head(RecordReader& rd, SampleHead& h) const {
    std::uint64_t id = 0, pidtid = 0, time = 0, cpures = 0;
    if (!rd.u64(id)) return false;
    auto it = by_id.find(id);
    if (it == by_id.end()) return false;
    h.kind = slots[it->second].kind;
    if (!rd.u64(pidtid) || !rd.u64(time) || !rd.u64(cpures)) return false;
    h.time = static_cast<std::int64_t>(time);
    h.pid = static_cast<int>(pidtid & 0xffffffffu);
    h.tid = static_cast<int>(pidtid >> 32);
    h.cpu = static_cast<int>(cpures & 0xffffffffu);
    if (h.kind == Kind::kFlushSend && (!rd.u64(h.nr) || !rd.take_u64s(h.nr, h.chain))) return false;
    return rd.u32(h.raw_size) && rd.take(h.raw_size, h.raw);
  }

  static SampledIpi ipi_of(const SampleHead& h) {
    SampledIpi ipi;
    ipi.mono_ns = h.time;
    ipi.cpu = h.cpu;
    ipi.pid = h.pid;
    ipi.tid = h.tid;
    return ipi;
  }

  std::uint64_t raw_address(const SampleHead& h, const Field& f) const {
    return static_cast<std::uint64_t>(read_field(h.raw, h.raw_size, f));
  }

  void on_csd_queue(const SampleHead& h) {
    SampledIpi q = ipi_of(h);
    q.queued = true;
    const auto c = read_field(h.raw, h.raw_size, f_csd_cpu);
    if (c >= 0 && c < 65536) q.targets.set(static_cast<int>(c));
    q.callsite = raw_address(h, f_csd_site);
    q.callback = raw_address(h, f_csd_func);
    data.ipis.push_back(q);
  }

  void on_ipi(const SampleHead& h) {
    SampledIpi ipi = ipi_of(h);
    ipi.single = h.kind == Kind::kIpiCpu;
    if (ipi.single) {
      const auto c = read_field(h.raw, h.raw_size, f_cpu);
      if (c >= 0 && c < 65536) ipi.targets.set(static_cast<int>(c));
      ipi.callsite = raw_address(h, f_site_cpu);
      ipi.callback = raw_address(h, f_cb_cpu);
    } else {
      const std::size_t n = read_dynamic_words(h.raw, h.raw_size, f_mask, mask_words);
      ipi.targets = CpuMask({mask_words.begin(), mask_words.begin() + static_cast<std::ptrdiff_t>(n)});
      ipi.callsite = raw_address(h, f_site_mask);
      ipi.callback = raw_address(h, f_cb_mask);
    }
    if (ipi.callback == 0) return;  // reschedule kicks (no function to run)
    data.ipis.push_back(ipi);
  }

  // A reason-4 flush: its pages, and its stack interned.
  void on_flush(RecordReader& rd, const SampleHead& h) {
    if (data.flushes.size() >= opts.max_flush_samples) {
      ++data.dropped;
      return;
    }
    SampledFlush f;
    f.mono_ns = h.time;
    f.cpu = h.cpu;
    f.pid = h.pid;
    f.tid = h.tid;
    f.pages = read_field(h.raw, h.raw_size, f_pages);
    if (f.pages == static_cast<std::int64_t>(~0ULL >> 1) || static_cast<std::uint64_t>(f.pages) == ~0ULL) f.pages = -1;
    SampledStack& st = scratch_stack;  // reused: no allocation once warm
    split_callchain(h, st);
    if (!read_sp_word(rd, st)) return;
    f.stack = intern(st);
    data.flushes.push_back(f);
  }

  // The callchain's kernel and user frames (the PERF_CONTEXT_* markers say where each part starts).
  static void split_callchain(const SampleHead& h, SampledStack& st) {
    st.kernel_ips.clear();
    st.user_ips.clear();
    st.pid = h.pid;
    st.sp_word = 0;
    st.has_sp_word = false;
    bool user = false;
    for (std::uint64_t i = 0; i < h.nr; ++i) {
      std::uint64_t ip = 0;
      std::memcpy(&ip, h.chain + 8 * i, 8);
      if (ip >= static_cast<std::uint64_t>(PERF_CONTEXT_MAX)) {
        user = ip == static_cast<std::uint64_t>(PERF_CONTEXT_USER);
        continue;
      }
      (user ? st.user_ips : st.kernel_ips).push_back(ip);
    }
  }

  // After the raw payload: REGS_USER (skipped) and STACK_USER, whose first
  // word is the one at the user sp. false when the registers are cut short.
  static bool read_sp_word(RecordReader& rd, SampledStack& st) {
    std::uint64_t abi = 0;
    if (rd.u64(abi) && abi != PERF_SAMPLE_REGS_ABI_NONE) {
      std::uint64_t bp = 0, sp = 0, ip = 0;
      if (!rd.u64(bp) || !rd.u64(sp) || !rd.u64(ip)) return false;
    }
    std::uint64_t size = 0;
    if (rd.u64(size) && size > 0 && size <= rd.left() && rd.left() - size >= 8) {
      std::uint64_t dyn = 0;
      std::memcpy(&dyn, rd.p + size, 8);
      if (dyn >= 8) {
        std::memcpy(&st.sp_word, rd.p, 8);
        st.has_sp_word = true;
      }
    }
    return true;
  }

  // The tracepoints' ids and fields (those not in this kernel noted in
  // data.missing); an error when tlb:tlb_flush is not there.
  Expected<TracepointIds> resolve_tracepoints() {
    auto loader = TracepointLoader::open();
    if (!loader) return Error{loader.error()};
    auto load = [&](const char* sys, const char* name,
                    std::initializer_list<std::pair<const char*, Field Impl::*>> fields) -> int {
      std::vector<const char*> names;
      for (const auto& f : fields) names.push_back(f.first);
      const TracepointFields tp = (*loader)->fields(sys, name, names);
      if (tp.id < 0) {
        data.missing.push_back(tp.missing);
        return -1;
      }
      auto field = tp.fields.begin();  // one per name
      for (const auto& f : fields) this->*f.second = *field++;
      return tp.id;
    };
    TracepointIds ids;
    ids.tlb = load("tlb", "tlb_flush", {{"reason", &Impl::f_reason}, {"pages", &Impl::f_pages}});
    ids.ipi_cpu = load("ipi", "ipi_send_cpu",
                       {{"cpu", &Impl::f_cpu}, {"callsite", &Impl::f_site_cpu}, {"callback", &Impl::f_cb_cpu}});
    ids.ipi_mask = load("ipi", "ipi_send_cpumask",
                        {{"cpumask", &Impl::f_mask}, {"callsite", &Impl::f_site_mask}, {"callback", &Impl::f_cb_mask}});
    ids.csd = load("csd", "csd_queue_cpu",
                   {{"cpu", &Impl::f_csd_cpu}, {"callsite", &Impl::f_csd_site}, {"func", &Impl::f_csd_func}});
    if (ids.tlb < 0)
      return Error{"tlb:tlb_flush is not available: " +
                   (data.missing.empty() ? std::string("?") : data.missing.front())};
    return ids;
  }

  perf_event_attr attr_of(Kind kind, int tp_id, std::size_t data_bytes) const {
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
    return a;
  }

  // One event on ring's CPU (filtered when filter is not nullptr); what
  // failed goes to errors.
  void open_event(CpuRing& ring, int cpu, Kind kind, int tp_id, const char* filter, std::size_t data_bytes,
                  std::vector<std::string>& errors) {
    perf_event_attr a = attr_of(kind, tp_id, data_bytes);
    const long fd = open_cpu_event(&a, cpu);
    if (fd < 0) {
      errors.push_back(
          fmt::format("cpu{} event {}: perf_event_open: {}", cpu, static_cast<int>(kind), std::strerror(errno)));
      return;
    }
    const auto id = ring.add(static_cast<int>(fd), fmt::format("cpu{}", cpu), filter);
    if (!id) {
      errors.push_back(id.error());
      return;
    }
    by_id[*id] = slots.size();
    slots.push_back(Slot{static_cast<int>(fd), cpu, kind, *id});
  }

  // Every event on `cpu`, into one ring; the CPU is left out when the
  // initiators' flushes (the first event, which maps the ring) cannot be read.
  void open_cpu(int cpu, const TracepointIds& ids, std::size_t data_bytes, std::vector<std::string>& errors) {
    CpuRing ring(cpu, data_bytes, /*halve_on_limit=*/false, "mmap of the ring");
    open_event(ring, cpu, Kind::kFlushSend, ids.tlb, "reason == 4", data_bytes, errors);
    if (!ring.mapped()) return;
    open_event(ring, cpu, Kind::kFlushRecv, ids.tlb, "reason == 1", data_bytes, errors);
    if (ids.ipi_cpu >= 0) open_event(ring, cpu, Kind::kIpiCpu, ids.ipi_cpu, nullptr, data_bytes, errors);
    if (ids.ipi_mask >= 0) open_event(ring, cpu, Kind::kIpiMask, ids.ipi_mask, nullptr, data_bytes, errors);
    if (ids.csd >= 0) open_event(ring, cpu, Kind::kCsdQueue, ids.csd, nullptr, data_bytes, errors);
    open_event(ring, cpu, Kind::kDummy, -1, nullptr, data_bytes, errors);
    rings.push_back(std::move(ring.ring()));
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
  impl_->join_reader();
  for (auto& s : impl_->slots) ::ioctl(s.fd, PERF_EVENT_IOC_DISABLE, 0);
  impl_->close_all();
}

Expected<std::unique_ptr<FlushSampler>> FlushSampler::open(const SamplerOptions& opts) {
  if (const Status can = check_tracing(opts.cpus, "no CPUs to sample"); !can) return Error{can.error()};
  std::unique_ptr<FlushSampler> s(new FlushSampler());
  Impl& im = *s->impl_;
  im.opts = opts;
  const auto ids = im.resolve_tracepoints();
  if (!ids) return Error{ids.error()};

  const std::size_t data_bytes = ring_data_bytes(opts.ring_pages);
  std::vector<std::string> errors;
  // A few descriptors per CPU (the dummy, the flush events): 512 CPUs need more than 1024.
  if (const Status room = raise_fd_limit(static_cast<std::uint64_t>(opts.cpus.size()) * 8); !room)
    errors.push_back(room.error());
  for (int cpu : opts.cpus) im.open_cpu(cpu, *ids, data_bytes, errors);
  if (im.rings.empty()) return Error{errors.empty() ? "nothing could be opened" : errors.front()};
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
  im.join_reader();
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
