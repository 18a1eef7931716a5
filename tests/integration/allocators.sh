#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The allocator arms: the same churn (16 B..1 MiB blocks, 7/8 freed
# in a shuffled order) through glibc malloc, jemalloc, tcmalloc and mimalloc,
# each loaded from Debian's package so that only the workload uses it.
# Checked, for each arm with its give-back call (--allocator-purge on):
#  - the result names the allocator, its version, its library and its
#    settings read back; the memory kept (result.memory) lies between 0 and
#    what was freed;
#    the per-GiB prices are there; the TLB accounting closes on the victim;
# and the trade-off the arms exist to show, with the kernel's own counts:
#  - jemalloc: its purge gives the memory back (kept <= 25 % of freed) and the
#    victim receives shootdowns for it; with --allocator-purge off (decay
#    10 s, no background thread) it keeps >= 75 % and sends at most a tenth
#    of those shootdowns;
#  - the reuse control in a compare with allocator arms stays at 0 shootdowns
#    of our own in every trial (loading allocators does not leak flushes into
#    other arms).
source "$TEST_LIB"
need_root "perf tracepoints"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq"

common=(--chunk-size 128MiB --trigger after=300ms --after 300ms --quiet --trace on --rt)
declare -A SOLIB=([jemalloc]=libjemalloc.so.2 [tcmalloc]=libtcmalloc_minimal.so.4 [mimalloc]=libmimalloc.so.2 [glibc-malloc]="")
declare -A RECV KEPT
for arm in glibc-malloc jemalloc tcmalloc mimalloc; do
  R="$TMP/$arm/result.json"
  run_cmd "$SHOOTDOWN" run --release "$arm" "${common[@]}" --out "$TMP/$arm"
  expect_rc 0 "run --release $arm"
  [[ -s $R ]] || { not_ok "$arm: no result.json"; continue; }
  IFS='|' read -r name version lib freed kept rl rs < <(jq -r '"\(.allocator.name)|\(.allocator.version)|\(.allocator.library)|\(.allocator.freed_bytes)|\(.memory.kept_bytes)|\(.memory.rss_before)|\(.memory.rss_settled)"' "$R")
  RECV[$arm]=$(jq '.attribution.victims[0].shootdowns.received' "$R")
  KEPT[$arm]=$kept
  echo "# $arm: $version, freed $freed, kept $kept (RSS $rl -> $rs), ${RECV[$arm]} shootdowns received by the victim"
  [[ $name == "$arm" ]] && ok "$arm: result.allocator names it" || not_ok "$arm: allocator.name $name"
  [[ -n $version && $version != null ]] && ok "$arm: version $version" || not_ok "$arm: no version"
  if [[ -n ${SOLIB[$arm]} ]]; then
    [[ $lib == *"${SOLIB[$arm]}"* ]] && ok "$arm: loaded $lib" || not_ok "$arm: library '$lib' is not ${SOLIB[$arm]}"
  fi
  jq -e '.allocator.settings | length > 0' "$R" >/dev/null && ok "$arm: settings recorded" || not_ok "$arm: no settings"
  if ((kept >= 0 && kept <= freed && rl > 0 && rs > 0)); then ok "$arm: kept $kept within [0, $freed]"; else not_ok "$arm: kept $kept, freed $freed, RSS $rl -> $rs"; fi
  jq -e '(.memory.released_bytes == .allocator.freed_bytes) and (.memory.per_gib | (.gib_released > 0) and (.kept_mib != null) and (.shootdowns_per_victim != null))' "$R" >/dev/null &&
    ok "$arm: per-GiB prices" || not_ok "$arm: memory.per_gib missing: $(jq -c .memory "$R")"
  expect_out "^memory kept: .* of the .* released still resident" "$arm: console says the memory kept"
  expect_out "^per GiB released: [0-9]+ shootdown IPIs and " "$arm: console per-GiB line"
  expect_tlb_accounting "$R" "$arm"
done

# jemalloc: the purge is the stall; without it the memory stays.
J="$TMP/jemalloc/result.json"
if [[ -s $J ]]; then
  freed=$(jq .allocator.freed_bytes "$J")
  if ((KEPT[jemalloc] * 4 <= freed)); then ok "jemalloc purge: kept ${KEPT[jemalloc]} <= 25 % of $freed"; else not_ok "jemalloc purge: kept ${KEPT[jemalloc]} of $freed"; fi
  if ! tlb_ipis_reach; then skip_check "jemalloc purge: >= 10 shootdowns: $NO_TLB_IPIS"
  elif ((RECV[jemalloc] >= 10)); then ok "jemalloc purge: ${RECV[jemalloc]} shootdowns"; else not_ok "jemalloc purge: ${RECV[jemalloc]} shootdowns"; fi
  run_cmd "$SHOOTDOWN" run --release jemalloc --allocator-purge off "${common[@]}" --out "$TMP/je-off"
  expect_rc 0 "run --release jemalloc --allocator-purge off"
  O="$TMP/je-off/result.json"
  if [[ -s $O ]]; then
    kept=$(jq .memory.kept_bytes "$O")
    recv=$(jq '.attribution.victims[0].shootdowns.received' "$O")
    echo "# jemalloc --allocator-purge off: kept $kept of $freed, $recv shootdowns (purge on: ${RECV[jemalloc]})"
    if ((kept * 4 >= freed * 3)); then ok "jemalloc no purge: kept $kept >= 75 % of $freed"; else not_ok "jemalloc no purge: kept only $kept of $freed"; fi
    if ! tlb_ipis_reach; then skip_check "jemalloc no purge: a tenth of the shootdowns with purge: $NO_TLB_IPIS"
    elif ((recv * 10 <= RECV[jemalloc])); then ok "jemalloc no purge: $recv shootdowns <= a tenth of ${RECV[jemalloc]}"; else not_ok "jemalloc no purge: $recv shootdowns vs ${RECV[jemalloc]} with purge"; fi
    jq -e '.allocator.purge_call == "" and .plan.allocator_purge == false' "$O" >/dev/null && ok "purge off recorded" || not_ok "purge off not recorded"
  fi
fi

# --allocator-conf reaches the allocator: jemalloc reads it back.
run_cmd "$SHOOTDOWN" run --release jemalloc --allocator-conf dirty_decay_ms:0 --allocator-purge off "${common[@]}" --json
expect_rc 0 "run --release jemalloc --allocator-conf dirty_decay_ms:0"
if jq -e '.allocator.settings | startswith("dirty_decay_ms:0,")' <<<"$OUT" >/dev/null; then ok "jemalloc read back dirty_decay_ms:0"; else not_ok "settings: $(jq -r .allocator.settings <<<"$OUT" 2>/dev/null)"; fi

# The reuse control beside allocator arms, in one process.
run_cmd "$SHOOTDOWN" compare --arms reuse,jemalloc,tcmalloc,glibc-malloc --trials 2 --chunk-size 64MiB --rt --trace on --json --quiet
expect_rc 0 "compare --arms reuse,jemalloc,tcmalloc,glibc-malloc"
own=$(jq '[.trials[] | select(.arm == "reuse") | .shootdowns] | add' <<<"$OUT" 2>/dev/null || echo x)
n=$(jq '[.trials[] | select(.arm == "reuse")] | length' <<<"$OUT" 2>/dev/null || echo 0)
if [[ $own == 0 ]] && ((n >= 2)); then ok "reuse control: 0 shootdowns of our own in $n trials beside the allocator arms"; else not_ok "reuse control: $own shootdowns in $n trials"; fi
finish
