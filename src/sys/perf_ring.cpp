// SPDX-License-Identifier: Apache-2.0
#include "sys/perf_ring.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/core.h>
#include <ctime>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>

extern "C" {
#include <traceevent/event-parse.h>
}

#include "sys/perf_trace.hpp"
#include "sys/tracefs.hpp"

namespace shootdown::sys {

long perf_event_open(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  return ::syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

perf_event_attr polled_attr(std::size_t ring_data_bytes) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  a.disabled = 1;
  a.sample_id_all = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  a.watermark = 1;
  a.wakeup_watermark = static_cast<std::uint32_t>(ring_data_bytes);  // never wake: the reader polls
  return a;
}

Field field_from(const tep_format_field& tf) {
  Field out;
  out.offset = tf.offset;
  out.size = tf.size;
  out.is_signed = (tf.flags & TEP_FIELD_IS_SIGNED) != 0;
  out.dynamic = (tf.flags & TEP_FIELD_IS_DYNAMIC) != 0;
  out.relative = (tf.flags & TEP_FIELD_IS_RELATIVE) != 0;
  return out;
}

std::int64_t read_field(const std::uint8_t* raw, std::uint32_t raw_size, const Field& f) {
  if (!f.valid() || f.size <= 0 || f.size > 8 ||
      static_cast<std::uint64_t>(f.offset) + static_cast<std::uint64_t>(f.size) > raw_size)
    return 0;
  std::uint64_t v = 0;
  std::memcpy(&v, raw + f.offset, static_cast<std::size_t>(f.size));  // little-endian x86-64
  if (f.is_signed && f.size < 8) {
    const unsigned shift = 64u - 8u * static_cast<unsigned>(f.size);
    return static_cast<std::int64_t>(v << shift) >> shift;
  }
  return static_cast<std::int64_t>(v);
}

std::size_t read_dynamic_words(const std::uint8_t* raw, std::uint32_t raw_size, const Field& f,
                               std::span<std::uint64_t> out) {
  if (!f.valid() || static_cast<std::uint64_t>(f.offset) + 4 > raw_size) return 0;
  std::uint32_t loc = 0;
  std::memcpy(&loc, raw + f.offset, 4);
  std::uint32_t off = loc & 0xffffu;
  const std::uint32_t len = loc >> 16;
  if (f.relative) off += static_cast<std::uint32_t>(f.offset) + 4;
  if (off >= raw_size) return 0;
  const std::size_t bytes = std::min<std::size_t>({len, raw_size - off, out.size() * 8});
  const std::size_t n = (bytes + 7) / 8;
  std::fill_n(out.begin(), n, std::uint64_t{0});
  std::memcpy(out.data(), raw + off, bytes);  // little-endian x86-64: CPU n is bit n % 64 of word n / 64
  std::size_t used = n;
  while (used > 0 && out[used - 1] == 0) --used;
  return used;
}

Tracepoint load_tracepoint(const Tracefs& tfs, tep_handle* tep, const char* system, const char* name) {
  Tracepoint tp;
  auto id = tfs.event_id(system, name);
  auto text = tfs.event_format(system, name);
  if (!id || !text) return tp;
  tp.id = *id;
  const std::string fields = plausible_event_format(*text) ? fields_only_format(*text) : std::string();
  if (fields.empty() || tep_parse_event(tep, fields.data(), fields.size(), system) != 0) {
    tp.status = TracepointStatus::kUnparsable;
    return tp;
  }
  tp.event = tep_find_event_by_name(tep, system, name);
  tp.status = tp.event ? TracepointStatus::kOk : TracepointStatus::kNotFoundByName;
  return tp;
}

TracepointFields load_tracepoint_fields(const Tracefs& tfs, tep_handle* tep, const char* system, const char* name,
                                        std::span<const char* const> fields) {
  TracepointFields out;
  const std::string full = std::string(system) + ":" + name;
  const Tracepoint tp = load_tracepoint(tfs, tep, system, name);
  switch (tp.status) {
    case TracepointStatus::kNotInKernel:
      out.missing = full + ": not in this kernel (no events/" + system + "/" + name + " in tracefs)";
      return out;
    case TracepointStatus::kUnparsable:
      out.missing = full + ": libtraceevent could not parse its format";
      return out;
    case TracepointStatus::kNotFoundByName:
      out.missing = full + ": parsed format not found by name";
      return out;
    case TracepointStatus::kOk:
      break;
  }
  for (const char* f : fields) {
    if (!f) {
      out.fields.emplace_back();
      continue;
    }
    tep_format_field* tf = tep_find_field(tp.event, f);
    if (!tf) {
      out.fields.clear();
      out.missing = full + ": field '" + f + "' not in its format";
      return out;
    }
    out.fields.push_back(field_from(*tf));
  }
  out.id = tp.id;
  return out;
}

bool count_lost(RecordReader& rd, const perf_event_header& hdr, std::int64_t& lost) {
  std::uint64_t id = 0, n = 0;
  if (hdr.type == PERF_RECORD_LOST) {
    if (rd.u64(id) && rd.u64(n)) lost += static_cast<std::int64_t>(n);
    return true;
  }
  if (hdr.type == PERF_RECORD_LOST_SAMPLES) {
    if (rd.u64(n)) lost += static_cast<std::int64_t>(n);
    return true;
  }
  return false;
}

Status check_tracing(const std::vector<int>& cpus, const char* no_cpus) {
  if (cpus.empty()) return Error{no_cpus};
  return tracing_permitted();
}

TracepointLoader::TracepointLoader(std::unique_ptr<Tracefs> tfs, tep_handle* tep) : tfs_(std::move(tfs)), tep_(tep) {}

TracepointLoader::~TracepointLoader() {
  tep_free(tep_);
}

Expected<std::unique_ptr<TracepointLoader>> TracepointLoader::open() {
  auto tfs = Tracefs::acquire();
  if (!tfs) return Error{tfs.error()};
  tep_handle* tep = tep_alloc();
  if (!tep) return Error{"libtraceevent: tep_alloc failed"};
  return std::unique_ptr<TracepointLoader>(new TracepointLoader(std::move(*tfs), tep));
}

TracepointFields TracepointLoader::fields(const char* system, const char* name,
                                          std::span<const char* const> names) const {
  return load_tracepoint_fields(*tfs_, tep_, system, name, names);
}

std::size_t ring_data_bytes(int pages) {
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

PerfRing& PerfRing::operator=(PerfRing&& o) noexcept {
  if (this != &o) {
    reset();
    base_ = std::exchange(o.base_, nullptr);
    map_len_ = std::exchange(o.map_len_, 0);
    data_ = std::exchange(o.data_, nullptr);
    data_size_ = std::exchange(o.data_size_, 0);
    owner_fd_ = std::exchange(o.owner_fd_, -1);
  }
  return *this;
}

bool PerfRing::map(int fd, std::size_t data_bytes, bool halve_on_limit) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* base = MAP_FAILED;
  for (std::size_t bytes = data_bytes; !halve_on_limit || bytes >= page; bytes /= 2) {  // without halving: one try
    map_len_ = bytes + page;
    base = ::mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base != MAP_FAILED || !halve_on_limit || (errno != EPERM && errno != ENOMEM)) break;
  }
  if (base == MAP_FAILED) {
    map_len_ = 0;
    return false;
  }
  base_ = base;
  owner_fd_ = fd;
  auto* meta = static_cast<perf_event_mmap_page*>(base);
  data_ = static_cast<std::uint8_t*>(base) + (meta->data_offset ? meta->data_offset : static_cast<std::uint64_t>(page));
  data_size_ = meta->data_size ? meta->data_size : map_len_ - page;
  return true;
}

