#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Observer overhead: how much does watching a shootdown storm slow it down?
#
#   bench/observer_overhead.sh [ROUNDS [DURATION_MS]]     (root; BUILD=dir, default build)
#
# The storm (bench/shootdown_storm.cpp): one thread mmap/touch/munmap of 4
# pages in a loop pinned on CPU 0, a second thread spinning on CPU 1 (so
# every munmap sends it one flush IPI). Each run is one storm process: it
# settles 0.5 s, measures its rate alone for BASELINE_MS (default 1500), the
# observer is started, and after WARMUP_MS (default 3000: bpftrace compiles
# its program with LLVM first) the rate is measured again for DURATION_MS
# (default 1500). The figure of a run is the paired ratio of the two
# windows' fast 100 ms slices (90th percentile): a guest's rate drops for
# seconds whenever the host preempts a vCPU (the IPI waits for the victim),
# and the pairing and the fast slices keep that out as far as possible; the
# `none` arm shows what is left (its ratios should straddle 1). Arms, run
# interleaved in a fresh random order in each of ROUNDS rounds (default 7):
#   none          no observer
#   perf-stat     perf stat -a -e tlb:tlb_flush            (kernel-side count)
#   bpftrace      bpftrace: @[reason] = count() on tlb:tlb_flush (map count)
#   perf-record   perf record -a -g -e tlb:tlb_flush       (every flush + callchain to a file)
#   monitor       shootdown monitor 1s                     (defaults: BPF counts in kernel maps by CPU,
#                                                           reason, process and cgroup)
#   monitor-ring  shootdown monitor --trace ring 1s        (every tlb_flush through a perf ring)
#   monitor-count shootdown monitor --trace count 1s       (kernel-side counters, no ring)
#   blame         shootdown blame -p STORM_PID             (reason 4 + IPI sends with callchains)
# Output: one line per run, then per arm the median of the paired ratios with
# min..max, and (the older figure) the median ratio of its rate to the none
# run of the same round. An arm whose tool is missing is
# skipped with the reason (Debian: linux-perf, bpftrace; scripts/install-deps.sh --with-bench).
#
# Only meaningful on a quiet machine: the load average is printed before the
# runs, with a warning when it is above 0.3 (nothing else should run on the
# two CPUs). The storm is pinned; observers are not (their cost lands where
# the kernel puts them, as in production).
set -euo pipefail
ROUNDS=${1:-7}
DUR=${2:-1500}
WARMUP=${WARMUP_MS:-3000}
BASE=${BASELINE_MS:-1500}
BUILD=${BUILD:-build}
STORM=$BUILD/bench/shootdown_storm
SD=$BUILD/src/shootdown
[[ -x $STORM && -x $SD ]] || { echo "build first: cmake --build $BUILD --target shootdown shootdown_storm" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "needs root (tracepoints)" >&2; exit 77; }
TMP=$(mktemp -d /tmp/observer-overhead.XXXXXX)
OBS=
cleanup() { [[ -n "$OBS" ]] && kill -KILL "$OBS" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

arms=(none)
command -v perf >/dev/null && perf list tlb:tlb_flush 2>/dev/null | grep -q tlb_flush && arms+=(perf-stat perf-record) ||
  echo "# perf-stat, perf-record skipped: perf (linux-perf) missing or tlb:tlb_flush not listed"
command -v bpftrace >/dev/null && arms+=(bpftrace) || echo "# bpftrace skipped: bpftrace not installed"
arms+=(monitor monitor-ring monitor-count blame)
if [[ -n "${ARMS:-}" ]]; then  # ARMS="none blame perf-record": a subset (none is always kept)
  keep=(none); for a in $ARMS; do [[ $a != none && " ${arms[*]} " == *" $a "* ]] && keep+=("$a"); done; arms=("${keep[@]}")
fi

start_observer() {  # start_observer ARM STORM_PID: sets OBS
  local arm=$1 pid=$2
  case $arm in
    none) OBS= ;;
    perf-stat) perf stat -a -e tlb:tlb_flush -o "$TMP/perf-stat.txt" -- sleep 3600 >/dev/null 2>&1 & OBS=$! ;;
    perf-record) perf record -a -g -e tlb:tlb_flush -o "$TMP/perf.data" -- sleep 3600 >/dev/null 2>&1 & OBS=$! ;;
    bpftrace) bpftrace -e 'tracepoint:tlb:tlb_flush { @[args->reason] = count(); }' >/dev/null 2>&1 & OBS=$! ;;
    monitor) "$SD" monitor 1s >/dev/null 2>&1 & OBS=$! ;;
    monitor-ring) "$SD" monitor --trace ring 1s >/dev/null 2>&1 & OBS=$! ;;
    monitor-count) "$SD" monitor --trace count 1s >/dev/null 2>&1 & OBS=$! ;;
    blame) "$SD" blame -p "$pid" >/dev/null 2>&1 & OBS=$! ;;
  esac
}
stop_observer() {
  [[ -z "$OBS" ]] && return
  # perf/bpftrace run "sleep 3600" or forever: SIGINT ends them (and writes their output).
  pkill -INT -P "$OBS" sleep 2>/dev/null || true
  kill -INT "$OBS" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$OBS" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$OBS" 2>/dev/null || true
  wait "$OBS" 2>/dev/null || true
  OBS=
}

echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
load0=$(cut -d' ' -f1 /proc/loadavg)
echo "# load average before: $load0; rounds $ROUNDS, storm $DUR ms per run after $WARMUP ms warmup, arms: ${arms[*]}"
: >"$TMP/results"
for r in $(seq 1 "$ROUNDS"); do
  for arm in $(printf '%s\n' "${arms[@]}" | shuf); do
    "$STORM" --culprit 0 --victim 1 --baseline "$BASE" --warmup "$WARMUP" --duration "$DUR" >"$TMP/storm.out" &
    spid=$!
    sleep "$(awk -v b="$BASE" 'BEGIN { print (500 + b + 100) / 1000 }')"  # settle + baseline, alone
    start_observer "$arm" "$spid"
    wait "$spid"
    stop_observer
    rate=$(sed -n 's/.* rate=\([0-9]*\).*/\1/p' "$TMP/storm.out")
    paired=$(sed -n 's/.*p90_ratio=\([0-9.]*\).*/\1/p' "$TMP/storm.out")
    echo "round $r $arm rate=$rate/s paired=$paired ($(cut -d' ' -f7- "$TMP/storm.out"))"
    echo "$r $arm $rate $paired" >>"$TMP/results"
  done
done

python3 - "$TMP/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by, paired = {}, {}
for r, arm, rate, p in rows:
    by.setdefault(arm, {})[int(r)] = float(rate)
    paired.setdefault(arm, []).append(float(p))
none = by.get("none", {})
print("%-13s %13s %16s %12s %14s" % ("arm", "paired ratio", "paired min..max", "median rate", "rate/none"))
for arm in sorted(by, key=lambda a: -statistics.median(paired[a])):
    rr = by[arm]
    ratios = [rr[k] / none[k] for k in rr if k in none and none[k] > 0]
    print("%-13s %13.3f %16s %12.0f %14.3f" % (arm, statistics.median(paired[arm]),
          "%.3f..%.3f" % (min(paired[arm]), max(paired[arm])), statistics.median(rr.values()),
          statistics.median(ratios) if ratios else float("nan")))
PY
# The storm itself keeps both CPUs busy (load ~2 while it runs): only the
# load before the first run says whether something else was running.
awk -v a="$load0" 'BEGIN { if (a > 0.3) print "# WARNING: load average above 0.3 before the runs: something else was running" }'
