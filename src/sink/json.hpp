// SPDX-License-Identifier: Apache-2.0
// result.json: the full result (schema: docs/formats.md, docs/result.schema.json;
// read back by sink/json_read.hpp: a field added here belongs there too). Serializers
// only build strings; OutputDir does the I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/analysis_types.hpp"
#include "core/result.hpp"

namespace shootdown::sink {

// Raw sample windows kept around each release: [before - pad, after + settle + pad].
inline constexpr std::int64_t kRawWindowPadNs = 2000000;     // 2 ms
inline constexpr std::size_t kRawWindowMaxSamples = 200000;  // per victim and release

nlohmann::json summary_json(const Summary& s);
nlohmann::json result_json(const Result& r, const Analysis& a);
std::string result_to_string(const Result& r, const Analysis& a);

}  // namespace shootdown::sink
