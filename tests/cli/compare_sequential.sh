#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare's group-sequential early stopping (docs/compare.md "Sequential
# stopping"): a clear difference (reuse vs munmap) is decided before the
# maximum --trials, recorded with its look, z, boundary and spent alpha in
# compare.json and on the console; an A/A pair (reuse,reuse) runs to the
# maximum without declaring a difference; --sequential off runs exactly
# --trials per arm; bad values of the new options exit 2 with one line.
# Counts only: no assertion on timings.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq (scripts/install-deps.sh installs it)"

common=(--chunk-size 64MiB --quiet)
big=(--chunk-size 256MiB --quiet)  # the early-stop part: a larger release, a clearer difference on a busy machine

# Bad input: exit 2, one line naming the option and what is accepted.
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --sequential maybe "${common[@]}" --out "$TMP/bad"
expect_rc 2 "--sequential maybe"
expect_err "--sequential 'maybe'.*accepted: on, off" "names --sequential and what is accepted"
expect_err_lines 1 "one stderr line"
expect_no_file "$TMP/bad/compare.json" "no output for bad input"
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --look-every 0 "${common[@]}"
expect_rc 2 "--look-every 0"
expect_err "--look-every 0: out of range" "names --look-every"
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --spending linear "${common[@]}"
expect_rc 2 "--spending linear"
expect_err "--spending 'linear'.*accepted: pocock, obf" "names --spending"

# A clear difference stops early. munmap of 256 MiB shoots down the victim
# many times and its release window is longer; a Pocock look after 5 trials
# per arm stops when the 5 munmap trials all exceed the 5 reuse ones. Up to
# 3 seeds: on a loaded machine one seed may need a later look, but a pair
# decided at the maximum in every seed means the early stop does not work.
# Where remote flushes bypass IPIs (a PVM/KVM guest with PV TLB flush:
# doctor's pv_tlb_flush FAIL) munmap sends the victim no shootdown and is no
# clearer than reuse: an ASan run here of 2026-12-05 saw 0 shootdowns per
# release in both arms, one seed "better", two undecided. Skipped, said so.
early=0
seeds=(21 22 23)
if ! tlb_ipis_reach; then
  skip_check "early stop on reuse,munmap: $NO_TLB_IPIS"
  seeds=()
  early=1
fi
for s in "${seeds[@]}"; do
  run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --trials 20 --seed "$s" "${big[@]}" --out "$TMP/early$s"
  echo "$OUT" | head -8 | sed 's/^/# /'
  [[ "$RC" == 0 ]] || { not_ok "reuse,munmap seed $s: rc=$RC: $ERR"; continue; }
  j=$TMP/early$s/compare.json
  rows=$(jq '.trials | length' "$j")
  look=$(jq '.arms[1].sequential.stop_look // 0' "$j")
  echo "# seed $s: $rows trials, stopped at look $look"
  if jq -e '.sequential.enabled == true and .sequential.looks == [5, 10, 15, 20] and .arms[1].decision == 1
            and .arms[1].sequential.stopped == true and .arms[1].sequential.stop_look < 4
            and (.trials | length) < 40 and (.trials | length) == 2 * .arms[1].sequential.trials
            and .arms[1].sequential.alpha_spent < 0.05
            and (.arms[1].sequential.history[-1] | .stop and (.z | fabs) >= .boundary)' "$j" >/dev/null; then
    early=1
    ok "reuse,munmap seed $s: munmap decided worse at look $look of 4 ($rows of at most 40 trials)"
    expect_out "^  munmap: .* — worse than reuse" "verdict: munmap is worse"
    expect_out "^  sequential: munmap stopped at look $look of 4 \($((rows / 2)) of 20 trials per arm\): \|z\| [0-9.]+ >= [0-9.]+, alpha spent 0\.[0-9]+" \
      "console names the look, trials, z and spent alpha"
    rows_csv=$(($(wc -l < "$TMP/early$s/compare.csv") - 1))
    [[ "$rows_csv" == "$rows" ]] && ok "compare.csv: $rows_csv rows" || not_ok "compare.csv: $rows_csv rows, json $rows"
    break
  fi
  echo "# seed $s: not stopped early: $(jq -c '.arms[1].sequential' "$j")"
done
(( early )) || not_ok "reuse,munmap never stopped before the maximum in 3 seeds"

# A/A: reuse against itself runs every look and declares no difference.
# Seeds until 3 without a difference, at most 5: fails on 3 false verdicts.
# At the nominal 5 % per seed that is 0.1 % of runs. "2 of 3" failed a CI run
# of 2026-12-04 (z -2.35 and -2.79 on a busy host) while 36 seeds here gave
# no false verdict (z mean -0.06, sd 0.77): docs/compare.md "A/A validity".
same=0 false=0
for s in 1 2 3 4 5; do
  (( same < 3 && false < 3 )) || break
  run_cmd "$SHOOTDOWN" compare --arms reuse,reuse --trials 10 --seed "$s" "${common[@]}" --json
  v=$(jq -r '.arms[1].verdict' <<<"$OUT" 2>/dev/null || true)
  seqj=$(jq -c '.arms[1].sequential | {stopped, looks_taken, trials, z, boundary, alpha_spent}' <<<"$OUT" 2>/dev/null || true)
  echo "# seed $s rc=$RC: $v $seqj"
  if [[ "$RC" == 0 && "$v" == *"no detectable difference"* ]] &&
    jq -e '.arms[1].decision == 0 and .arms[1].sequential.stopped == false and .arms[1].sequential.looks_taken == 2
           and (.arms[1].sequential.alpha_spent - 0.05 | fabs) < 1e-9 and (.trials | length) == 20' <<<"$OUT" >/dev/null; then
    same=$((same + 1))
  else
    false=$((false + 1))
  fi
done
(( same >= 3 )) && ok "A/A sequential: no difference, all looks run, in $same of $((same + false)) seeds" ||
  not_ok "A/A sequential: $false of $((same + false)) seeds declared a difference"

# --sequential off: exactly --trials per arm, even for a clear difference.
run_cmd "$SHOOTDOWN" compare --arms reuse,munmap --trials 6 --sequential off --seed 21 "${common[@]}" --json
expect_rc 0 "--sequential off runs"
if jq -e '.sequential.enabled == false and (.trials | length) == 12 and (.arms[1] | has("sequential") | not)' \
  <<<"$OUT" >/dev/null; then
  ok "--sequential off: 6 trials per arm, no sequential record"
else
  not_ok "--sequential off: $(jq -c '{s: .sequential, n: (.trials | length)}' <<<"$OUT")"
fi

finish
