#!/usr/bin/env bash
# Observer overhead: how much does watching a shootdown storm slow it down?
#
#   bench/observer_overhead.sh [ROUNDS [DURATION_MS]]     (root; BUILD=dir, default build)
#
# The storm (bench/shootdown_storm.cpp): one thread mmap/touch/munmap of 4
# pages in a loop pinned on CPU 0, a second thread spinning on CPU 1 (so
# every munmap sends it one flush IPI). Its rate (iterations/s) is measured
# for DURATION_MS (default 3000) after a warmup (WARMUP_MS, default 3000)
# during which the observer starts and attaches (bpftrace compiles its
# program with LLVM first: give it the time on a slow machine). Arms, run interleaved in a fresh random order in each of
# ROUNDS rounds (default 5):
#   none          no observer
#   perf-stat     perf stat -a -e tlb:tlb_flush            (kernel-side count)
#   bpftrace      bpftrace: @[reason] = count() on tlb:tlb_flush (map count)
#   perf-record   perf record -a -g -e tlb:tlb_flush       (every flush + callchain to a file)
#   monitor       shootdown monitor 1s                     (defaults: BPF counts in kernel maps by CPU,
#                                                           reason, process and cgroup)
#   monitor-ring  shootdown monitor --trace ring 1s        (every tlb_flush through a perf ring)
#   monitor-count shootdown monitor --trace count 1s       (kernel-side counters, no ring)
#   blame         shootdown blame -p STORM_PID             (reason 4 + IPI sends with callchains)
# Output: one line per run, then per arm the median rate, the median of the
# ratio arm/none and min..max over rounds. An arm whose tool is missing is
# skipped with the reason (Debian: linux-perf, bpftrace; scripts/install-deps.sh --with-bench).
#
# Only meaningful on a quiet machine: the load average is printed before and
# after, and a warning when it is above 0.3 (nothing else should run on the
# two CPUs). The storm is pinned; observers are not (their cost lands where
# the kernel puts them, as in production).
set -euo pipefail
ROUNDS=${1:-5}
DUR=${2:-3000}
WARMUP=${WARMUP_MS:-3000}
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
    "$STORM" --culprit 0 --victim 1 --warmup "$WARMUP" --duration "$DUR" >"$TMP/storm.out" &
    spid=$!
    start_observer "$arm" "$spid"
    wait "$spid"
    stop_observer
    rate=$(sed -n 's/.*rate=\([0-9]*\).*/\1/p' "$TMP/storm.out")
    echo "round $r $arm rate=$rate/s"
    echo "$r $arm $rate" >>"$TMP/results"
  done
done
load1=$(cut -d' ' -f1 /proc/loadavg)
echo "# load average after: $load1"
python3 - "$TMP/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, arm, rate in rows:
    by.setdefault(arm, {})[int(r)] = float(rate)
none = by.get("none", {})
print("%-12s %12s %14s %18s" % ("arm", "median rate", "median ratio", "ratio min..max"))
for arm, rr in by.items():
    ratios = [rr[k] / none[k] for k in rr if k in none and none[k] > 0]
    print("%-12s %12.0f %14.3f %18s" % (arm, statistics.median(rr.values()), statistics.median(ratios) if ratios else float("nan"),
          "%.3f..%.3f" % (min(ratios), max(ratios)) if ratios else "-"))
PY
awk -v a="$load0" -v b="$load1" 'BEGIN { if (a > 0.3 || b > 0.3) print "# WARNING: load average above 0.3: the machine was not quiet; do not quote these ratios" }'
