// SPDX-License-Identifier: Apache-2.0
// The options several subcommands share, worded once: where the result
// goes (--json, --out DIR, -o FILE), how long to wait (--duration) and the
// command to start (after --). Each subcommand says only what is its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace shootdown::cli {

// --json: "Print WHAT as JSON on stdout instead of INSTEAD"
void add_json_flag(CLI::App& app, bool& json, std::string_view what, std::string_view instead);

// --out DIR: "Write FILES into this directory"
void add_out_dir(CLI::App& app, std::string& out, std::string_view files);

// --duration: "Stop after this long (e.g. 10s); default: UNTIL"
void add_duration(CLI::App& app, std::string& duration, std::string_view until);

// -o,--output FILE: WHAT goes to FILE, written atomically at the end,
// instead of stdout, so the command started keeps its stdout and stderr.
void add_output_file(CLI::App& app, std::string& output, std::string_view what);

// The command to start, every word after --: "Command to VERB (after --)"
void add_command(CLI::App& app, std::vector<std::string>& command, std::string_view verb);

}  // namespace shootdown::cli
