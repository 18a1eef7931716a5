#!/usr/bin/env bash
# Kernel evidence of a real run against ground truth (issue 3):
#  - munmap: the victim CPU's tlb:tlb_flush count (reason 1 for our mm +
#    reason 5/foreign) equals its /proc/interrupts TLB delta, and >= 95% of
#    our shootdown IPIs are matched to a victim sample;
#  - reuse: zero shootdowns for our mm on the victim CPU, zero tlb-shootdown samples;
#  - membarrier x K: exactly K function-call IPIs (ipi_mb) on the victim CPU,
#    labelled other-ipi and matched to samples.
source "$TEST_LIB"
need_root "perf tracepoints"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq"

common=(--trigger after=500ms --after 300ms --quiet --trace on --rt)

run_cmd "$SHOOTDOWN" run --release munmap --chunk-size 1GiB "${common[@]}" --out "$TMP/munmap"
expect_rc 0 "run --release munmap --chunk-size 1GiB --trace on"
R="$TMP/munmap/result.json"
if [[ -s $R ]]; then
  recv=$(jq '.attribution.victims[0].shootdowns.received' "$R")
  matched=$(jq '.attribution.victims[0].shootdowns.matched' "$R")
  foreign=$(jq '.attribution.victims[0].shootdowns.wrong_cpu' "$R")
  tlb=$(jq '[.interrupts.deltas[] | select(.role == "victim") | .tlb][0]' "$R")
  lost=$(jq '.trace.lost_events' "$R")
  echo "# munmap 1 GiB: reason-1 ours=$recv foreign=$foreign matched=$matched /proc/interrupts TLB=$tlb lost=$lost"
  [[ "$lost" == 0 ]] && ok "no lost trace events" || not_ok "lost $lost trace events"
  (( recv > 0 )) && ok "munmap: $recv shootdown IPIs received by the victim" || not_ok "munmap: no shootdowns traced"
  (( recv + foreign == tlb )) && ok "tracepoint count ($recv + $foreign) == /proc/interrupts TLB delta ($tlb)" \
    || not_ok "tracepoint count $recv + $foreign != /proc/interrupts TLB delta $tlb"
  (( matched * 100 >= recv * 95 )) && ok "recall $matched/$recv >= 95%" || not_ok "recall $matched/$recv < 95%"
  n=$(jq '.attribution.victims[0].samples["tlb-shootdown"]' "$R")
  (( n > 0 )) && ok "munmap: $n samples labelled tlb-shootdown" || not_ok "munmap: no tlb-shootdown samples"
else
  not_ok "no result.json"
fi

run_cmd "$SHOOTDOWN" run --release reuse --chunk-size 1GiB "${common[@]}" --out "$TMP/reuse"
expect_rc 0 "run --release reuse"
R="$TMP/reuse/result.json"
if [[ -s $R ]]; then
  recv=$(jq '.attribution.victims[0].shootdowns.received' "$R")
  n=$(jq '.attribution.victims[0].samples["tlb-shootdown"]' "$R")
  foreign=$(jq '.attribution.victims[0].shootdowns.wrong_cpu' "$R")
  echo "# reuse: ours=$recv tlb-shootdown samples=$n foreign flushes=$foreign"
  [[ "$recv" == 0 ]] && ok "reuse: zero shootdowns for our mm on the victim CPU" || not_ok "reuse: $recv shootdowns received"
  [[ "$n" == 0 ]] && ok "reuse: zero tlb-shootdown samples" || not_ok "reuse: $n tlb-shootdown samples"
else
  not_ok "no result.json"
fi

K=25
run_cmd "$SHOOTDOWN" run --release membarrier --repeat $K --every 20ms --chunk-size 256MiB "${common[@]}" --out "$TMP/mb"
expect_rc 0 "run --release membarrier --repeat $K"
R="$TMP/mb/result.json"
if [[ -s $R ]]; then
  mb=$(jq '.attribution.victims[0].ipi_functions.ipi_mb // 0' "$R")
  other=$(jq '.attribution.victims[0].samples["other-ipi"]' "$R")
  recv=$(jq '.attribution.victims[0].shootdowns.received' "$R")
  echo "# membarrier x $K: ipi_mb IPIs=$mb other-ipi samples=$other shootdowns=$recv"
  [[ "$mb" == "$K" ]] && ok "membarrier: exactly $K ipi_mb IPIs on the victim CPU" || not_ok "membarrier: $mb ipi_mb IPIs, expected $K"
  (( other >= K )) && ok "membarrier: IPIs matched to $other other-ipi samples" || not_ok "membarrier: only $other other-ipi samples"
  [[ "$recv" == 0 ]] && ok "membarrier: no TLB shootdowns" || not_ok "membarrier: $recv shootdowns"
else
  not_ok "no result.json"
fi

finish
