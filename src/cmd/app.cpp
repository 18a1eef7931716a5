// SPDX-License-Identifier: Apache-2.0
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/core.h>
#include <string>
#include <string_view>

#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/strict_input.hpp"
#include "sys/dl.hpp"

namespace shootdown::cmd {

namespace {
// jemalloc's initial-exec TLS (2.6 KiB in Debian's 5.3.0) does not fit the
// static TLS surplus glibc reserves at start-up, so dlopen of it fails
// ("cannot allocate memory in static TLS block") unless the process started
// with a larger glibc.rtld.optional_static_tls. A command that names the
// jemalloc arm (--release jemalloc, --arms ...,jemalloc) re-executes itself
// once with that tunable; nothing else changes. (compare --preset
// mitigations includes the jemalloc arm.) Only run and compare: the
// commands of probe and blame would inherit the tunable.
constexpr std::size_t kJemallocStaticTls = 8192;

bool names_jemalloc(int argc, char** argv) {
  // Only run and compare have the arm; probe and blame must not hand the
  // tunable to the command they start.
  if (argc < 2 || (std::string_view(argv[1]) != "run" && std::string_view(argv[1]) != "compare")) return false;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    for (std::size_t start = 0; start <= a.size();) {
      std::size_t end = a.find_first_of(",=", start);
      if (end == std::string_view::npos) end = a.size();
      if (const auto t = a.substr(start, end - start); t == "jemalloc" || t == "mitigations") return true;
      start = end + 1;
    }
  }
  return false;
}
}  // namespace

int main_entry(int argc, char** argv) {
  if (names_jemalloc(argc, argv)) {
    if (const Status tls = sys::ensure_static_tls(kJemallocStaticTls, argv); !tls)
      std::fprintf(stderr, "shootdown: %s\n", tls.error().c_str());
  }
  CLI::App root{
      "shootdown: what does releasing memory in one thread cost the other threads?\n"
      "Measures TLB-shootdown stalls with kernel evidence.",
      "shootdown"};
  root.set_version_flag("--version", std::string("shootdown ") + SHOOTDOWN_VERSION + " (" + SHOOTDOWN_BUILD_TYPE + ")");
  root.require_subcommand(1);
  root.footer(
      "EXAMPLES:\n"
      "  shootdown run                               the article's experiment with defaults\n"
      "  shootdown run --release munmap --chunk-size 1GiB --out out/\n"
      "  shootdown compare --arms reuse,munmap --trials 20\n"
      "  shootdown doctor\n\n"
      "Run 'shootdown SUBCOMMAND --help' for the options of each subcommand.");

  std::vector<Command> cmds = {
      add_run(root),     add_trace(root),  add_report(root), add_compare(root),
      add_monitor(root), add_doctor(root), add_blame(root),  add_probe(root),
  };
  make_strict(root);

  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return root.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fputs(explain_parse_error(root, e).c_str(), stderr);
    return kExitUsage;
  }

  for (auto& c : cmds) {
    if (c.app && c.app->parsed()) {
      return run_command(c.app->get_name(), [&c] {
        check_values(*c.app);
        return c.run();
      });
    }
  }
  return kExitUsage;
}

}  // namespace shootdown::cmd
