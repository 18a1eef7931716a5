#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/trace_overhead (tracing overhead inside one run) runs briefly and
# prints its per-pair table and the summary line with a ratio and a CI. No
# timing is asserted: the measurement and its verdict are in
# docs/kernel-evidence.md ("Tracing overhead").
source "$TEST_LIB"
need_root "perf tracepoints"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
TOOL="$SHOOTDOWN_BUILD/bench/trace_overhead"
[[ -x $TOOL ]] || skip "no $TOOL (bench/ not built)"

run_cmd "$TOOL" --pairs 4 --segment 200ms --quiet
[[ $RC == 77 ]] && skip "trace_overhead: $ERR"
expect_rc 0 "trace_overhead --pairs 4 --segment 200ms"
expect_out '^ +1 (traced|untraced) +[0-9]+ +[0-9]+ +[0-9]+\.[0-9]{4} ' "a line per pair with p50 traced, untraced and the ratio"
expect_out '^median p50 ratio traced/untraced = [0-9]+\.[0-9]{4} \[95% CI [0-9]+\.[0-9]{4}, [0-9]+\.[0-9]{4}\] over [34] pairs: (within target|above target|inconclusive)' \
  "summary line with the median ratio and its CI"
expect_out '^\(information\) median p99 ratio' "p90/p99 for information"
echo "$OUT" | sed 's/^/#   /'

run_cmd "$TOOL" --pairs 4 --segment 10ms --guard 20ms
expect_rc 2 "guard not shorter than the segment is bad input"
expect_err "--guard 20ms: not shorter than --segment 10ms" "says which option and why"
finish
