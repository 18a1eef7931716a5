#!/usr/bin/env bash
# Tracing overhead: baseline p50 per batch with --trace on vs --trace off,
# alternating runs on the same CPUs in one session (N pairs, default 5).
# Prints each pair and the ratio of the medians (target: within 1%).
# Usage: scripts/trace_overhead.sh [N] [shootdown binary]
set -euo pipefail
N=${1:-5}
BIN=${2:-build/src/shootdown}
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
[[ -x $BIN ]] || { echo "no binary at $BIN (make build first)" >&2; exit 2; }
args=(run --release reuse --chunk-size 512MiB --trigger after=1s --after 100ms --quiet --json)
on=(); off=()
for ((i = 1; i <= N; i++)); do
  a=$("$BIN" "${args[@]}" --trace on </dev/null | jq '.victims[0].phases.baseline.per_batch_ns.p50')
  b=$("$BIN" "${args[@]}" --trace off </dev/null | jq '.victims[0].phases.baseline.per_batch_ns.p50')
  echo "pair $i: baseline p50 trace on $a ns, trace off $b ns"
  on+=("$a"); off+=("$b")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
mon=$(median "${on[@]}"); moff=$(median "${off[@]}")
awk -v a="$mon" -v b="$moff" 'BEGIN { printf "median baseline p50: trace on %.1f ns, off %.1f ns, ratio on/off %.4f (%+.2f%%)\n", a, b, a / b, (a / b - 1) * 100 }'
