// SPDX-License-Identifier: Apache-2.0
// Sends a result to InfluxDB (run --influx, report --influx). Policy: the
// result is already on disk (or on stdout) when this runs, so a failing
// database costs a warning, never data or the exit code.
#pragma once

#include <optional>
#include <string>

#include "core/analysis.hpp"
#include "core/result.hpp"
#include "sink/influx.hpp"

namespace shootdown::cmd {

// --influx URL checked before a run: throws UsageError with one line.
influx::Url parse_influx_option(const std::string& text);

struct InfluxReport {
  bool ok = false;
  std::size_t points = 0;    // lines encoded
  std::size_t requests = 0;  // HTTP POSTs or UDP datagrams sent
  std::string error;         // one line when !ok
};

// HTTP: batches of whole lines (kHttpBatchBytes), each POSTed with bounded
// retries on refused connections, timeouts and 5xx (sys::http_post); the
// first failing batch stops the send. UDP: datagrams of whole lines under
// sink::influx::kUdpMaxPayload bytes.
inline constexpr std::size_t kHttpBatchBytes = 256 * 1024;
InfluxReport send_to_influx(const Result& r, const Analysis& a, const influx::Url& url);

// send_to_influx, then one stderr line: a note on success (unless quiet),
// a warning naming where the data still is on failure.
void send_to_influx_or_warn(const Result& r, const Analysis& a, const influx::Url& url, const std::string& saved_dir,
                            bool quiet);

}  // namespace shootdown::cmd
