// SPDX-License-Identifier: Apache-2.0
// tracefs: find it, mount it when nobody has (RAII: unmount what we mounted),
// and read event ids and format files. Never writes any tracefs setting:
// perf_event_open(PERF_TYPE_TRACEPOINT) needs only the event id, so the
// global ftrace state (tracing_on, current_tracer, events/enable) is never
// touched and there is nothing else to restore.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/expected.hpp"

namespace shootdown::sys {

class Tracefs {
 public:
  // Uses an existing tracefs mount (/proc/mounts) or mounts one at
  // /sys/kernel/tracing. An error when neither works.
  static Expected<std::unique_ptr<Tracefs>> acquire();
  ~Tracefs();  // unmounts only when we mounted
  Tracefs(const Tracefs&) = delete;
  Tracefs& operator=(const Tracefs&) = delete;

  const std::string& path() const { return path_; }
  bool mounted_by_us() const { return mounted_by_us_; }

  // events/<system>/<name>/id and .../format; nullopt when the event does not exist.
  std::optional<int> event_id(const std::string& system, const std::string& name) const;
  std::optional<std::string> event_format(const std::string& system, const std::string& name) const;

 private:
  Tracefs(std::string path, bool mounted) : path_(std::move(path)), mounted_by_us_(mounted) {}
  std::string path_;
  bool mounted_by_us_ = false;
};

// The mount point of a tracefs in /proc/mounts text, "" when none. Pure.
std::string find_tracefs_mount(const std::string& proc_mounts);

// A gate before libtraceevent's parser, which dereferences NULL on some
// malformed formats (fuzz_tracefs_format: a non-ASCII array size): the
// kernel writes printable ASCII with "name:", "ID:", "format:" and
// "print fmt:" lines, at most 64 KiB; anything else is refused unparsed.
bool plausible_event_format(const std::string& text);
// The format text as libtraceevent gets it: the fields only, the print fmt
// replaced by "" (the decoders use offsets and sizes alone; libtraceevent
// 1.7.1 divides by zero on mangled print fmt arguments, found by
// fuzz_tracefs_format: that parser is never reached).
std::string fields_only_format(const std::string& text);

}  // namespace shootdown::sys
