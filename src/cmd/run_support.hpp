// SPDX-License-Identifier: Apache-2.0
// Shared by run, compare and report: progress hooks, the kernel-trace hook,
// and writing every output of a result (console/JSON on stdout, files).
#pragma once

#include <cstdio>

#include <optional>
#include <string>

#include "cli/run_options.hpp"
#include "core/analysis.hpp"
#include "core/result.hpp"
#include "experiment/experiment.hpp"
#include "sink/atomic_writer.hpp"
#include "sink/influx.hpp"

namespace shootdown::cmd {

exp::Hooks make_run_hooks(bool progress, bool quiet);
// Files first (nothing measured is lost if stdout or a network sink fails),
// then stdout: the console table or, with json, the result JSON; then, with
// influx, the database (a failure there is a warning on stderr, not an error).
void finish_run_outputs(const Result& r, const Analysis& a, sink::OutputDir* out, bool json,
                        const std::optional<influx::Url>& influx = std::nullopt, bool quiet = false,
                        bool verbose = false);
// Writes every file of a result into out (result.json, timeline.csv,
// victim.hlog, victim.hgrm, ...); `report` re-renders through it too, with
// with_result_json false: result.json is its source and keeps what a loaded
// Result cannot hold (kernel events, so attribution and callchains).
void write_result_files(const Result& r, const Analysis& a, sink::OutputDir& out, bool with_result_json = true);
// The same into out when given; "" on success, else why (the caller reports it
// after printing what was measured: nothing is lost because a sink failed).
std::string write_result_files_or_error(const Result& r, const Analysis& a, sink::OutputDir* out);
// file:// URL of dir/report.html (absolute, percent-encoded), for --open.
std::string report_file_url(const std::string& dir);

// -o FILE (blame, probe): the report goes to FILE, so a command given after --
// keeps stdout and stderr to itself (like perf trace -o, strace -o).
// check_output_file throws UsageError naming `option` when FILE cannot be
// written (a directory, a missing or read-only parent); emit_report writes
// text atomically to FILE, or to `fallback` when FILE is empty.
void check_output_file(const std::string& option, const std::string& path);
void emit_report(const std::string& text, const std::string& path, std::FILE* fallback);

}  // namespace shootdown::cmd
