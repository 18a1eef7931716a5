// SPDX-License-Identifier: Apache-2.0
// The options several subcommands share, worded once: where the result
// goes (--json, --out DIR, -o FILE), how long to wait (--duration) and the
// command to start (after --). Each subcommand says only what is its own;
// each returns the option, for what is particular to one subcommand.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace shootdown::cli {

// --json: "Print WHAT as JSON on stdout instead of INSTEAD"
CLI::Option* add_json_flag(CLI::App& app, bool& json, std::string_view what, std::string_view instead);

// --out DIR: "Write FILES into this directory"
CLI::Option* add_out_dir(CLI::App& app, std::string& out, std::string_view files);

// --duration: "Stop after this long (e.g. 10s); default: UNTIL"
CLI::Option* add_duration(CLI::App& app, std::string& duration, std::string_view until);

// -o,--output FILE: WHAT goes to FILE, written atomically at the end,
// instead of stdout, so the command started keeps its stdout and stderr.
CLI::Option* add_output_file(CLI::App& app, std::string& output, std::string_view what);

// The command to start, every word after --: "Command to VERB (after --)"
CLI::Option* add_command(CLI::App& app, std::vector<std::string>& command, std::string_view verb);

}  // namespace shootdown::cli
