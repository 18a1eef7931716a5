#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Time to a verdict (issue 16 must-show): wall time of
#   compare --arms reuse,munmap  with sequential stopping (default, up to TRIALS)
# against the fixed design
#   compare --arms reuse,munmap --trials TRIALS --sequential off
# in the same session, alternating REPS times (ABAB... so drift hits both),
# with the same seeds. Requires the median ratio sequential/fixed <= 1/3.
#   [TRIALS=20] [CHUNK=1GiB] [REPS=3] bench/compare_sequential.sh [extra compare options...]
# Run on a quiet machine: a parallel build on the shared CPUs changes both
# wall times, and the ratio only means something when the load is the same.
set -euo pipefail
SHOOTDOWN=${SHOOTDOWN:-build/src/shootdown}
TRIALS=${TRIALS:-20}
CHUNK=${CHUNK:-1GiB}
REPS=${REPS:-3}
[[ -x "$SHOOTDOWN" ]] || { echo "compare_sequential: $SHOOTDOWN not found (make build, or set SHOOTDOWN)" >&2; exit 1; }
command -v jq >/dev/null || { echo "compare_sequential: needs jq" >&2; exit 1; }
echo "# $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), chunk $CHUNK, up to $TRIALS trials per arm"
run() {  # mode seed -> "wall_s trials decision stop_look"
  local mode=$1 seed=$2 t0 t1 out
  t0=$(date +%s.%N)
  out=$("$SHOOTDOWN" compare --arms reuse,munmap --trials "$TRIALS" --chunk-size "$CHUNK" --seed "$seed" \
    --sequential "$mode" --quiet --json "${@:3}")
  t1=$(date +%s.%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $(jq '.trials | length' <<<"$out") \
$(jq '.arms[1].decision' <<<"$out") $(jq '.arms[1].sequential.stop_look // "-"' <<<"$out")"
}
seq_t=() fix_t=()
for ((r = 1; r <= REPS; r++)); do
  seed=$((100 + r))
  read -r ws ns ds ls < <(run on "$seed" "$@")
  read -r wf nf df _ < <(run off "$seed" "$@")
  echo "rep $r (seed $seed): sequential ${ws} s, $ns trials, decision $ds, stopped at look $ls | fixed ${wf} s, $nf trials, decision $df | load $(cut -d' ' -f1 /proc/loadavg)"
  seq_t+=("$ws") fix_t+=("$wf")
done
med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ms=$(med "${seq_t[@]}") mf=$(med "${fix_t[@]}")
ratio=$(awk -v a="$ms" -v b="$mf" 'BEGIN { printf "%.3f", a / b }')
echo "median wall time: sequential $ms s, fixed $mf s, ratio $ratio (target <= 0.333)"
awk -v r="$ratio" 'BEGIN { exit !(r <= 1 / 3) }' && echo "time to verdict: passed" || { echo "time to verdict: FAILED (> 1/3)"; exit 1; }
