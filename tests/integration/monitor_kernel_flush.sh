#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# monitor's kernel-range TLB flushes (flush_tlb_kernel_range, flush_tlb_all:
# on_each_cpu IPIs with no tlb_flush tracepoint) against perf's record of
# the same tracepoints over the same span. Trigger: BPF array maps of 32 MiB
# (vmalloc'd) created and closed; their vfree leaves lazy vmap areas whose
# purge (a vmap_drain kworker) flushes the kernel range with an IPI to every
# other CPU. Ground truth, per CPU: call-function interrupts (irq_vectors
# call_function(_single)_entry .. exit) in which csd_function_entry ran a
# watched function with a csd, their entry -> exit time; the initiator's own
# run (csd NULL); the csds queued (csd_queue_cpu). Counts must be equal per
# CPU; handler time summed over the CPUs 0.6 to 1.15 times perf's (monitor's
# own exit program lies inside perf's bracket). Without csd tracepoints
# monitor must say the flushes are not counted (checked with --trace ring
# everywhere).
source "$TEST_LIB"
set -e
need_root "BPF and perf tracepoints"
command -v curl >/dev/null || skip "curl not installed"
command -v python3 >/dev/null || skip "python3 not installed"
MON=
PERF=
trap '[[ -n $MON ]] && kill -KILL $MON 2>/dev/null; [[ -n $PERF ]] && kill -KILL $PERF 2>/dev/null; rm -rf "$TMP"' EXIT
val() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# Not counted: the ring engine has no csd programs; JSON and stderr say so,
# no per-CPU kernel-flush number.
"$SHOOTDOWN" monitor 200ms 1 --json --trace ring >"$TMP/ring.json" 2>"$TMP/ring.err" || true
grep -q 'kernel-range TLB flushes not counted' "$TMP/ring.err" && ok "ring: stderr says kernel-range flushes are not counted" ||
  not_ok "ring: stderr: $(cat "$TMP/ring.err")"
python3 - "$TMP/ring.json" <<'PY' && ok "ring: JSON kernel_flush gives the reason, no kernel_flush_* per CPU" || not_ok "ring: JSON $(head -c 300 "$TMP/ring.json")"
import json, sys
j = json.loads(open(sys.argv[1]).readline())
assert j["kernel_flush"] not in ("", "measured"), j["kernel_flush"]
assert all("kernel_flush_irqs" not in c for c in j["cpus"])
PY

[[ -d /sys/kernel/tracing/events/csd || -d /sys/kernel/debug/tracing/events/csd ]] || skip "no csd tracepoints (kernel before 6.5)"
command -v perf >/dev/null || skip "perf not installed"
cat >"$TMP/vmchurn.py" <<'PY'
# BPF array maps of MiB MiB each, created and closed: vmalloc, then vfree.
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
n, mib = int(sys.argv[1]), int(sys.argv[2])
for _ in range(n):
    attr = struct.pack("IIIII", 2, 4, 4096, mib * 256, 0) + bytes(108)  # BPF_MAP_TYPE_ARRAY
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(321, 0, buf, len(attr))  # bpf(BPF_MAP_CREATE)
    if fd < 0:
        sys.exit("bpf(BPF_MAP_CREATE): errno %d" % ctypes.get_errno())
    os.close(fd)
PY

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
"$SHOOTDOWN" monitor 1s --trace bpf --listen "127.0.0.1:$PORT" >/dev/null 2>"$TMP/err" &
MON=$!
for _ in $(seq 1 100); do grep -q serving "$TMP/err" && break; kill -0 $MON 2>/dev/null || break; sleep 0.1; done
grep -q serving "$TMP/err" || { not_ok "monitor did not start: $(cat "$TMP/err")"; finish; }
if grep -q 'kernel-range TLB flushes not counted' "$TMP/err"; then
  not_ok "monitor does not count kernel-range flushes here: $(grep kernel-range "$TMP/err")"
  finish
fi
ok "monitor --trace bpf counts kernel-range flushes$(grep -o 'kernel-range TLB flushes: .*' "$TMP/err" | sed 's/^/ (/; s/$/)/')"
sleep 1  # the monitor's own program loads (JIT, set_memory) are done

