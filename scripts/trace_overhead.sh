#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tracing overhead inside ONE run: the victim's baseline p50 per batch with
# the kernel tracer open vs closed, in alternating segments of the same
# experiment (same chunk B, same pages, same victim thread), via
# bench/trace_overhead. Method and measured figures: docs/kernel-evidence.md,
# section "Tracing overhead".
#
# Usage: scripts/trace_overhead.sh [PAIRS [SEGMENT]] [trace_overhead options...]
#   PAIRS    blocks of one traced and one untraced segment (default 30)
#   SEGMENT  length of each segment (default 400ms)
#   further options go to the tool (--guard, --seed, --chunk-size, ...; see --help)
#   BUILD=dir selects the build directory (default build).
# Prints the run's parameters (CPUs, kernel, load average), a line per pair
# (p50/p90/p99 in ns traced and untraced, their ratios, samples kept, trace
# events on the victim CPU), then
#   median p50 ratio traced/untraced = X [95% CI a, b] over N pairs: within target (< 1%)
# (or "above target" / "inconclusive") and the same for p90 and p99.
# Needs root and tracefs (exit 77 otherwise); exit 2 on bad input.
set -euo pipefail
BIN=${BUILD:-build}/bench/trace_overhead
[[ -x $BIN ]] || { echo "no binary at $BIN (build it: cmake --build ${BUILD:-build} --target trace_overhead)" >&2; exit 2; }
PAIRS=30
SEGMENT=400ms
if [[ $# -gt 0 && $1 != -* ]]; then PAIRS=$1; shift; fi
if [[ $# -gt 0 && $1 != -* ]]; then SEGMENT=$1; shift; fi
exec "$BIN" --pairs "$PAIRS" --segment "$SEGMENT" "$@"
