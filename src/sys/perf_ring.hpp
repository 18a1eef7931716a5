// SPDX-License-Identifier: Apache-2.0
// What sys::Tracer (perf_trace) and sys::FlushSampler (perf_sampler) share:
// CPU-wide perf events that are never woken (the reader polls), one mmap-ed
// ring per CPU that the other events of that CPU are redirected into, the
// drain of that ring, bounded readers for a record's fields and for the raw
// tracepoint payload, and tracepoint lookup in tracefs + libtraceevent.
// Both open their events the same way: check_tracing, a TracepointLoader for
// the ids and fields, then per CPU a CpuRing that each opened event joins.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <linux/perf_event.h>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

#include "core/expected.hpp"

struct tep_handle;
struct tep_event;
struct tep_format_field;

namespace shootdown::sys {

class Tracefs;

long perf_event_open(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags);

// CPU-wide (pid -1), close-on-exec.
inline long open_cpu_event(perf_event_attr* attr, int cpu) {
  return perf_event_open(attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

// Attr for a polled CPU-wide event: every occurrence sampled, disabled until
// enabled, IDENTIFIER|TID|TIME|CPU first, CLOCK_MONOTONIC timestamps, and
// wakeup_watermark = the ring size, i.e. never a wakeup (an irq_work self-IPI).
perf_event_attr polled_attr(std::size_t ring_data_bytes);

// A tracepoint format field (tep_format_field) as the readers need it.
struct Field {
  int offset = -1;
  int size = 0;
  bool is_signed = false;
  bool dynamic = false;   // __data_loc: u32 (len << 16 | offset)
  bool relative = false;  // __rel_loc: offset relative to the end of the field
  bool valid() const { return offset >= 0; }
};

Field field_from(const tep_format_field& tf);

// A fixed-size field of the raw payload, sign-extended when signed; 0 when
// invalid or outside raw_size.
std::int64_t read_field(const std::uint8_t* raw, std::uint32_t raw_size, const Field& f);
// A __data_loc/__rel_loc bitmask (cpumask_t, sized by the kernel to
// nr_cpu_ids bits in whole longs) into `out` as 64-bit words: CPU n is bit
// n % 64 of word n / 64. Returns the words up to the last non-zero one (0:
// no CPU, or the field invalid or outside raw_size). No allocation: the
// tracer calls it while victims are measured. kMaxCpumaskWords covers
// NR_CPUS 8192, x86's largest.
inline constexpr std::size_t kMaxCpumaskWords = 8192 / 64;
std::size_t read_dynamic_words(const std::uint8_t* raw, std::uint32_t raw_size, const Field& f,
                               std::span<std::uint64_t> out);

// Sequential, bounded reads of one record's body (after the header).
struct RecordReader {
  const std::uint8_t* p;
  const std::uint8_t* end;
  RecordReader(const std::uint8_t* rec, const perf_event_header& hdr) : p(rec + sizeof hdr), end(rec + hdr.size) {}
  // Bounds are checked as lengths (end - p), never as p + n, which overflows
  // for a hostile n (a callchain nr of 2^61 from a corrupt ring).
  std::uint64_t left() const { return static_cast<std::uint64_t>(end - p); }
  bool u64(std::uint64_t& v) {
    if (left() < 8) return false;
    std::memcpy(&v, p, 8);
    p += 8;
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (left() < 4) return false;
    std::memcpy(&v, p, 4);
    p += 4;
    return true;
  }
  // n bytes in place: their start in at, false when they are not all there.
  // n u64 words (a callchain): n * 8 must not wrap (n = 2^61 gives 0).
  bool take_u64s(std::uint64_t n, const std::uint8_t*& at) {
    if (n > left() / 8) return false;
    return take(n * 8, at);
  }
  bool take(std::uint64_t n, const std::uint8_t*& at) {
    if (n > left()) return false;
    at = p;
    p += n;
    return true;
  }
};

// The tracepoint's id and parsed format (tep_find_event_by_name; nullptr
// event when only that failed). Status says what failed first.
enum class TracepointStatus { kOk, kNotInKernel, kUnparsable, kNotFoundByName };
struct Tracepoint {
  TracepointStatus status = TracepointStatus::kNotInKernel;
  int id = -1;
  tep_event* event = nullptr;
};
Tracepoint load_tracepoint(const Tracefs& tfs, tep_handle* tep, const char* system, const char* name);

// The one loader the tracer and the sampler use: the tracepoint's id and the
// named fields (a nullptr name gives an empty Field), or `missing` saying
// what failed ("tlb:tlb_flush: not in this kernel (no events/tlb/tlb_flush in
// tracefs)", "...: field 'pages' not in its format"); id < 0 then.
struct TracepointFields {
  int id = -1;
  std::vector<Field> fields;
  std::string missing;
};
TracepointFields load_tracepoint_fields(const Tracefs& tfs, tep_handle* tep, const char* system, const char* name,
                                        std::span<const char* const> fields);

// What opening the tracer or the sampler checks first: CPUs given (else the
// error `no_cpus`), then tracing_permitted.
Status check_tracing(const std::vector<int>& cpus, const char* no_cpus);

// tracefs and a libtraceevent handle, held while the tracepoints' ids and
// fields are looked up and released when destroyed (tracefs unmounted when
// it was mounted here): the perf events need neither once opened.
class TracepointLoader {
 public:
  // Tracefs::acquire's error, or "libtraceevent: tep_alloc failed".
  static Expected<std::unique_ptr<TracepointLoader>> open();
  ~TracepointLoader();
  TracepointLoader(const TracepointLoader&) = delete;
  TracepointLoader& operator=(const TracepointLoader&) = delete;

  // load_tracepoint_fields on this tracefs.
  TracepointFields fields(const char* system, const char* name, std::span<const char* const> names) const;

 private:
  TracepointLoader(std::unique_ptr<Tracefs> tfs, tep_handle* tep);
  std::unique_ptr<Tracefs> tfs_;
  tep_handle* tep_ = nullptr;
};

// The bytes of ring data in `pages` pages.
std::size_t ring_data_bytes(int pages);

// One mmap-ed perf ring (the metadata page plus data pages); unmapped when
// destroyed. Move-only.
class PerfRing {
 public:
  PerfRing() = default;
  ~PerfRing() { reset(); }
  PerfRing(PerfRing&& o) noexcept { *this = static_cast<PerfRing&&>(o); }
  PerfRing& operator=(PerfRing&& o) noexcept;
  PerfRing(const PerfRing&) = delete;
  PerfRing& operator=(const PerfRing&) = delete;

  // Maps data_bytes + one page of fd. With halve_on_limit, retries with half
  // the data while mmap fails with EPERM/ENOMEM (perf_event_mlock_kb), down
  // to one data page. false (errno set by mmap) when nothing could be mapped.
  bool map(int fd, std::size_t data_bytes, bool halve_on_limit);
  // Redirects fd's records into this ring (PERF_EVENT_IOC_SET_OUTPUT).
  bool redirect(int fd) const;
  bool mapped() const { return base_ != nullptr; }
  // A ring in memory we do not own (fuzzing, tests): base is a
  // perf_event_mmap_page followed by data_size bytes of ring data.
  void attach_unowned(void* base, std::size_t data_offset, std::size_t data_size);
  int owner_fd() const { return owner_fd_; }
  void reset();

  // Hands every complete record from data_tail to data_head to on_record
  // (const std::uint8_t* rec, const perf_event_header&), then publishes the
  // new tail. A record that wraps the ring end is copied into scratch first
  // (it must hold 64 KiB: perf_event_header::size is 16 bits).
  template <class F>
  void drain(std::uint8_t* scratch, F&& on_record) {
    auto* meta = static_cast<perf_event_mmap_page*>(base_);
    // data_head is written by the kernel: acquire pairs with its release
    // (perf_event_open(2), "mmap layout").
    std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    std::uint64_t tail = meta->data_tail;
    // The kernel never lets head run more than one ring ahead of tail; a
    // corrupt head must not make us walk the ring forever.
    if (head > tail && head - tail > data_size_) head = tail + data_size_;
    while (tail < head) {
      const std::uint64_t pos = tail % data_size_;
      perf_event_header hdr{};
      copy_out(pos, &hdr, sizeof hdr);
      if (hdr.size < sizeof hdr || hdr.size > head - tail) break;  // corrupt: give up on this ring for now
      const std::uint8_t* rec = data_ + pos;
      if (pos + hdr.size > data_size_) {
        copy_out(pos, scratch, hdr.size);
        rec = scratch;
      }
      on_record(rec, hdr);
      tail += hdr.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  }

 private:
  void copy_out(std::uint64_t pos, void* dst, std::size_t n) const;

  void* base_ = nullptr;
  std::size_t map_len_ = 0;
  std::uint8_t* data_ = nullptr;
  std::uint64_t data_size_ = 0;
  int owner_fd_ = -1;
};

// One CPU's ring and the events that write into it: the first event added
// maps the ring (its descriptor owns it), each later one is redirected into
// it (PERF_EVENT_IOC_SET_OUTPUT), so a CPU's records arrive in time order.
class CpuRing {
 public:
  // map_what names the mmap in its error ("mmap of the ring (2048 pages)").
  CpuRing(int cpu, std::size_t data_bytes, bool halve_on_limit, std::string map_what);

  // Adds an opened event (fd): its filter (PERF_EVENT_IOC_SET_FILTER, unless
  // nullptr), its id (PERF_EVENT_IOC_ID), then the ring. Returns the id; on
  // failure closes fd and says what failed: "<label>: filter '<filter>': ...",
  // "<label>: PERF_EVENT_IOC_ID: ...", "cpu<N>: <map_what>: ..." (map_failed()
  // then) or "<label>: SET_OUTPUT: ...".
  Expected<std::uint64_t> add(int fd, const std::string& label, const char* filter = nullptr);
  bool mapped() const { return ring_.mapped(); }
  bool map_failed() const { return map_failed_; }
  PerfRing& ring() { return ring_; }

 private:
  int cpu_;
  std::size_t data_bytes_;
  bool halve_on_limit_;
  std::string map_what_;
  bool map_failed_ = false;
  PerfRing ring_;
};

// The rings of the tracer or the sampler and the thread that polls them;
// mu guards the rings' tails and whatever their records are decoded into.
struct PolledRings {
  std::vector<PerfRing> rings;
  std::mutex mu;
  std::vector<std::uint8_t> scratch = std::vector<std::uint8_t>(65536);  // a record that wraps the ring end
  std::thread reader;
  std::atomic<bool> stop_reader{false};
  bool stopped = false;

  // Hands every record of every ring to on_record (rec, header), under mu.
  template <class F>
  void drain_rings(F&& on_record) {
    std::lock_guard<std::mutex> lk(mu);
    for (auto& r : rings) r.drain(scratch.data(), on_record);
  }
  void join_reader() {
    stop_reader.store(true, std::memory_order_relaxed);
    if (reader.joinable()) reader.join();
  }
};

// A PERF_RECORD_LOST ({u64 id; u64 lost}) or PERF_RECORD_LOST_SAMPLES
// ({u64 lost}) record: its count added to `lost`, true. False for any other.
bool count_lost(RecordReader& rd, const perf_event_header& hdr, std::int64_t& lost);

// The reader thread's loop: drain_all() every poll_interval_us (at least
// 100 us) until stop is set. Polling, never perf wakeups (see polled_attr).
template <class F>
void poll_until(const std::atomic<bool>& stop, int poll_interval_us, F&& drain_all) {
  const auto period = std::chrono::microseconds(std::max(100, poll_interval_us));
  while (!stop.load(std::memory_order_relaxed)) {
    drain_all();
    std::this_thread::sleep_for(period);
  }
}

}  // namespace shootdown::sys
