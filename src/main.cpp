// SPDX-License-Identifier: Apache-2.0
// Dispatch only: parse → run the selected subcommand → exit code.
#include "cmd/commands.hpp"

int main(int argc, char** argv) {
  return shootdown::cmd::main_entry(argc, argv);
}
