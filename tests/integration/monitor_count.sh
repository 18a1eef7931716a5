#!/usr/bin/env bash
# monitor --trace count: kernel-side counting perf events (one per CPU and
# tlb_flush reason, filtered in the kernel, no ring buffer). Scrapes
# /metrics around N munmaps (munmap_loop, victim on CPU 1) and checks the
# counts against the workload and /proc/interrupts as the traced mode does
# (monitor_prometheus.sh); no per-process/cgroup families in this mode;
# tracefs mounts unchanged after exit.
source "$TEST_LIB"
set -e
need_root "perf tracepoint counters"
command -v curl >/dev/null || skip "curl not installed"
LOOP="$SHOOTDOWN_BUILD/tests/integration/munmap_loop"
[[ -x "$LOOP" ]] || skip "munmap_loop not built"
grep -Eq '^0-|^0,1' /sys/devices/system/cpu/online || skip "needs CPUs 0 and 1 online"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
N=5000
mounts_before=$(grep -c ' tracefs ' /proc/mounts || true)
taskset -c 0 "$SHOOTDOWN" monitor 1s --trace count --listen "127.0.0.1:$PORT" >/dev/null 2>"$TMP/err" &
MON=$!
trap 'kill -KILL $MON 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 1 100); do grep -q serving "$TMP/err" && break; kill -0 $MON 2>/dev/null || break; sleep 0.1; done
grep -q serving "$TMP/err" && ok "monitor --trace count serves /metrics" || { not_ok "monitor did not start: $(cat "$TMP/err")"; finish; }
val() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m1"
"$LOOP" $N munmap 0 1 >"$TMP/work"
curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m2"
munmaps=$(sed -n 's/.*munmaps=\([0-9]*\).*/\1/p' "$TMP/work")
si='shootdown_tlb_flush_total{cpu="0",reason="remote_send_ipi"}'
rs='shootdown_tlb_flush_total{cpu="1",reason="remote_shootdown"}'
tl='shootdown_tlb_interrupts_total{cpu="1"}'
dsi=$(($(val "$TMP/m2" "$si") - $(val "$TMP/m1" "$si")))
drs=$(($(val "$TMP/m2" "$rs") - $(val "$TMP/m1" "$rs")))
dtl=$(($(val "$TMP/m2" "$tl") - $(val "$TMP/m1" "$tl")))
tol=$((munmaps / 100 + 5))
echo "# munmaps $munmaps: remote_send_ipi on cpu0 +$dsi, remote_shootdown on cpu1 +$drs, TLB cpu1 +$dtl"
d=$((dsi - munmaps)); d=${d#-}
((d <= tol)) && ok "kernel-side count of remote_send_ipi matches the munmaps ($dsi vs $munmaps)" || not_ok "remote_send_ipi $dsi vs $munmaps"
d=$((drs - dtl)); d=${d#-}
((d <= tol)) && ok "kernel-side count of remote_shootdown matches /proc/interrupts ($drs vs $dtl)" || not_ok "remote_shootdown $drs vs TLB $dtl"
grep -q '^shootdown_process_initiated_total' "$TMP/m2" && not_ok "per-process family exported in count mode" || ok "no per-process/cgroup families in count mode"
if command -v promtool >/dev/null; then
  out=$(promtool check metrics <"$TMP/m2" 2>&1) && [[ -z "$out" ]] && ok "promtool check metrics: no findings" || not_ok "promtool: $out"
fi
kill -TERM $MON
wait $MON && ok "exit 0 on SIGTERM" || not_ok "exit status $? on SIGTERM"
[[ $(grep -c ' tracefs ' /proc/mounts || true) == "$mounts_before" ]] && ok "tracefs mounts unchanged" || not_ok "tracefs mounts changed"
finish
