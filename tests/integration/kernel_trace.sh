#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Kernel evidence, checked against a controlled IPI source:
#  - K membarrier(PRIVATE_EXPEDITED) calls from the culprit = exactly K ipi_mb
#    function-call IPIs on the victim CPU;
#  - tlb:tlb_flush reason-1 count on the victim == its /proc/interrupts TLB
#    delta over the munmap window (what makes our shootdown counts trustworthy);
#  - the text stream shows victim flushes, culprit sends and backtraces;
#  - SIGINT/SIGTERM: exit 130/143, tracefs mount state and top-level ftrace
#    settings exactly as before (also when tracefs was already mounted).
source "$TEST_LIB"
need_root "perf tracepoints and tracefs"
IPI_SOURCE="$SHOOTDOWN_BUILD/tests/integration/ipi_source"
[[ -x "$IPI_SOURCE" ]] || skip "ipi_source not built ($IPI_SOURCE)"
mapfile -t CPUS < <(awk -F, '{for(i=1;i<=NF;i++){n=split($i,r,"-"); if(n==1)print r[1]; else for(c=r[1];c<=r[2];c++)print c}}' /sys/devices/system/cpu/online)
((${#CPUS[@]} >= 2)) || skip "needs 2 online CPUs"
C=${CPUS[0]}
V=${CPUS[1]}
K=100
TRACEFS=/sys/kernel/tracing
TEST_MOUNTED=0  # the pre-mounted case mounts tracefs itself: undo on any exit
trap 'rm -rf "$TMP"; if ((TEST_MOUNTED)); then umount "$TRACEFS"; fi' EXIT

tracefs_mounts() { awk '$3=="tracefs"{print $2}' /proc/mounts | sort | tr '\n' ' '; }
# tracing_on, current_tracer, events/enable, read through a temporary mount
# when tracefs is not mounted (the test restores what it changes).
tracing_settings() {
  local dir mounted_here=0
  dir=$(awk '$3=="tracefs"{print $2; exit}' /proc/mounts)
  if [[ -z "$dir" ]]; then
    mount -t tracefs nodev "$TRACEFS" || { echo "unreadable"; return; }
    dir=$TRACEFS mounted_here=1
  fi
  echo "tracing_on=$(cat "$dir/tracing_on") current_tracer=$(cat "$dir/current_tracer") events_enable=$(cat "$dir/events/enable")"
  if ((mounted_here)); then umount "$TRACEFS"; fi
  return 0
}

# --- membarrier and munmap, raw stream -------------------------------------
MOUNTS0=$(tracefs_mounts)
SETTINGS0=$(tracing_settings)
run_cmd "$SHOOTDOWN" trace --format raw --culprit-cpu "$C" --victim-cpus "$V" -- \
  "$IPI_SOURCE" --culprit-cpu "$C" --victim-cpu "$V" --membarriers "$K" --unmap-mib 256
expect_rc 0 "trace -- ipi_source"
grep -v '^[0-9]' <<<"$OUT" | sed 's/^/# /'
# ipi_source's key=value lines
eval "$(grep -v '^[0-9]' <<<"$OUT" | grep -o '[a-z_]*=[-0-9]*' | tr '\n' ' ')"
if [[ "${victim_fifo:-0}" != 1 ]]; then echo "# warning: victim not SCHED_FIFO; counts may be short on a loaded machine"; fi
read -r R1 R5 MB FT < <(awk -v v="$V" -v lo="$unmap_start_ns" -v hi="$unmap_end_ns" -v mlo="$mb_start_ns" -v mhi="$mb_end_ns" '
  $2==v && $4=="tlb_flush" && $1>=lo && $1<=hi {r[$5]++}
  $2==v && $4=="csd_function_entry" && $8=="flush_tlb_func" && $1>=lo && $1<=hi {ft++}
  # an IPI sent just before mb_end is handled just after it: allow 5 ms
  $2==v && $4=="csd_function_entry" && $8=="ipi_mb" && $1>=mlo && $1<=mhi+5000000 {mb++}
  END {print r[1]+0, r[5]+0, mb+0, ft+0}' <<<"$OUT")
echo "# victim cpu$V: membarriers=$K ipi_mb=$MB; munmap window: reason1=$R1 reason5=$R5 flush_tlb_func=$FT /proc/interrupts TLB delta=${victim_tlb_delta:-?}"
if [[ "$MB" == "$K" ]]; then ok "membarrier: $K calls -> $MB ipi_mb IPIs on cpu$V"; else not_ok "membarrier: $K calls but $MB ipi_mb IPIs on cpu$V"; fi
if ! tlb_ipis_reach; then skip_check "munmap sends remote shootdowns to cpu$V: $NO_TLB_IPIS"
elif ((R1 > 0)); then ok "munmap sends remote shootdowns to cpu$V ($R1)"; else not_ok "no reason-1 tlb_flush on cpu$V during munmap"; fi
# Reason 5 (remote wrong CPU: an IPI for another mm that last ran here) also
# counts in TLB; with the victim spinning in our mm it is normally 0.
if [[ "$((R1 + R5))" == "${victim_tlb_delta:-x}" ]]; then
  ok "tlb_flush reason-1 ($R1, +$R5 wrong-CPU) == /proc/interrupts TLB delta ($victim_tlb_delta) on cpu$V"
else
  not_ok "tlb_flush reason-1 $R1 (+$R5) != /proc/interrupts TLB delta ${victim_tlb_delta:-?} on cpu$V"
fi
if [[ "$FT" == "${victim_tlb_delta:-x}" ]]; then ok "flush_tlb_func IPIs ($FT) == TLB delta"; else not_ok "flush_tlb_func IPIs $FT != TLB delta ${victim_tlb_delta:-?}"; fi
if grep -q '^lost events: 0$' <<<"$ERR"; then ok "no lost events"; else not_ok "lost events: $(grep 'lost events' <<<"$ERR")"; fi
expect_err "cpu$V victim: tlb_flush reason=1: [0-9]+, /proc/interrupts TLB: [0-9]+" "summary cross-checks against /proc/interrupts"

# --- the human-readable stream ---------------------------------------------
run_cmd "$SHOOTDOWN" trace --culprit-cpu "$C" --victim-cpus "$V" -- \
  "$IPI_SOURCE" --culprit-cpu "$C" --victim-cpu "$V" --membarriers 5 --unmap-mib 64
expect_rc 0 "trace (text) -- ipi_source"
if tlb_ipis_reach; then
  expect_out "^VICTIM  cpu$V +[-+ ][0-9.]+ms tlb_flush reason=remote shootdown pages=" "victim remote-shootdown lines"
else skip_check "victim remote-shootdown lines: $NO_TLB_IPIS"; fi
expect_out "^CULPRIT cpu$C +[-+ ][0-9.]+ms ipi_send_cpu(mask)? → cpu$V callsite=" "culprit IPI send lines"
if tlb_ipis_reach; then
  expect_out "IPI handler [0-9.]+ [nu]s \(call_function(_single)?\) ran flush_tlb_func" "IPI handler durations with the function run"
else skip_check "IPI handler durations with flush_tlb_func: $NO_TLB_IPIS"; fi
expect_out "ran ipi_mb" "membarrier IPIs named"
expect_out "^CULPRIT cpu$C .*tlb_flush reason=remote IPI send" "culprit reason-4 flushes"
expect_out "^        (flush_tlb_mm_range|native_flush_tlb_multi)\+0x" "kernel backtraces, symbolized"

# --- signals restore everything ----------------------------------------------
check_restored() {  # $1 = label
  local m s
  m=$(tracefs_mounts)
  s=$(tracing_settings)
  if [[ "$m" == "$MOUNTS0" ]]; then ok "$1: tracefs mounts unchanged ('$m')"; else not_ok "$1: tracefs mounts '$MOUNTS0' -> '$m'"; fi
  if [[ "$s" == "$SETTINGS0" ]]; then ok "$1: ftrace settings unchanged ($s)"; else not_ok "$1: settings '$SETTINGS0' -> '$s'"; fi
}
for sig in INT TERM; do
  "$SHOOTDOWN" trace -q --culprit-cpu "$C" --victim-cpus "$V" >"$TMP/sig.out" 2>"$TMP/sig.err" &
  pid=$!
  sleep 2
  kill -"$sig" "$pid"
  set +e; wait "$pid"; RC=$?; set -e
  ERR=$(cat "$TMP/sig.err")
  expect_rc "$([[ $sig == INT ]] && echo 130 || echo 143)" "SIG$sig stops trace"
  if grep -q 'summary over' "$TMP/sig.out"; then ok "SIG$sig: summary printed"; else not_ok "SIG$sig: no summary"; fi
  check_restored "after SIG$sig"
done

# Already mounted by someone else: we must leave it mounted.
if [[ -z "$MOUNTS0" ]]; then
  mount -t tracefs nodev "$TRACEFS" && TEST_MOUNTED=1
  MOUNTS0=$(tracefs_mounts)
  "$SHOOTDOWN" trace -q --culprit-cpu "$C" --victim-cpus "$V" >"$TMP/sig.out" 2>&1 &
  pid=$!
  sleep 1
  kill -INT "$pid"
  set +e; wait "$pid"; RC=$?; set -e
  expect_rc 130 "SIGINT with tracefs pre-mounted"
  check_restored "pre-mounted tracefs"
  umount "$TRACEFS" && TEST_MOUNTED=0
fi
finish
