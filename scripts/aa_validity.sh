#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A/A validity of `shootdown compare` (issue 6): run `compare --arms
# reuse,reuse` over SEEDS seeds and report the fraction that says "no
# detectable difference". Must be >= 95% (exit 1 otherwise).
#   [TRIALS=20] [CHUNK=256MiB] scripts/aa_validity.sh [SEEDS=40] [extra compare options...]
# Defaults: 20 trials per arm (compare's default), 256 MiB chunks (~20 s a
# seed here; the statistic, not the chunk size, is what is being validated).
# compare's defaults include sequential stopping (--trials is the maximum);
# pass --sequential off to validate the fixed design. bench/compare_aa.sh
# does the same with any arm and counts the trials run.
# A reduced version (3 seeds) runs in `make test` via tests/cli/compare.sh.
set -euo pipefail
SHOOTDOWN=${SHOOTDOWN:-build/src/shootdown}
SEEDS=${1:-40}
TRIALS=${TRIALS:-20}
CHUNK=${CHUNK:-256MiB}
shift || true
[[ -x "$SHOOTDOWN" ]] || { echo "aa_validity: $SHOOTDOWN not found (make build, or set SHOOTDOWN)" >&2; exit 1; }
same=0
for ((s = 1; s <= SEEDS; s++)); do
  out=$("$SHOOTDOWN" compare --arms reuse,reuse --trials "$TRIALS" --chunk-size "$CHUNK" --seed "$s" --quiet "$@") || {
    echo "aa_validity: seed $s: compare failed (rc=$?)" >&2; exit 1; }
  line=$(grep -E '^  reuse#2: ' <<<"$out" || true)
  if [[ "$line" == *"no detectable difference"* ]]; then same=$((same + 1)); fi
  echo "seed $s: $line"
done
pct=$(awk -v a="$same" -v n="$SEEDS" 'BEGIN { printf "%.1f", 100 * a / n }')
echo "A/A: no detectable difference in $same of $SEEDS seeds ($pct%), $TRIALS trials per arm, $CHUNK chunks"
awk -v a="$same" -v n="$SEEDS" 'BEGIN { exit !(a >= 0.95 * n) }' || { echo "A/A validity FAILED (< 95%)"; exit 1; }
echo "A/A validity passed (>= 95%)"