perf record -q -a -m 1024 -k CLOCK_MONOTONIC -o "$TMP/perf.data" \
  -e irq_vectors:call_function_entry,irq_vectors:call_function_exit \
  -e irq_vectors:call_function_single_entry,irq_vectors:call_function_single_exit \
  -e csd:csd_function_entry,csd:csd_queue_cpu 2>"$TMP/perf.err" &
PERF=$!
sleep 1
# perf's events are counted between the two scrapes only (CLOCK_MONOTONIC:
# just before the first, just after the second), as monitor's deltas are.
mono() { python3 -c 'import time; print("%.9f" % time.clock_gettime(time.CLOCK_MONOTONIC))'; }
T1=$(mono)
curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m1"
python3 "$TMP/vmchurn.py" 16 32
sleep 1  # the vmap_drain work runs after the maps are freed
curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m2"
T2=$(mono)
sleep 0.5
kill -INT $PERF
wait $PERF || true
PERF=
perf script -i "$TMP/perf.data" --ns -F cpu,time,event,trace 2>/dev/null >"$TMP/perf.txt"
grep -qi 'lost' "$TMP/perf.err" && echo "# perf: $(cat "$TMP/perf.err")"

# Per CPU from perf: irqs, ns, initiated, ipis.
awk -v t1="$T1" -v t2="$T2" 'BEGIN { W["do_kernel_range_flush"]; W["do_flush_tlb_all"]; W["__cpa_flush_tlb"] }
{ cpu = $1; gsub(/[][]/, "", cpu); cpu += 0; t = $2; sub(/:$/, "", t); ev = $3 }
ev !~ /_exit:$/ && (t < t1 || t > t2) { next }
ev ~ /^irq_vectors:call_function(_single)?_entry:$/ { open_[cpu] = t; k[cpu] = 0; next }
ev ~ /^irq_vectors:call_function(_single)?_exit:$/ {
  if (open_[cpu] != "" && k[cpu]) { irqs[cpu]++; ns[cpu] += (t - open_[cpu]) * 1e9 }
  open_[cpu] = ""; k[cpu] = 0; next }
ev == "csd:csd_function_entry:" {
  fn = $4; sub(/^func=/, "", fn); sub(/,$/, "", fn)
  if (!(fn in W)) next
  if ($5 == "csd=(nil)") init[cpu]++; else if (open_[cpu] != "") k[cpu] = 1
  next }
ev == "csd:csd_queue_cpu:" { for (i = 4; i <= NF; i++) if ($i ~ /^func=/ && (substr($i, 6) in W)) ipis[cpu]++ }
END { for (c = 0; c < 4096; c++) if (c in irqs || c in init || c in ipis) printf "%d %d %.0f %d %d\n", c, irqs[c], ns[c], init[c], ipis[c] }' \
  "$TMP/perf.txt" >"$TMP/truth"

d() { echo $(($(val "$TMP/m2" "$1") - $(val "$TMP/m1" "$1"))); }
total_perf=0 sum_m=0 sum_p=0
for cpu in $(seq 0 $(($(nproc --all) - 1))); do
  read -r _ p_irqs p_ns p_init p_ipis < <(awk -v c="$cpu" '$1 == c' "$TMP/truth"; echo "$cpu 0 0 0 0") || true
  m_irqs=$(d "shootdown_kernel_flush_interrupts_total{cpu=\"$cpu\"}")
  m_init=$(d "shootdown_kernel_flush_initiated_total{cpu=\"$cpu\"}")
  m_ipis=$(d "shootdown_kernel_flush_ipis_total{cpu=\"$cpu\"}")
  hs="shootdown_kernel_flush_handler_seconds_total{cpu=\"$cpu\"}"
  m_ns=$(awk -v a="$(val "$TMP/m1" "$hs")" -v b="$(val "$TMP/m2" "$hs")" 'BEGIN { printf "%.0f", (b - a) * 1e9 }')
  echo "# cpu $cpu: monitor irqs $m_irqs ns $m_ns initiated $m_init ipis $m_ipis; perf irqs $p_irqs ns $p_ns initiated $p_init ipis $p_ipis"
  total_perf=$((total_perf + p_irqs + p_init))
  [[ $m_irqs == "$p_irqs" ]] && ok "cpu $cpu: kernel-flush interrupts $m_irqs = perf's $p_irqs" || not_ok "cpu $cpu: kernel-flush interrupts monitor $m_irqs vs perf $p_irqs"
  [[ $m_init == "$p_init" ]] && ok "cpu $cpu: kernel-range flushes initiated $m_init = perf's $p_init" || not_ok "cpu $cpu: initiated monitor $m_init vs perf $p_init"
  [[ $m_ipis == "$p_ipis" ]] && ok "cpu $cpu: csds queued $m_ipis = perf's $p_ipis" || not_ok "cpu $cpu: csds queued monitor $m_ipis vs perf $p_ipis"
  awk -v m="$m_ns" -v n="$m_irqs" 'BEGIN { exit !(n == 0 ? m == 0 : m > 0 && m / n < 1000000) }' &&
    ok "cpu $cpu: handler time $m_ns ns for $m_irqs interrupts (> 0, under 1 ms each)" || not_ok "cpu $cpu: handler time $m_ns ns for $m_irqs interrupts"
  sum_m=$((sum_m + m_ns)); sum_p=$((sum_p + p_ns))
