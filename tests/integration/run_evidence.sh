#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Kernel evidence of a real run against ground truth:
#  - munmap: the victim CPU's /proc/interrupts TLB delta is accounted for:
#    tlb:tlb_flush reason 1 (ours) + reason 5/foreign + counted-not-traced
#    (the kernel rule in the result, at most a quarter), and >= 95% of
#    our shootdown IPIs are matched to a victim sample;
#  - reuse: zero shootdowns for our mm on the victim CPU, zero tlb-shootdown samples;
#  - membarrier x K: exactly one function-call IPI (ipi_mb) on the victim CPU
#    per release during which the victim was on its CPU (sched_switch
#    evidence), at least 80% of K of them, labelled other-ipi and matched to samples.
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
  # Judged by this run's own evidence, not by doctor's earlier moment: with
  # KVM's PV flush a preempted vCPU gets no IPI, so delivery varies within a
  # day (2026-12-07: doctor 147 of 256 while this run got 29 of 29).
  req=$(jq '.attribution.victims[0].shootdowns.flush_requests // 0' "$R")
  got=$(jq '.attribution.victims[0].shootdowns.flush_requests_delivered // 0' "$R")
  unseen=$(jq '.summary.victims[0].flushes_unseen' "$R")
  if [[ $unseen == true ]]; then
    # The culprit's requests did not arrive: they must be counted and the
    # verdict must say they bypassed IPIs (docs/kernel-evidence.md).
    grep -q "remote flushes bypass IPIs here" <<<"$(jq -r '.summary.lines[0]' "$R")" && (( req > 0 )) &&
      ok "munmap: $req remote flush requests while the victim ran, $got delivered, and the verdict says so" ||
      not_ok "munmap: requests $req, delivered $got, flushes_unseen true, verdict: $(jq -r '.summary.lines[0]' "$R")"
  else
    (( recv > 0 && got > 0 )) && ok "munmap: $recv shootdown IPIs received by the victim ($got of $req requests delivered)" ||
      not_ok "munmap: received $recv, requests $req, delivered $got, flushes_unseen $unseen"
  fi
  # The kernel counts every flush IPI in the TLB row but traces it only when
  # it flushes (arch/x86/mm/tlb.c flush_tlb_func: an IPI whose work a
  # previous flush already did returns untraced). The result accounts for the
  # whole delta: traced reason 1 + traced reason 5 + counted-not-traced with
  # that rule; never more traced than counted.
  read -r counted tr tw lazy untraced beyond lw rule_len < <(jq -r '.attribution.victims[0].tlb_accounting |
      "\(.counted) \(.traced_remote) \(.traced_wrong_cpu) \(.lazy_tlb) \(.counted_not_traced) \(.traced_beyond_count) \(.local_wrong_cpu) \(.rule | length)"' "$R")
  echo "# accounting: counted $counted = reason 1 $tr + reason 5 in an IPI $tw + lazy $lazy + counted-not-traced $untraced (beyond $beyond)"
  (( counted == tlb && tr + tw + lazy + untraced == counted && beyond == 0 && tr + tw + lw == recv + foreign )) &&
    ok "TLB delta $tlb accounted: traced $recv + $foreign (ours + foreign) + counted-not-traced $untraced" ||
    not_ok "TLB accounting does not close: delta $tlb, counted $counted, traced $tr + $tw + lazy $lazy (local reason 5 $lw), untraced $untraced, beyond $beyond, ours $recv + foreign $foreign"
  (( untraced >= 0 && (untraced == 0 || rule_len > 0) && untraced * 4 <= tlb )) &&
    ok "counted-not-traced $untraced: >= 0, <= 25% of the delta, kernel rule stated" ||
    not_ok "counted-not-traced $untraced of $tlb (rule length $rule_len)"
  (( matched * 100 >= recv * 95 )) && ok "recall $matched/$recv >= 95%" || not_ok "recall $matched/$recv < 95%"
  n=$(jq '.attribution.victims[0].samples["tlb-shootdown"]' "$R")
  if [[ $unseen != true ]]; then (( n > 0 )) && ok "munmap: $n samples labelled tlb-shootdown" || not_ok "munmap: no tlb-shootdown samples"
  else skip_check "munmap: samples labelled tlb-shootdown: $got of $req flush requests arrived as IPIs in this run"; fi
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

# membarrier(PRIVATE_EXPEDITED) IPIs only CPUs running our mm: a victim that
# is off its CPU during a release (preempted, or RT-throttled under --rt: the
# kernel gives other tasks 50 ms per second) gets no IPI for it. The expected
# count is therefore the number of membarrier releases during whose whole call
# the victim was on its CPU, from the sched:sched_switch evidence
# (attribution.victims[].release_on_cpu); it must still be >= 80% of K, so the
# check cannot pass by the victim never running.
K=25
run_cmd "$SHOOTDOWN" run --release membarrier --repeat $K --every 20ms --chunk-size 256MiB "${common[@]}" --out "$TMP/mb"
expect_rc 0 "run --release membarrier --repeat $K"
R="$TMP/mb/result.json"
if [[ -s $R ]]; then
  mb=$(jq '.attribution.victims[0].ipi_functions.ipi_mb // 0' "$R")
  other=$(jq '.attribution.victims[0].samples["other-ipi"]' "$R")
  recv=$(jq '.attribution.victims[0].shootdowns.received' "$R")
  src=$(jq -r '.attribution.victims[0].offcpu_source' "$R")
  nrel=$(jq '[.releases[] | select(.strategy == "membarrier")] | length' "$R")
  on=$(jq '[.attribution.victims[0].release_on_cpu as $on | .releases | to_entries[]
            | select(.value.strategy == "membarrier" and $on[.key] == true)] | length' "$R")
  offns=$(jq '.attribution.victims[0].offcpu_ns' "$R")
  offn=$(jq '.attribution.victims[0].offcpu_intervals' "$R")
  echo "# membarrier x $K: releases=$nrel victim on CPU for $on; ipi_mb IPIs=$mb other-ipi samples=$other shootdowns=$recv;" \
       "victim off CPU $offn times, $((offns / 1000000)) ms ($src)"
  [[ "$src" == sched_switch ]] && ok "membarrier: off-CPU intervals from sched:sched_switch" \
    || not_ok "membarrier: no sched:sched_switch evidence ($src): $(jq -c '.trace.missing' "$R")"
  [[ "$nrel" == "$K" ]] && ok "membarrier: $K releases" || not_ok "membarrier: $nrel releases, expected $K"
  (( on * 100 >= K * 80 )) && ok "membarrier: victim on CPU for $on/$K releases (>= 80%)" \
    || not_ok "membarrier: victim on CPU for only $on/$K releases (< 80%): the check would be vacuous"
  [[ "$mb" == "$on" ]] && ok "membarrier: exactly $on ipi_mb IPIs on the victim CPU (one per release with the victim on CPU)" \
    || not_ok "membarrier: $mb ipi_mb IPIs, expected $on (releases with the victim on CPU)"
  (( other >= on )) && ok "membarrier: IPIs matched to $other other-ipi samples" || not_ok "membarrier: only $other other-ipi samples"
  [[ "$recv" == 0 ]] && ok "membarrier: no TLB shootdowns" || not_ok "membarrier: $recv shootdowns"
else
  not_ok "no result.json"
fi

finish
