#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ground truth for monitor's time accounting: `monitor --json 50ms` (BPF
# engine) runs beside `run --release munmap`; over the intervals that lie
# inside run's measured span, monitor's shootdown IPI handler time on the
# victim CPU (call-function interrupt entry -> exit, the same span run
# reports as ipi_handler_ns) agrees with run's own trace within 10 %, its
# count of those interrupts equals the count in run's trace over the same
# window (monitor's intervals inside run's span: an IPI from elsewhere in
# the span's first or last 50 ms is in run's total but in no such interval),
# and the culprit's wait for its remote flushes is charged to run's process. The stall model: calibrated
# on a first run (alone), monitor's estimated stall on the victim CPU over
# each of three later runs against that run's measured tlb-shootdown
# stall: the median error within 20 % (one run's delivery cost on this
# guest can differ from the next one's by a third: docs/monitor.md). Needs
# IPIs: judged by the runs' own evidence, not a moment of doctor's.
source "$TEST_LIB"
set -e
need_root "BPF and perf tracepoints"
command -v jq >/dev/null || skip "jq not installed"
grep -Eq '^0-|^0,1' /sys/devices/system/cpu/online || skip "needs CPUs 0 and 1 online"
# Shootdown IPIs in run's own trace on CPU $2 with entry in ($3, $4] (ns,
# CLOCK_MONOTONIC), by run's attribution rule: call-function interrupts that
# traced a remote flush (tlb_flush reason 1), or ran flush_tlb_func without
# tracing reason 5 (another mm's flush). Prints "count handler_ns" and, as
# evidence, how many ran flush_tlb_func with no flush traced and how many
# were reason 5 only.
window_ipis() {
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cpu, lo, hi = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t, base = r["trace"]["events_table"], r["measure"]["start_ns"]
flush = {int(a, 16) for a, s in r["trace"]["symbols"].items() if s.startswith("flush_tlb_func+0x0")}
rows = sorted((base + m, t["type_codes"][k], a, b & (2**64 - 1))
              for m, c, k, a, b in zip(t["mono_ns"], t["cpu"], t["type"], t["a"], t["b"]) if c == cpu)
count = handler = untraced = wrong = 0
start = None
for m, name, a, b in rows:
    if name in ("call_function_entry", "call_function_single_entry"):
        start, func, reasons = m, False, set()
    elif start is not None and name == "csd_function_entry" and b in flush:
        func = True
    elif start is not None and name == "tlb_flush":
        reasons.add(a)
    elif start is not None and name in ("call_function_exit", "call_function_single_exit"):
        if lo < start <= hi:
            if 1 in reasons or (func and 5 not in reasons):
                count, handler = count + 1, handler + m - start
                untraced += not reasons
            elif 5 in reasons:
                wrong += 1
        start = None
print(count, handler, untraced, wrong)
PY
}
MON=
trap '[[ -n $MON ]] && kill -KILL $MON 2>/dev/null; rm -rf "$TMP"' EXIT
ARGS=(--release munmap --culprit-cpu 0 --victim-cpus 1 --chunk-size 4GiB --trigger after=1s --after 300ms)
run_cmd "$SHOOTDOWN" run "${ARGS[@]}" --out "$TMP/cal"
expect_rc 0 "calibration run (alone)"
((RC == 0)) || finish
cal_ipis=$(jq '.attribution.victims[0].shootdown_ipis' "$TMP/cal/result.json")
((cal_ipis > 0)) || skip "the calibration run's shootdowns sent no IPI to cpu1: PV flush day"
"$SHOOTDOWN" monitor --json 50ms --calibrate-from "$TMP/cal" >"$TMP/mon.jsonl" 2>"$TMP/mon.err" &
MON=$!
for _ in $(seq 1 100); do [[ -s "$TMP/mon.jsonl" ]] && break; kill -0 $MON 2>/dev/null || break; sleep 0.1; done
trace=$(head -1 "$TMP/mon.jsonl" | jq -r .trace 2>/dev/null || true)
[[ $trace == bpf* ]] || skip "monitor has no BPF engine here: ${trace:-$(cat "$TMP/mon.err")}"
ok "monitor runs with the BPF engine: $trace"
for n in 1 2 3; do
  run_cmd "$SHOOTDOWN" run "${ARGS[@]}" --out "$TMP/run$n"
  expect_rc 0 "run $n --release munmap beside monitor"
done
sleep 0.2
kill -TERM $MON
wait $MON && ok "monitor exits 0 on SIGTERM" || not_ok "monitor exit status $?"
MON=
head -1 "$TMP/mon.jsonl" | jq -e '.stall_model.ipis > 0' >/dev/null &&
  ok "monitor reports its stall model and where it came from: $(grep -m1 estimating "$TMP/mon.err" | cut -c1-150)" ||
  not_ok "no stall_model in monitor's JSON: $(head -1 "$TMP/mon.jsonl" | jq -c .stall_model)"
