#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real run end to end: exit code, the article's table, result files, and the
# shootdown ground truth: munmap sends TLB IPIs to the victim CPU, reuse none.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq (scripts/install-deps.sh installs it)"

common=(--chunk-size 256MiB --trigger after=300ms --after 300ms --quiet)

run_cmd "$SHOOTDOWN" run --release munmap "${common[@]}" --out "$TMP/munmap"
expect_rc 0 "run --release munmap"
expect_out "phase +min +mean +p50 +p90 +p99 +p99.9 +p99.99 +(p99.999 +)?max +samples +stall lost" "prints the article's table header (with p99.99 and stall lost)"
expect_out "^  baseline " "table has a baseline row"
expect_out "^  release " "table has a release row"
expect_out "^  after " "table has an after row"
expect_out "ns per page" "per-page table"
expect_out "release: munmap of 256 MiB took" "release duration"
expect_file "$TMP/munmap/result.json" "result.json written"
expect_file "$TMP/munmap/timeline.csv" "timeline.csv written"
if jq -e '.schema_version == 1 and .complete == true and (.releases|length) == 1' "$TMP/munmap/result.json" >/dev/null; then
  ok "result.json: schema 1, complete, one release"; else not_ok "result.json content"; fi
if jq -e '.environment.kernel != "" and .environment.tsc_hz > 0 and .plan.victim_cpus == [.victims[0].cpu]' "$TMP/munmap/result.json" >/dev/null; then
  ok "result.json records the environment and the plan"; else not_ok "result.json environment/plan"; fi
if jq -e '[.victims[0].phases[] | .per_batch_ns.count] | add == '"$(jq '.victims[0].samples' "$TMP/munmap/result.json")" "$TMP/munmap/result.json" >/dev/null; then
  ok "phases partition the samples"; else not_ok "phase counts do not add up to the samples"; fi
rows=$(($(wc -l < "$TMP/munmap/timeline.csv") - 1))
nint=$(jq '.intervals|length' "$TMP/munmap/result.json")
[[ "$rows" == "$nint" && "$rows" -gt 2 ]] && ok "timeline.csv has one row per interval ($rows)" || not_ok "timeline rows $rows vs intervals $nint"
# The verdict: the line right after the two header lines, the same sentence as
# result.json summary, with the attribution's own figures.
verdict_matches() {  # $1 console text, $2 result.json, $3 what
  local line3 want
  line3=$(sed -n 3p <<<"$1")
  want=$(jq -r '.summary.lines[0]' "$2")
  if [[ -n "$line3" && "$line3" == "$want" ]]; then ok "$3: verdict right after the header equals result.json summary"
  else not_ok "$3: line 3 '$line3' vs summary '$want'"; fi
  if jq -e '.attribution.available != true or
            (.summary.victims[0].shootdowns == .attribution.victims[0].shootdowns.received and
             .summary.victims[0].stall_ns == .attribution.victims[0].stall_ns["tlb-shootdown"] and
             .summary.victims[0].stall_per_shootdown_p50_ns == .attribution.victims[0].stall_per_shootdown_ns.p50)' "$2" >/dev/null
  then ok "$3: summary figures are the attribution's"; else not_ok "$3: summary figures differ from the attribution"; fi
  local n
  n=$(jq -r '.summary.victims[0].shootdowns' "$2")
  if jq -e '.attribution.available == true' "$2" >/dev/null; then
    if [[ "$n" == 0 ]]; then grep -q "sent no shootdown IPI to cpu" <<<"$line3"
    else grep -q "sent $n shootdown IPIs\? to cpu" <<<"$line3"; fi && ok "$3: verdict states $n shootdowns" ||
      not_ok "$3: verdict does not state $n shootdowns: $line3"
  else
    grep -q "unknown" <<<"$line3" && ok "$3: verdict says what is unknown" || not_ok "$3: verdict without evidence: $line3"
  fi
}
verdict_matches "$OUT" "$TMP/munmap/result.json" munmap
run_cmd "$SHOOTDOWN" run --release reuse "${common[@]}" --out "$TMP/reuse"
verdict_matches "$OUT" "$TMP/reuse/result.json" reuse
if grep -q "tuning warnings undermine these numbers: shootdown doctor" <<<"$OUT" || ! jq -e '.environment.warnings | length > 1' "$TMP/reuse/result.json" >/dev/null
then ok "tuning warnings in one line"; else not_ok "tuning warnings not collapsed"; fi

vcpu=$(jq '.plan.victim_cpus[0]' "$TMP/munmap/result.json")
tlb=$(jq "[.interrupts.deltas[] | select(.cpu == $vcpu) | .tlb][0]" "$TMP/munmap/result.json")
R=$TMP/munmap/result.json
line=$(jq -r '.summary.lines[0]' "$R")
if jq -e '.attribution.available == false' "$R" >/dev/null; then
  # No kernel trace: only doctor can say whether IPIs arrive here.
  if tlb_ipis_reach; then
    [[ "$tlb" -gt 0 ]] && ok "munmap: victim cpu$vcpu TLB delta $tlb > 0" || not_ok "munmap: victim TLB delta is $tlb"
  else
    skip_check "munmap: victim TLB delta > 0: $NO_TLB_IPIS"
  fi