done
# Time, summed over the CPUs: monitor read 0.66 to 1.05 times perf's in 15
# runs here, lowest when a CPU got a single interrupt (8 vs 18 us). Why perf's
# bracket is longer is not established (each tracer's hooks run inside the
# other's bracket; monitor's exit program inserting a task first seen is
# one candidate). Asserted: 0.6 to 1.15 times perf's (docs/monitor.md,
# "Kernel-range flushes"), or within 4 us per interrupt.
echo "# handler time, all CPUs: monitor $sum_m ns, perf $sum_p ns"
# Or within 4 us per interrupt: the other tracer's hooks add a cost per
# interrupt, not a share (monitor_time.sh asserts the same).
irqs_p=$(awk '{ s += $2 } END { print s + 0 }' "$TMP/truth")
awk -v m="$sum_m" -v p="$sum_p" -v n="$irqs_p" 'BEGIN { d = m - p; if (d < 0) d = -d
  exit !((m >= 0.6 * p && m <= 1.15 * p) || (p > 0 && d <= 4000 * n)) }' &&
  ok "handler time $sum_m ns is 0.6 to 1.15 times perf's $sum_p ns or within 4 us per interrupt ($irqs_p)" ||
  not_ok "handler time monitor $sum_m ns vs perf $sum_p ns (not 0.6 to 1.15 times, nor within 4 us per interrupt of $irqs_p)"
((total_perf > 0)) && ok "the trigger made kernel-range flushes ($total_perf initiations + interrupts)" || not_ok "no kernel-range flush during the trigger: nothing compared"
# Initiators by name: the per-process series add up to the per-CPU ones, and
# the vmap purge runs in a kworker.
pk() { awk '/^shootdown_process_kernel_flushes_total/ { s += $2 } END { print s + 0 }' "$1"; }
ck() { awk '/^shootdown_kernel_flush_initiated_total/ { s += $2 } END { print s + 0 }' "$1"; }
dp=$(($(pk "$TMP/m2") - $(pk "$TMP/m1"))); dc=$(($(ck "$TMP/m2") - $(ck "$TMP/m1")))
[[ $dp == "$dc" ]] && ok "per-initiator flushes +$dp = per-CPU +$dc" || not_ok "per-initiator flushes +$dp vs per-CPU +$dc"
grep -q '^shootdown_process_kernel_flushes_total{pid="[0-9]*",comm="kworker' "$TMP/m2" && ok "a kworker is named as an initiator" ||
  not_ok "no kworker initiator: $(grep '^shootdown_process_kernel_flushes_total' "$TMP/m2" | head -5)"
if command -v promtool >/dev/null; then
  out=$(promtool check metrics <"$TMP/m2" 2>&1) && [[ -z "$out" ]] && ok "promtool check metrics: no findings" || not_ok "promtool: $out"
fi
kill -TERM $MON
wait $MON && ok "exit 0 on SIGTERM" || not_ok "exit status $? on SIGTERM"
MON=
finish
