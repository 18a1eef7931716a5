// SPDX-License-Identifier: Apache-2.0
#include "cli/common_options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace shootdown::cli {

CLI::Option* add_json_flag(CLI::App& app, bool& json, std::string_view what, std::string_view instead) {
  return app.add_flag("--json", json, fmt::format("Print {} as JSON on stdout instead of {}", what, instead));
}

CLI::Option* add_out_dir(CLI::App& app, std::string& out, std::string_view files) {
  return app.add_option("--out", out, fmt::format("Write {} into this directory", files));
}

CLI::Option* add_duration(CLI::App& app, std::string& duration, std::string_view until) {
  return app.add_option("--duration", duration, fmt::format("Stop after this long (e.g. 10s); default: {}", until));
}

CLI::Option* add_output_file(CLI::App& app, std::string& output, std::string_view what) {
  return app.add_option(
      "-o,--output", output,
      fmt::format("Write {} to FILE (atomically, at the end) instead of stdout: the command keeps its "
                  "stdout and stderr",
                  what));
}

CLI::Option* add_command(CLI::App& app, std::vector<std::string>& command, std::string_view verb) {
  return app.add_option("command", command, fmt::format("Command to {} (after --)", verb));
}

}  // namespace shootdown::cli
