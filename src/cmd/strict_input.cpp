// SPDX-License-Identifier: Apache-2.0
#include "cmd/strict_input.hpp"

#include <fmt/core.h>
#include <regex>

#include "cmd/commands.hpp"

namespace shootdown::cmd {

namespace {

std::string first_line(std::string s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// The option of `app` named in a CLI11 message ("--repeat", "-p,--pid"), if any.
const CLI::Option* named_option(const CLI::App& app, const std::string& msg) {
  static const std::regex kName(R"((^|[\s:])(--?[A-Za-z][A-Za-z0-9-]*))");
  for (std::sregex_iterator it(msg.begin(), msg.end(), kName), end; it != end; ++it) {
    const std::string name = (*it)[2];
    for (const CLI::Option* o : app.get_options())
      if (o->check_name(name)) return o;
  }
  return nullptr;
}

}  // namespace

void make_strict(CLI::App& root) {
  for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* o : sub->get_options()) {
      if (o->get_name() == "--help" || o->get_name() == "-h,--help") continue;
      if (o->get_expected_max() > 1) continue;  // a list (--fail-if, command...)
      // run/compare options: a later occurrence overrides an earlier one, as
      // documented (scripts append options to a base command line).
      // (CLI11 gives bool flags TakeLast too: only run's and compare's count.)
      if ((sub->get_name() == "run" || sub->get_name() == "compare") &&
          o->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeLast)
        continue;
      o->multi_option_policy(CLI::MultiOptionPolicy::Throw);
    }
    make_strict(*sub);
  }
}

void check_values(const CLI::App& sub) {
  for (const CLI::Option* o : sub.get_options()) {
    if (o->count() == 0 || o->get_type_size() == 0) continue;  // not given, or a flag
    for (const std::string& v : o->results())
      if (v.empty()) {
        throw UsageError(
            fmt::format("{} '': empty value; accepted: {}", o->get_name(), first_line(o->get_description())));
      }
  }
}

std::string explain_parse_error(CLI::App& root, const CLI::Error& e) {
  std::string msg = e.what();
  for (auto& ch : msg)
    if (ch == '\n') ch = ' ';
  // CLI11 prints a range bound of "non-negative" as 1.797...e308 in full.
  static const std::regex kHuge(R"(\b\d{16,}\.\d{6}\b)");
  msg = std::regex_replace(msg, kHuge, "any");
  static const std::regex kZeros(R"((\d)\.0{6}\b)");
  msg = std::regex_replace(msg, kZeros, "$1");
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : root.get_subcommands([](CLI::App*) { return true; }))
    if (s->parsed()) sub = s;
  std::string where = "shootdown";
  std::string accepted;
  if (sub) {
    where += " " + sub->get_name();
    if (const CLI::Option* o = named_option(*sub, msg)) {
      const std::string d = first_line(o->get_description());
      if (!d.empty()) accepted = "; accepted: " + d;
      if (e.get_name() == "ArgumentMismatch" && o->count() > 1)
        msg = fmt::format("{} given {} times: give it once", o->get_name(), o->count());
    }
  }
  return fmt::format("{}: {}{}\n", where, msg, accepted);
}

}  // namespace shootdown::cmd
