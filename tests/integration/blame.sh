#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shootdown blame against blame_fixture's known call sites:
#  - -- CMD: >= N reason-4 flushes at munmap_often (syscall munmap), >= M at
#    madvise_often (madvise), reuse_only never appears, file:line from DWARF,
#    flush IPIs delivered to the helper CPU, the syscall stub's hidden caller
#    recovered from the user stack copy;
#  - --folded: collapsed stacks with user and kernel frames;
#  - -p PID --duration on a running fixture;
#  - bad input / not permitted / SIGINT: one line, exit 2 / 1 / 130.
source "$TEST_LIB"
need_root "perf tracepoint sampling on every CPU"
FIX="$SHOOTDOWN_BUILD/tests/integration/blame_fixture"
[[ -x "$FIX" ]] || skip "blame_fixture not built ($FIX)"
mapfile -t CPUS < <(awk -F, '{for(i=1;i<=NF;i++){n=split($i,r,"-"); if(n==1)print r[1]; else for(c=r[1];c<=r[2];c++)print c}}' /sys/devices/system/cpu/online)
((${#CPUS[@]} >= 2)) || skip "needs 2 online CPUs"
W=${CPUS[0]}
H=${CPUS[1]}
N=500
M=300

# --- -- CMD, JSON -------------------------------------------------------------
run_cmd "$SHOOTDOWN" blame --json -- "$FIX" "$N" "$M" --worker-cpu "$W" --helper-cpu "$H" --fifo
expect_rc 0 "blame --json -- blame_fixture $N $M"
JSON=$(sed -n '/^{/,$p' <<<"$OUT")
grep -v '^[ {}"]' <<<"$OUT" | sed 's/^/# /'
site() {  # site FIELD FRAME0 -> value of FIELD for the site whose first frame is FRAME0 (sum over sites)
  jq -r --arg f "$2" "[.sites[] | select(.frames[0] == \$f) | .$1] | add // 0" <<<"$JSON"
}
MU=$(site flushes munmap_often)
MA=$(site flushes madvise_often)
MU_IPI=$(site ipis munmap_often)
MU_SYS=$(jq -r '[.sites[] | select(.frames[0] == "munmap_often") | .syscall] | unique | join(",")' <<<"$JSON")
MA_SYS=$(jq -r '[.sites[] | select(.frames[0] == "madvise_often") | .syscall] | unique | join(",")' <<<"$JSON")
MU_LOC=$(jq -r '[.sites[] | select(.frames[0] == "munmap_often") | .location] | first // ""' <<<"$JSON")
MU_PAGES=$(site pages munmap_often)
REUSE=$(jq -r '[.sites[] | .frames[] | select(test("reuse_only"))] | length' <<<"$JSON")
TOTAL=$(jq -r .flushes <<<"$JSON")
RECV=$(jq -r .received <<<"$JSON")
echo "# flushes total=$TOTAL munmap_often=$MU ($MU_SYS, $MU_PAGES pages, $MU_IPI IPIs, at $MU_LOC) madvise_often=$MA ($MA_SYS) reuse_only frames=$REUSE received=$RECV"
if ((MU >= N)); then ok "munmap_often: $MU reason-4 flushes >= $N munmaps"; else not_ok "munmap_often: $MU reason-4 flushes < $N munmaps"; fi
if ((MA >= M)); then ok "madvise_often: $MA reason-4 flushes >= $M madvises"; else not_ok "madvise_often: $MA reason-4 flushes < $M madvises"; fi
if [[ "$MU_SYS" == munmap ]]; then ok "munmap_often: syscall munmap (from __x64_sys_munmap)"; else not_ok "munmap_often: syscall '$MU_SYS'"; fi
if [[ "$MA_SYS" == madvise ]]; then ok "madvise_often: syscall madvise"; else not_ok "madvise_often: syscall '$MA_SYS'"; fi
if [[ "$REUSE" == 0 ]]; then ok "reuse_only never appears"; else not_ok "reuse_only appears in $REUSE frames"; fi
if [[ "$MU_LOC" == blame_fixture.cpp:* ]]; then ok "munmap_often call site at $MU_LOC (DWARF)"; else not_ok "munmap_often location '$MU_LOC'"; fi
if ((MU_PAGES == 16 * MU)); then ok "munmap_often pages = 16 x flushes ($MU_PAGES)"; else not_ok "munmap_often pages $MU_PAGES != 16 x $MU"; fi
# SCHED_FIFO helper: its CPU runs our mm at every munmap, so each flush is
# queued to it (a preempted vCPU is skipped by KVM's PV flush: 10% slack).
if ! tlb_ipis_reach; then
  skip_check "munmap_often: flush IPIs to the helper CPU: $NO_TLB_IPIS"
  skip_check "received by the target's helper: $NO_TLB_IPIS"
else
if ((MU_IPI * 10 >= MU * 9)); then ok "munmap_often: $MU_IPI flush IPIs to the helper CPU (>= 90% of $MU)"; else not_ok "munmap_often: only $MU_IPI flush IPIs for $MU flushes"; fi
if ((RECV * 10 >= (N + M) * 9)); then ok "received by the target's helper: $RECV reason-1 flushes (>= 90% of $((N + M)))"; else not_ok "received $RECV < 90% of $((N + M))"; fi
fi
# Without the stack copy the frame-pointer walk goes from the libc stub
# straight to munmap_often's caller: munmap_often only exists when recovered.
if jq -e '.sites[0].frames | length >= 2' <<<"$JSON" >/dev/null; then ok "call sites have callers"; else not_ok "call sites have no callers"; fi

# --- console and --folded -----------------------------------------------------
run_cmd "$SHOOTDOWN" blame -- "$FIX" 100 50 --worker-cpu "$W" --helper-cpu "$H" --fifo
expect_rc 0 "blame (console)"
expect_out '^ 1\. (munmap_often|madvise_often) ← ' "console: top call site is a fixture function"
expect_out 'advice: munmap of touched memory' "console: munmap advice"
expect_out 'shootdowns initiated +[0-9]+' "console: totals"
run_cmd "$SHOOTDOWN" blame --folded -- "$FIX" 100 50 --worker-cpu "$W" --helper-cpu "$H" --fifo
expect_rc 0 "blame --folded"
expect_out '(^|;)munmap_often;[^ ]*__x64_sys_munmap_\[k\][^ ]* [0-9]+$' "folded: munmap_often;...;__x64_sys_munmap_[k];... count"
FOLD_MU=$(grep -E '(^|;)munmap_often;' <<<"$OUT" | awk '{s+=$NF} END {print s+0}')
if ((FOLD_MU >= 100)); then ok "folded: munmap_often stacks count $FOLD_MU >= 100"; else not_ok "folded: munmap_often count $FOLD_MU < 100"; fi

# --- -p PID -------------------------------------------------------------------
"$FIX" 4000 0 --worker-cpu "$W" --helper-cpu "$H" --gap-us 1000 >"$TMP/fix.out" 2>&1 &
FPID=$!
sleep 0.3
run_cmd "$SHOOTDOWN" blame -p "$FPID" --duration 1s --json
expect_rc 0 "blame -p $FPID --duration 1s"
PMU=$(jq -r '[.sites[] | select(.frames[0] == "munmap_often") | .flushes] | add // 0' <<<"$OUT")
if ((PMU >= 20)); then ok "-p: munmap_often $PMU flushes in 1 s (one per >= 1 ms gap, fewer when CPU0 is busy)"; else not_ok "-p: munmap_often only $PMU flushes in 1 s"; fi
# SIGINT: the report is still printed, exit 130
"$SHOOTDOWN" blame -p "$FPID" >"$TMP/int.out" 2>"$TMP/int.err" &
BPID=$!
sleep 1
kill -INT "$BPID"
set +e
wait "$BPID"
RC=$?
set -e
OUT=$(cat "$TMP/int.out") ERR=$(cat "$TMP/int.err")
expect_rc 130 "blame -p, SIGINT"
expect_out 'munmap_often' "SIGINT: report printed"
kill "$FPID" 2>/dev/null || true
wait "$FPID" 2>/dev/null || true

# --- -o FILE: the command keeps stdout -----------------------------------------
run_cmd "$SHOOTDOWN" blame -o "$TMP/blame.txt" -- sh -c 'echo from-the-command'
expect_rc 0 "blame -o FILE -- CMD"
if [[ "$OUT" == "from-the-command" ]]; then ok "blame -o: stdout is the command's alone"; else not_ok "blame -o: stdout: $OUT"; fi
if grep -q '^shootdown blame: pid' "$TMP/blame.txt"; then ok "blame -o: FILE holds the report"; else not_ok "blame -o FILE: $(head -3 "$TMP/blame.txt")"; fi

# --- bad input, not permitted -------------------------------------------------
run_cmd "$SHOOTDOWN" blame -p 999999999
expect_rc 2 "blame -p <missing PID>"
expect_err_lines 1 "missing PID: one line"
expect_err 'no such process' "missing PID: says why"
run_cmd "$SHOOTDOWN" blame
expect_rc 2 "blame without target"
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$SHOOTDOWN" 2>/dev/null; then
  run_cmd setpriv --reuid=65534 --regid=65534 --clear-groups "$SHOOTDOWN" blame -- true
  if [[ $(cat /proc/sys/kernel/perf_event_paranoid) != -1 ]]; then
    expect_rc 1 "blame as nobody: not permitted"
    expect_err_lines 1 "not permitted: one line"
    expect_err 'not permitted' "not permitted: says why"
  fi
fi
finish
