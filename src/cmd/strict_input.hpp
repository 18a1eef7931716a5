// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rules every subcommand's options follow, applied once to the whole CLI11
// tree (app.cpp) so a new option gets them without a line of its own:
//   - an option that takes one value may be given once (a repeat is exit 2,
//     not "the last one wins"); flags likewise
//   - a value may not be empty (--out "" is exit 2, not "the current directory")
//   - CLI11's own parse errors name the option, the value and what is
//     accepted (the option's help text), on one line
#include <CLI/CLI.hpp>
#include <string>

namespace shootdown::cmd {

void make_strict(CLI::App& root);

// Throws UsageError for the first empty value of an option given on the
// command line of `sub` (the parsed subcommand).
void check_values(const CLI::App& sub);

// One line (with the trailing newline) for a CLI11 parse error.
std::string explain_parse_error(CLI::App& root, const CLI::Error& e);

}  // namespace shootdown::cmd
