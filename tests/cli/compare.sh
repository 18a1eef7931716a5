#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shootdown compare end to end: a small real compare (reuse vs munmap, 5
# trials, 256 MiB) must say munmap is worse, count 0 shootdowns per release
# for reuse in every trial (compare.csv), honour a failing gate with exit 3,
# and reject bad arms/trials with exit 2. A reduced A/A check (reuse,reuse,
# 6 trials per seed; the full 40-seed check is scripts/aa_validity.sh) must
# find no detectable difference in 3 seeds before 3 false alarms (at most 5
# seeds): at a 5% false-positive rate per seed, that fails 0.1% of runs.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq (scripts/install-deps.sh installs it)"

common=(--chunk-size 256MiB --quiet)

# Bad input first (fast, exit 2, one line, no files).
run_cmd "$SHOOTDOWN" compare --arms reuse,bogus --trials 5 "${common[@]}" --out "$TMP/bad"
expect_rc 2 "unknown arm"
expect_err "unknown arm 'bogus'" "names the bad arm"
expect_err_lines 1 "one stderr line"
expect_no_file "$TMP/bad/compare.json" "no output for bad input"
run_cmd "$SHOOTDOWN" compare --arms reuse --trials 5 "${common[@]}"
expect_rc 2 "a single arm"
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --trials 1 "${common[@]}"
expect_rc 2 "--trials 1"
expect_err "--trials 1: out of range" "names --trials"
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --trials abc "${common[@]}"
expect_rc 2 "--trials abc"
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --fail-if 'munmap.speed > reuse.stall_us' "${common[@]}"
expect_rc 2 "gate with an unknown metric"
run_cmd "$SHOOTDOWN" compare --arms reuse,journal-unmap "${common[@]}"
expect_rc 2 "journal arm without --workload journal"
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --trigger enter "${common[@]}"
expect_rc 2 "--trigger enter"

# The real thing, with a gate that must fail.
# --sequential off: this part checks the fixed design (5 trials per arm, 10 rows).
# Five trials per arm is the smallest design that can reach p < 0.05; on a busy
# host one preempted reuse trial can hide even a 30x difference in one seed
# (CI, stop 22: munmap +16 ms per release, yet one seed's CI reached down to
# the allowance). So a gate must fail in one of up to 3 seeds, and every seed's
# exit code must agree with the gate it printed.
seed1="" last_seed=""
for s in 11 12 13; do
  last_seed=$s  # the seed whose results stay in $TMP/cmp
  run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --trials 5 --sequential off --seed "$s" "${common[@]}" --out "$TMP/cmp" \
    --fail-if 'munmap.stall_us > reuse.stall_us'
  echo "# seed $s rc=$RC: $(grep -E '^gate ' <<<"$OUT" || true)"
  if [[ "$RC" == 3 ]]; then seed1=$s; break; fi
  [[ "$RC" == 0 ]] || break  # a runtime failure or bad input: report it below
done
# Without shootdown IPIs (a PVM or Hyper-V guest flushes remote TLBs itself)
# munmap's cost to the victim is only its page-freeing and memory traffic:
# detectable in most seeds, not in every one under ASan (CI, stop 23: 3 seeds
# undecided). There the effect checks are skipped with the reason, and the
# exit code must still agree with the gate line printed.
effect=1
if [[ "$RC" == 0 && -z "$seed1" ]] && ! tlb_ipis_reach; then effect=0; fi
echo "$OUT" | sed 's/^/# /'
if ((effect)); then
  expect_rc 3 "gate 'munmap.stall_us > reuse.stall_us' fails (seed ${seed1:-none of 11-13})"
  expect_out "^  munmap: \+[0-9.]+ µs stall per release \[CI [0-9.]+, [0-9.]+\].* — worse than reuse" "verdict: munmap is worse"
  expect_out "^gate FAILED: munmap.stall_us > reuse.stall_us" "gate reported"
else
  skip_check "gate 'munmap.stall_us > reuse.stall_us' fails: not in seeds 11-13; $NO_TLB_IPIS"
  skip_check "verdict: munmap is worse: $NO_TLB_IPIS"
  expect_out "^gate passed: munmap.stall_us > reuse.stall_us" "rc=0 and the gate line says passed"
fi
expect_file "$TMP/cmp/compare.json" "compare.json written"
expect_file "$TMP/cmp/compare.csv" "compare.csv written"
expect_file "$TMP/cmp/compare.html" "compare.html written"
rows=$(($(wc -l < "$TMP/cmp/compare.csv") - 1))
[[ "$rows" == 10 ]] && ok "compare.csv: one row per trial (10)" || not_ok "compare.csv has $rows rows"
# Column of shootdowns by header name; reuse must be 0 in every trial.
col=$(head -1 "$TMP/cmp/compare.csv" | tr ',' '\n' | grep -nx shootdowns | cut -d: -f1)
bad=$(awk -F, -v c="$col" 'NR > 1 && $2 == "reuse" && $c + 0 != 0' "$TMP/cmp/compare.csv" | wc -l)
src=$(awk -F, 'NR == 2 { print $7 }' "$TMP/cmp/compare.csv")
[[ "$bad" == 0 ]] && ok "reuse: 0 shootdowns/release in every trial (source: $src)" || not_ok "reuse: $bad trials with shootdowns (source: $src)"
mun=$(awk -F, -v c="$col" 'NR > 1 && $2 == "munmap" && $c + 0 > 0' "$TMP/cmp/compare.csv" | wc -l)
# Not every trial: when the victim CPU runs another process at that moment
# (a loaded machine), it is not in this mm's cpumask and gets no IPI.
if tlb_ipis_reach; then
  (( mun >= 3 )) && ok "munmap: shootdowns in $mun of 5 trials" || not_ok "munmap: shootdowns in only $mun of 5 trials"
