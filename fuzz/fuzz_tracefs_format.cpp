// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: tracefs `events/*/*/format` files (parsed by
// libtraceevent, then turned into field offsets by field_from and used by
// read_field / read_dynamic_words on a sample's raw data), and /proc/mounts
// (find_tracefs_mount). The raw record is the tail of the input.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include <traceevent/event-parse.h>
}

#include "sys/perf_ring.hpp"
#include "sys/tracefs.hpp"

namespace sys = shootdown::sys;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // First byte: how much of the tail is the raw sample (0..255 bytes).
  const std::size_t raw_len = std::min<std::size_t>(data[0], size - 1);
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1 - raw_len);
  const std::vector<std::uint8_t> raw(data + size - raw_len, data + size);
  (void)sys::find_tracefs_mount(text);
  tep_handle* tep = tep_alloc();
  if (!tep) return 0;
  // The same gate load_tracepoint puts before libtraceevent.
  const std::string gated = sys::plausible_event_format(text) ? sys::fields_only_format(text) : std::string();
  if (!gated.empty() && tep_parse_event(tep, gated.data(), gated.size(), "fuzz") == 0) {
    tep_event** events = tep_list_events(tep, TEP_EVENT_SORT_ID);
    for (int i = 0; events && events[i]; ++i) {
      tep_format_field** fields = tep_event_fields(events[i]);
      for (int k = 0; fields && fields[k]; ++k) {
        const sys::Field f = sys::field_from(*fields[k]);
        (void)sys::read_field(raw.data(), static_cast<std::uint32_t>(raw.size()), f);
        std::array<std::uint64_t, sys::kMaxCpumaskWords> words{};
        (void)sys::read_dynamic_words(raw.data(), static_cast<std::uint32_t>(raw.size()), f, words);
      }
      free(fields);
    }
  }
  tep_free(tep);
  return 0;
}
