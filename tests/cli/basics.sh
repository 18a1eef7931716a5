#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Help, version, subcommand dispatch and exit codes.
source "$TEST_LIB"

run_cmd "$SHOOTDOWN" --help
expect_rc 0 "--help exits 0"
expect_out "EXAMPLES" "--help shows examples"
expect_out "run" "--help lists run"

run_cmd "$SHOOTDOWN" --version
expect_rc 0 "--version exits 0"
expect_out "^shootdown [0-9]+\.[0-9]+\.[0-9]+" "--version prints the version"

run_cmd "$SHOOTDOWN" run --help
expect_rc 0 "run --help exits 0"
expect_out "EXAMPLES" "run --help shows examples"
expect_out "--release" "run --help documents --release"
expect_out "EXIT STATUS" "run --help documents exit codes"

run_cmd "$SHOOTDOWN"
expect_rc 2 "no subcommand is a usage error"
expect_err_lines 1 "one line on stderr without subcommand"

run_cmd "$SHOOTDOWN" frobnicate
expect_rc 2 "unknown subcommand is a usage error"
expect_err_lines 1 "one line on stderr for an unknown subcommand"

run_cmd "$SHOOTDOWN" run --no-such-option
expect_rc 2 "unknown option is a usage error"
expect_err "no-such-option" "the unknown option is named"
expect_err_lines 1 "one line on stderr for an unknown option"

finish