else
  skip_check "munmap: shootdowns in >= 3 of 5 trials: $NO_TLB_IPIS"
fi
if jq -e --argjson e "$effect" '.kind == "compare" and .schema_version == 1 and (.arms | length) == 2
          and (.trials | length) == 10
          and (if $e == 1 then .arms[1].vs_control.stall_us.ci[0] > 0 and .gate_failed == true else .gate_failed == false end)' \
     "$TMP/cmp/compare.json" >/dev/null; then
  ok "compare.json: arms, trials, gate$( ((effect)) && echo ', CI above 0')"; else not_ok "compare.json content"; fi
if grep -q 'class="trial"' "$TMP/cmp/compare.html" && grep -q 'data-chart="stall_us"' "$TMP/cmp/compare.html"; then
  ok "compare.html has strip/box plots"; else not_ok "compare.html lacks plots"; fi
# The trial order is the seeded randomized block design: same seed, same order.
order1=$(jq -c '[.trials[].arm]' "$TMP/cmp/compare.json")
# --max-regression: the same rule as above, one of up to 3 seeds, starting
# with the seed of the results above (its trial order must repeat).
mr_ok="" mr_bad="" order2=""
for s in $last_seed 21 22; do
  run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --trials 5 --sequential off --seed "$s" "${common[@]}" --json --trace off --max-regression 10
  [[ -z "$order2" ]] && order2=$(jq -c '[.trials[].arm]' <<<"$OUT" 2>/dev/null || echo none)
  gate=$(jq -r '[.gates[]? | select(.expr | startswith("--max-regression"))][0] | "\(.failed) \(.detail)"' <<<"$OUT" 2>/dev/null || echo "no json")
  echo "# seed $s rc=$RC: $gate"
  # The exit code must say what the gate says: 3 when it failed, 0 when not.
  if [[ "$RC" == 3 && "$gate" == true* ]]; then mr_ok=$s; break; fi
  [[ "$RC" == 0 && "$gate" == false* ]] || mr_bad="seed $s: rc=$RC with gate '$gate'; stderr: $ERR"
  [[ -n "$mr_bad" ]] && break
done
if [[ -n "$mr_ok" ]]; then ok "--max-regression 10 fails for munmap (rc=3, seed $mr_ok)"
elif [[ -n "$mr_bad" ]]; then not_ok "--max-regression 10: exit code disagrees with the gate: $mr_bad"
elif ! tlb_ipis_reach; then skip_check "--max-regression 10 fails for munmap: not in 3 seeds (exit codes agreed with the gate); $NO_TLB_IPIS"
else not_ok "--max-regression 10 never failed for munmap in 3 seeds"; fi
[[ "$order1" == "$order2" ]] && ok "same seed, same trial order" || not_ok "order differs: $order1 vs $order2"

# Each finished trial is on disk at once: SIGKILL (no handler runs) after two
# trials leaves compare.json marked in progress with the trials done so far.
"$SHOOTDOWN" compare --arms reuse,munmap --trials 20 --seed 3 "${common[@]}" --out "$TMP/killed" >/dev/null 2>&1 &
cpid=$!
for _ in $(seq 1 600); do
  n=$(jq '.trials | length' "$TMP/killed/compare.json" 2>/dev/null || echo 0)
  (( n >= 2 )) && break
  sleep 0.1
done
kill -KILL "$cpid" 2>/dev/null || true
wait "$cpid" 2>/dev/null || true
if jq -e '.complete == false and (.incomplete_reason | startswith("in progress")) and (.trials | length) >= 2' \
    "$TMP/killed/compare.json" >/dev/null 2>&1; then
  ok "SIGKILL mid-compare keeps the finished trials ($(jq '.trials | length' "$TMP/killed/compare.json") marked in progress)"
else
  not_ok "no partial compare.json after SIGKILL: $(head -c 300 "$TMP/killed/compare.json" 2>/dev/null)"
fi
[[ -s "$TMP/killed/compare.csv" ]] && ok "partial compare.csv kept" || not_ok "no partial compare.csv"

# Reduced A/A: reuse,reuse, seeds until 3 without a difference, at most 5
# (scripts/aa_validity.sh runs 40); 3 false verdicts fail (0.1 % of runs at
# the nominal 5 % per seed).
same=0 false=0
for s in 1 2 3 4 5; do
  (( same < 3 && false < 3 )) || break
  run_cmd "$SHOOTDOWN" compare --arms reuse,reuse --trials 6 --seed "$s" "${common[@]}"
  v=$(grep -E '^  reuse#2: ' <<<"$OUT" || true)
  echo "# seed $s rc=$RC: $v"
  if [[ "$RC" == 0 && "$v" == *"no detectable difference"* ]]; then same=$((same + 1)); else false=$((false + 1)); fi
done
(( same >= 3 )) && ok "A/A: no detectable difference in $same of $((same + false)) seeds" ||
  not_ok "A/A: $false of $((same + false)) seeds declared a difference"

finish
