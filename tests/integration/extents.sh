#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# madvise-ranges versus process-madvise: the same scattered
# extents of chunk A (every other 64 KiB extent, 1024 of them in 128 MiB),
# released one madvise(MADV_DONTNEED) per extent or in process_madvise
# vectors of up to 1024. Checked with the kernel's own counts:
#  - both give back the same bytes (half of A) in the same number of extents;
#  - madvise-ranges: the victim receives a flush IPI for most extents (each
#    call flushes its own range: >= 25 % of 1024, the rest skipped for a
#    victim the host or the scheduler had switched out);
#  - process-madvise, where the kernel offers it: never more shootdowns than
#    madvise-ranges (whether it batches the flushes of one vector depends on
#    the kernel: the numbers are printed with its version); where it does
#    not, the run fails with one line that says the path is unavailable;
#  - the TLB accounting closes on the victim CPU for both.
# A madvise-ranges run in which the victim CPU received (almost) nothing is
# retried, up to 3 attempts: under KVM's paravirtual flush a vCPU the host has
# preempted is not sent the IPI (its flush is deferred), and a CI rehearsal
# once saw 0 for the whole 39 ms release (TLB delta 0 = 0 + 0 + 0).
source "$TEST_LIB"
need_root "perf tracepoints"
need_tlb_ipis  # judged by the shootdown IPIs the victim receives
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq"

common=(--chunk-size 128MiB --trigger after=300ms --after 200ms --quiet --trace on --rt)
declare -A RECV
for arm in madvise-ranges process-madvise; do
  for attempt in 1 2 3; do
    rm -rf "$TMP/$arm"
    run_cmd "$SHOOTDOWN" run --release "$arm" "${common[@]}" --out "$TMP/$arm"
    [[ $arm == madvise-ranges && $RC == 0 ]] || break
    got=$(jq '.attribution.victims[0].shootdowns.received // 0' "$TMP/$arm/result.json" 2>/dev/null || echo 0)
    ((got >= 256)) && break
    echo "# madvise-ranges attempt $attempt: the victim received $got shootdowns (vCPU preempted by the host?), retrying"
  done
  R="$TMP/$arm/result.json"
  if [[ $arm == process-madvise && $RC == 1 ]] && grep -q "unavailable" <<<"$ERR"; then
    ok "process-madvise unavailable on $(uname -r), said in one line: $(tail -1 <<<"$ERR")"
    expect_err_lines 1 "unavailable: one line"
    continue
  fi
  expect_rc 0 "run --release $arm"
  [[ -s $R ]] || { not_ok "$arm: no result.json"; continue; }
  bytes=$(jq '.releases[0].bytes' "$R")
  if ((bytes == 64 << 20)); then ok "$arm: released $bytes bytes (half of A)"; else not_ok "$arm: released $bytes bytes"; fi
  RECV[$arm]=$(jq '.attribution.victims[0].shootdowns.received' "$R")
  expect_tlb_accounting "$R" "$arm"
  counted=$TLB_COUNTED tr=$TLB_R1 tw=$TLB_R5 untraced=$TLB_UNTRACED
  dur=$(jq '.releases[0].duration_ns' "$R")
  echo "# $arm on $(uname -r): ${RECV[$arm]} shootdowns received by the victim, release took $dur ns; TLB $counted = $tr + $tw + $untraced"
  expect_out "^$arm of 64 MiB in 1024 extents of 64 KiB" "$arm: the verdict names the extents"
done
if [[ -n ${RECV[madvise-ranges]:-} ]]; then
  if ((RECV[madvise-ranges] >= 256)); then ok "madvise-ranges: ${RECV[madvise-ranges]} shootdowns for 1024 extents (>= 25 %)"; else not_ok "madvise-ranges: only ${RECV[madvise-ranges]} shootdowns for 1024 extents"; fi
fi
if [[ -n ${RECV[process-madvise]:-} && -n ${RECV[madvise-ranges]:-} ]]; then
  if ((RECV[process-madvise] <= RECV[madvise-ranges])); then ok "process-madvise ${RECV[process-madvise]} <= madvise-ranges ${RECV[madvise-ranges]} shootdowns"; else not_ok "process-madvise ${RECV[process-madvise]} > madvise-ranges ${RECV[madvise-ranges]}"; fi
fi
finish