else
  # Judged by this run's own evidence, not by doctor's earlier measurement:
  # with KVM's PV flush a preempted vCPU gets no IPI, so on some days the
  # host delivers a varying share (doctor 256 of 256 at 11:55, 198 at 13:05,
  # under half at 14:10 on 2026-12-07, while this run got 7 of 7).
  req=$(jq ".attribution.victims[0].shootdowns.flush_requests // 0" "$R")
  got=$(jq ".attribution.victims[0].shootdowns.flush_requests_delivered // 0" "$R")
  if jq -e '.summary.victims[0].flushes_unseen' "$R" >/dev/null; then
    # The run's flush requests did not arrive as IPIs: the verdict must not
    # pass that off as "no flush".
    skip_check "munmap: victim TLB delta >= delivered flushes: $got of $req flush requests arrived as IPIs in this run"
    if grep -q "remote flushes bypass IPIs here" <<<"$line"; then
      ok "munmap: the verdict says remote flushes bypassed IPIs ($got of $req arrived)"
    else
      not_ok "munmap: the verdict does not say remote flushes bypass IPIs ($got of $req arrived): $line"
    fi
  else
    # Each flush the victim received as an IPI is one in its TLB row.
    if ((got == 0)); then
      skip_check "munmap: victim TLB delta >= delivered flushes: no flush request reached the running victim ($req)"
    elif [[ "$tlb" -ge "$got" ]]; then
      ok "munmap: victim cpu$vcpu TLB delta $tlb >= $got flushes delivered as IPIs (of $req requests)"
    else
      not_ok "munmap: victim TLB delta $tlb < $got flushes delivered as IPIs"
    fi
    if grep -q "bypass IPIs" <<<"$line"; then
      not_ok "munmap: the verdict claims a bypass although $got of $req requests arrived: $line"
    else
      ok "munmap: the verdict claims no bypass ($got of $req requests arrived)"
    fi
  fi
fi

# reuse: the control arm. /proc/interrupts counts per CPU for every process,
# so another process's flush can land on the victim CPU. With kernel evidence
# every TLB IPI the victim CPU received must be a foreign one (reason 5, or
# reason 1 in another task) and none ours; without it, the raw delta must be 0
# in one of three attempts (each reported).
zero=0
for attempt in 1 2 3; do
  run_cmd "$SHOOTDOWN" run --release reuse "${common[@]}" --json
  [[ "$RC" == 0 ]] || { not_ok "run --release reuse rc=$RC: $ERR"; break; }
  t=$(jq "[.interrupts.deltas[] | select(.role == \"victim\") | .tlb] | add" <<<"$OUT")
  if jq -e '.attribution.available == true' <<<"$OUT" >/dev/null 2>&1; then
    ours=$(jq '.attribution.victims[0].shootdowns.received' <<<"$OUT")
    foreign=$(jq '.attribution.victims[0].shootdowns.wrong_cpu' <<<"$OUT")
    own=$(jq '.attribution.own_flushes | length' <<<"$OUT")
    echo "# reuse attempt $attempt: victim TLB delta $t = ours $ours + foreign $foreign?; own flushes outside the release: $own"
    # Who sent each (thread, kernel path): the tool's own doing, never the strategy's.
    jq -r '.attribution.own_flushes[] | "#   \(.thread) tid \(.tid) cpu\(.cpu): \(.cause): \(.kernel_path[0:8] | join(" <- "))"' <<<"$OUT"
    # The counted span holds nothing of the tool's own making, in sanitizer
    # builds too (their allocator's first writes flush remote TLBs, so the
    # culprit makes everything it needs before the span): the whole delta is
    # foreign, and no thread of ours sent a remote flush outside the release
    # (reason 4 is traced where the flush sends no IPI too: this holds on a
    # day the hypervisor's paravirtual flush delivers none).
    if [[ "$ours" == 0 && "$t" == "$foreign" && "$own" == 0 ]]; then zero=1; break; fi
  else
    echo "# reuse attempt $attempt (no kernel evidence): victim TLB delta $t"
    if [[ "$t" == 0 ]]; then zero=1; break; fi
  fi
done
[[ $zero == 1 ]] && ok "reuse: no TLB shootdown of ours on the victim CPU" || not_ok "reuse: the victim CPU received shootdowns of ours"

run_cmd "$SHOOTDOWN" run --release munmap "${common[@]}" --json
if jq -e '.tool == "shootdown"' <<<"$OUT" >/dev/null; then ok "--json prints the result on stdout"; else not_ok "--json output is not the result"; fi

finish
