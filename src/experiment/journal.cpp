// SPDX-License-Identifier: Apache-2.0
#include "experiment/journal.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.hpp"

namespace shootdown::exp {

JournalConfig journal_config(const Plan& plan, ReleaseStrategy s) {
  JournalConfig c;
  c.recycle = s == ReleaseStrategy::kJournalRecycle;
  if (plan.segment_size > 0) c.segment_size = static_cast<std::size_t>(plan.segment_size);
  c.dir = plan.journal_dir;
  return c;
}

Journal::Journal(JournalConfig cfg) : cfg_(std::move(cfg)) {
  if (cfg_.segment_size < 4096 || cfg_.segment_size % 4096 != 0 || cfg_.record_size == 0 ||
      cfg_.record_size > cfg_.segment_size)
    throw RuntimeError("journal: segment size must be a positive multiple of 4 KiB and hold a record");
  dir_ = cfg_.dir;
  if (dir_.empty()) {
    struct stat st {};
    dir_ =
        (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0) ? "/dev/shm" : "/tmp";
  }
  record_.assign(cfg_.record_size, 'j');
  const int n = cfg_.recycle ? std::max(cfg_.pool_segments, 2) : 1;
  pool_.resize(static_cast<std::size_t>(n));
  for (auto& s : pool_) {
    if (const Status opened = open_segment(&s); !opened) {
      for (auto& x : pool_) close_segment(&x);
      throw RuntimeError("journal: " + opened.error());
    }
    // Pre-fault (write every page) so the first records do not fault: both
    // arms start from a warm segment, only what happens on rotation differs.
    for (std::size_t off = 0; off < cfg_.segment_size; off += 4096) s.data[off] = 0;
  }
}

Journal::~Journal() {
  for (auto& s : pool_) close_segment(&s);
}

Status Journal::open_segment(Segment* s) {
  s->path = dir_ + "/shootdown-journal-" + std::to_string(::getpid()) + "-" + std::to_string(files_++) + ".seg";
  s->fd = ::open(s->path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (s->fd < 0) return Error{"cannot create " + s->path + ": " + std::strerror(errno)};
  if (::ftruncate(s->fd, static_cast<off_t>(cfg_.segment_size)) != 0) {
    Error e{"ftruncate " + s->path + ": " + std::strerror(errno)};
    close_segment(s);
    return e;
  }
  void* p = ::mmap(nullptr, cfg_.segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
  if (p == MAP_FAILED) {
    Error e{"mmap " + s->path + ": " + std::strerror(errno)};
    close_segment(s);
    return e;
  }
  s->data = static_cast<char*>(p);
  return Ok{};
}

void Journal::close_segment(Segment* s) noexcept {
  if (s->data) ::munmap(s->data, cfg_.segment_size);
  if (s->fd >= 0) ::close(s->fd);
  if (!s->path.empty()) ::unlink(s->path.c_str());
  s->data = nullptr;
  s->fd = -1;
  s->path.clear();
}

Status Journal::rotate() {
  ++rotations_;
  off_ = 0;
  if (cfg_.recycle) {
    cur_ = (cur_ + 1) % pool_.size();
    return Ok{};
  }
  // The full segment is done: unmap it (TLB shootdown of every CPU running
  // this mm), delete it, start a fresh file.
  close_segment(&pool_[cur_]);
  return open_segment(&pool_[cur_]);
}

Status Journal::append(std::size_t bytes) {
  const std::size_t rec = cfg_.record_size;
  for (std::size_t written = 0; written < bytes; written += rec) {
    if (off_ + rec > cfg_.segment_size)
      if (Status rotated = rotate(); !rotated) return rotated;
    char* p = pool_[cur_].data + off_;
    std::memcpy(p, record_.data(), rec);
    std::memcpy(p, &seq_, sizeof seq_);  // record header: sequence number
    ++seq_;
    off_ += rec;
  }
  return Ok{};
}

}  // namespace shootdown::exp
