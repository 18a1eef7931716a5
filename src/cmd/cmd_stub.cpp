// Subcommands whose issues have not landed yet: each prints "not implemented
// yet" and exits 1. When a subcommand lands, delete its stub here and add its
// cmd_<name>.cpp to src/cmd/CMakeLists.txt.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cmd/commands.hpp"

namespace shootdown::cmd {

namespace {
[[maybe_unused]] Command stub(CLI::App& root, const char* name,
                              const char* what) {  // unused once every subcommand landed
  CLI::App* app = root.add_subcommand(name, what);
  app->allow_extras();
  app->prefix_command();
  return {app, [name]() {
            std::fprintf(stderr, "shootdown %s: not implemented yet\n", name);
            return kExitError;
          }};
}
}  // namespace

}  // namespace shootdown::cmd