link=$(head -1 "$TMP/mon.jsonl" | jq -r .link)
wait_how=$(head -1 "$TMP/mon.jsonl" | jq -r .wait)
errors=()
for n in 1 2 3; do
  R="$TMP/run$n/result.json"
  [[ -f $R ]] || continue
  read -r S E PID < <(jq -r '"\(.measure.start_ns) \(.measure.end_ns) \(.process.pid)"' "$R")
  read -r RN RT RS < <(jq -r '.attribution.victims[0] | "\(.shootdown_ipis) \(.ipi_handler_ns.total) \(.stall_ns["tlb-shootdown"])"' "$R")
  read -r REQ DEL < <(jq -r '.attribution.victims[0] | "\(.shootdowns.flush_requests // 0) \(.shootdowns.flush_requests_delivered // 0)"' "$R")
  if ((RN == 0)); then
    skip_check "run $n: its shootdowns sent no IPI to cpu1 (flush requests $REQ, delivered $DEL): PV flush"
    continue
  fi
  # Intervals wholly inside [S, E] (an interval starts at the line before
  # it): the release sits 1 s after S and 300 ms before E. W0..W1 is their
  # union, the window run's trace is counted over for the comparison.
  read -r W0 W1 MN MT MW MF ME MI < <(jq -rs --argjson s "$S" --argjson e "$E" --argjson pid "$PID" '
    [ range(1; length) as $i | select(.[$i - 1].mono_ns >= $s and .[$i].mono_ns <= $e)
      | .[$i] + {start_ns: .[$i - 1].mono_ns} ] as $in
    | [ ($in | map(.start_ns) | min // 0), ($in | map(.mono_ns) | max // 0),
        ($in | map(.cpus[] | select(.cpu == 1) | .handler_irqs) | add // 0),
        ($in | map(.cpus[] | select(.cpu == 1) | .handler_ns) | add // 0),
        ($in | map(.top_initiators[]? | select(.pid == $pid) | .wait_ns // 0) | add // 0),
        ($in | map(.top_initiators[]? | select(.pid == $pid) | .flushes) | add // 0),
        ($in | map(.cpus[] | select(.cpu == 1) | .est_stall_ns) | add // 0),
        ($in | map(.top_initiators[]? | select(.pid == $pid) | .inflicted_ns // 0) | add // 0) ] | @tsv' "$TMP/mon.jsonl")
  read -r WN WT WU WR < <(window_ipis "$R" 1 "$W0" "$W1")
  echo "# run $n: $RN shootdown IPIs on cpu1, handler total $RT ns, stall $RS ns; in monitor's window ($(( (W0 - S) / 1000000 )) ms to $(( (W1 - S) / 1000000 )) ms of the span) run's trace: $WN interrupts ($WU of them ran flush_tlb_func with no flush traced; besides, $WR reason 5 only), $WT ns; monitor: $MN interrupts, $MT ns, estimated stall $ME ns; run pid $PID waited $MW ns for $MF flushes, inflicted $MI ns"
  [[ $MN == "$WN" ]] && ok "run $n: monitor counts the $WN shootdown IPIs run's trace saw on cpu1 in the same window (span total $RN)" ||
    not_ok "run $n: monitor counted $MN shootdown IPIs on cpu1, run's trace $WN in the same window (span total $RN)"
  # Two tracers on one interrupt each time the other's hook: monitor's
  # bracket holds run's perf hook at one end, run's holds the BPF program at
  # the other (docs/monitor.md, "Time": +0.4 to +3.1 us per interrupt in this
  # VM, monitor started first). So: within 10 %, or within 4 us per interrupt.
  # Both over the same window (run's whole-span total is $RT).
  pct=$(awk -v m="$MT" -v r="$WT" 'BEGIN { printf "%+.1f", (r > 0 ? 100 * (m - r) / r : 999) }')
  awk -v m="$MT" -v r="$WT" -v n="$WN" 'BEGIN { d = m - r; if (d < 0) d = -d; exit !(r > 0 && (d <= 0.10 * r || d <= 4000 * n)) }' &&
    ok "run $n: handler time on cpu1: monitor $MT ns vs run $WT ns ($pct %, $(( (MT - WT) / (WN > 0 ? WN : 1) )) ns per interrupt)" ||
    not_ok "run $n: handler time on cpu1: monitor $MT ns vs run $WT ns ($pct %: beyond 10 % and 4 us per interrupt)"
  errors+=("$(awk -v m="$ME" -v r="$RS" 'BEGIN { printf "%.1f", (r > 0 ? 100 * (m - r) / r : 999) }')")
  # The csd link: the time the run's flushes ran flush_tlb_func on cpu1,
  # inside the handlers monitor timed there.
  if [[ $link == csd ]]; then
    ((MI > 0 && MI <= MT)) && ok "run $n: csd link: its flushes ran $MI ns of flush_tlb_func on their target, within its $MT ns of handlers" ||
      not_ok "run $n: csd link: inflicted $MI ns vs handlers $MT ns on cpu1"
  fi
  if [[ $wait_how == measured ]]; then
    # Charged at least the flushes run's trace saw it request toward cpu1.
    ((MF >= REQ && REQ > 0 && MW > 0)) && ok "run $n: the run's process is charged $MF flushes (its trace: $REQ requests toward cpu1) and $MW ns of wait" ||
      not_ok "run $n: run's process: $MF flushes, $MW ns wait (expected >= $REQ flushes and some wait)"
  fi
done
[[ $link == csd ]] || skip_check "no csd link here: $link"
[[ $wait_how == measured ]] || skip_check "initiators' wait not measured here: $wait_how"
if ((${#errors[@]})); then
  med=$(printf '%s\n' "${errors[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  awk -v m="$med" 'BEGIN { exit !(m >= -20 && m <= 20) }' &&
    ok "estimated vs measured tlb-shootdown stall on cpu1: median error $med % (runs: ${errors[*]} %), within 20 %" ||
    not_ok "estimated vs measured tlb-shootdown stall: median error $med % (runs: ${errors[*]} %), beyond 20 %"
fi
finish
