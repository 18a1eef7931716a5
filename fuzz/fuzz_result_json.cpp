// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: result.json as `report DIR` reads it. Malformed or
// hostile JSON must be refused with JsonReadError (report: exit 2), never
// crash; an accepted result is re-rendered by the sinks report runs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/timeline.hpp"
#include "sink/console.hpp"
#include "sink/csv.hpp"
#include "sink/html_report.hpp"
#include "sink/json.hpp"
#include "sink/json_read.hpp"

namespace sink = shootdown::sink;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  sink::LoadedResult loaded;
  try {
    loaded = sink::result_from_json(text);
  } catch (const sink::JsonReadError&) {
    return 0;
  }
  (void)sink::console_summary(loaded.result, loaded.analysis);
  (void)sink::timeline_csv(loaded.result);
  (void)sink::html_report(loaded.result, loaded.analysis, shootdown::build_timeline(loaded.result, loaded.analysis));
  (void)sink::result_to_string(loaded.result, loaded.analysis);
  return 0;
}