bool PerfRing::redirect(int fd) const {
  return ::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, owner_fd_) == 0;
}

void PerfRing::attach_unowned(void* base, std::size_t data_offset, std::size_t data_size) {
  reset();
  base_ = base;
  map_len_ = 0;  // not ours: reset() does not unmap
  data_ = static_cast<std::uint8_t*>(base) + data_offset;
  data_size_ = data_size;
}

void PerfRing::reset() {
  if (base_ && map_len_) ::munmap(base_, map_len_);
  base_ = nullptr;
  map_len_ = 0;
  data_ = nullptr;
  data_size_ = 0;
  owner_fd_ = -1;
}

CpuRing::CpuRing(int cpu, std::size_t data_bytes, bool halve_on_limit, std::string map_what)
    : cpu_(cpu), data_bytes_(data_bytes), halve_on_limit_(halve_on_limit), map_what_(std::move(map_what)) {}

Expected<std::uint64_t> CpuRing::add(int fd, const std::string& label, const char* filter) {
  auto failed = [fd](std::string what) {
    ::close(fd);
    return Error{std::move(what)};
  };
  if (filter && ::ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) != 0)
    return failed(fmt::format("{}: filter '{}': {}", label, filter, std::strerror(errno)));
  std::uint64_t id = 0;
  if (::ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
    return failed(fmt::format("{}: PERF_EVENT_IOC_ID: {}", label, std::strerror(errno)));
  if (!ring_.mapped()) {
    if (!ring_.map(fd, data_bytes_, halve_on_limit_)) {
      map_failed_ = true;
      return failed(fmt::format("cpu{}: {}: {}", cpu_, map_what_, std::strerror(errno)));
    }
  } else if (!ring_.redirect(fd)) {
    return failed(fmt::format("{}: SET_OUTPUT: {}", label, std::strerror(errno)));
  }
  return id;
}

void PerfRing::copy_out(std::uint64_t pos, void* dst, std::size_t n) const {
  const std::size_t first = static_cast<std::size_t>(std::min<std::uint64_t>(n, data_size_ - pos));
  std::memcpy(dst, data_ + pos, first);
  if (first < n) std::memcpy(static_cast<std::uint8_t*>(dst) + first, data_, n - first);
}

}  // namespace shootdown::sys
