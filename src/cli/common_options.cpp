// SPDX-License-Identifier: Apache-2.0
#include "cli/common_options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace shootdown::cli {

void add_json_flag(CLI::App& app, bool& json, std::string_view what, std::string_view instead) {
  app.add_flag("--json", json, fmt::format("Print {} as JSON on stdout instead of {}", what, instead));
}

void add_out_dir(CLI::App& app, std::string& out, std::string_view files) {
  app.add_option("--out", out, fmt::format("Write {} into this directory", files));
}

void add_duration(CLI::App& app, std::string& duration, std::string_view until) {
  app.add_option("--duration", duration, fmt::format("Stop after this long (e.g. 10s); default: {}", until));
}

void add_output_file(CLI::App& app, std::string& output, std::string_view what) {
  app.add_option("-o,--output", output,
                 fmt::format("Write {} to FILE (atomically, at the end) instead of stdout: the command keeps its "
                             "stdout and stderr",
                             what));
}

void add_command(CLI::App& app, std::vector<std::string>& command, std::string_view verb) {
  app.add_option("command", command, fmt::format("Command to {} (after --)", verb));
}

}  // namespace shootdown::cli
