// SPDX-License-Identifier: Apache-2.0
// Reads result.json (docs/formats.md) back into a Result and its Analysis,
// for `shootdown report` (and `compare` later). The inverse of
// sink::result_json: writing what this reads gives the same bytes.
//
// What comes back: every field result.json has; each interval's histogram
// from its V2 encoding; victims' samples only where result.json kept them
// (the raw windows around each release: VictimSamples::partial()); the
// analysis as saved (it cannot be recomputed from partial samples), its
// attribution also as Result::saved_attribution (labels per original
// sample; Analysis::attribution has them mapped onto the kept samples); the
// kernel trace's counts, and its events as far as trace.events_table kept
// them (Result::events_truncated), with their symbols.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "core/analysis_types.hpp"
#include "core/result.hpp"

namespace shootdown::sink {

// One line naming the field and what is wrong with it, e.g.
// "intervals[3].histogram: bad base64 at offset 12".
struct JsonReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct LoadedResult {
  Result result;
  Analysis analysis;
};

// Throws JsonReadError: not JSON, not a shootdown result, schema_version
// missing or not supported (only kResultSchemaVersion is), a field missing
// or of the wrong type, a histogram that does not decode.
LoadedResult result_from_json(std::string_view text);

}  // namespace shootdown::sink
