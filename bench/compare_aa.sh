#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A/A validity of compare's sequential stopping (issue 16): compare an arm
# with itself over SEEDS seeds and count false verdicts (a difference declared
# on the headline metric, stall_us). Must stay <= 5 %.
#   [ARM=reuse] [TRIALS=20] [CHUNK=64MiB] [FIRST=1] bench/compare_aa.sh [SEEDS=40] [extra compare options...]
# Seeds FIRST..FIRST+SEEDS-1 (FIRST=21 extends an earlier 20-seed run).
# Default is early stopping on (compare's default); pass --sequential off to
# measure the fixed design instead. Prints one line per seed and a summary:
# false verdicts, trials run per seed (mean), wall time. Counts, not timings:
# fine on a busy machine.
set -euo pipefail
SHOOTDOWN=${SHOOTDOWN:-build/src/shootdown}
SEEDS=${1:-40}
ARM=${ARM:-reuse}
TRIALS=${TRIALS:-20}
CHUNK=${CHUNK:-64MiB}
FIRST=${FIRST:-1}
shift || true
[[ -x "$SHOOTDOWN" ]] || { echo "compare_aa: $SHOOTDOWN not found (make build, or set SHOOTDOWN)" >&2; exit 1; }
command -v jq >/dev/null || { echo "compare_aa: needs jq" >&2; exit 1; }
false_verdicts=0 trials=0
t0=$(date +%s.%N)
for ((s = FIRST; s < FIRST + SEEDS; s++)); do
  out=$("$SHOOTDOWN" compare --arms "$ARM,$ARM" --trials "$TRIALS" --chunk-size "$CHUNK" --seed "$s" --quiet --json "$@") || {
    echo "compare_aa: seed $s: compare failed (rc=$?)" >&2; exit 1; }
  d=$(jq '.arms[1].decision' <<<"$out")
  n=$(jq '.trials | length' <<<"$out")
  trials=$((trials + n))
  (( d != 0 )) && false_verdicts=$((false_verdicts + 1))
  echo "seed $s: decision $d, $n trials, $(jq -r '.arms[1].verdict' <<<"$out")"
done
t1=$(date +%s.%N)
awk -v f="$false_verdicts" -v n="$SEEDS" -v t="$trials" -v arm="$ARM" -v tr="$TRIALS" -v ch="$CHUNK" \
  -v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v extra="$*" 'BEGIN {
  printf "A/A %s,%s (%s, up to %d trials per arm%s): false verdicts %d of %d seeds (%.1f%%), %.1f trials per seed, %.0f s\n",
    arm, arm, ch, tr, (extra == "" ? "" : ", " extra), f, n, 100 * f / n, t / n, w }'
awk -v f="$false_verdicts" -v n="$SEEDS" 'BEGIN { exit !(f <= 0.05 * n) }' || { echo "A/A validity FAILED (> 5%)"; exit 1; }
echo "A/A validity passed (<= 5%)"
