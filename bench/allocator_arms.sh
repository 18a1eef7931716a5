#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The allocator arms side by side (issue 16, docs/mitigations.md): each
# allocator with its give-back call (--allocator-purge on) and without it,
# plus munmap, madvise-free and reuse for reference, one run each, printing a
# markdown row per run from result.json (the kernel's counts, the stall of
# samples labelled tlb-shootdown, the memory kept).
#   [CHUNK=1GiB] bench/allocator_arms.sh [extra run options...]
# Run on a quiet machine: stall and release times are timings.
set -euo pipefail
SHOOTDOWN=${SHOOTDOWN:-build/src/shootdown}
[[ -x "$SHOOTDOWN" ]] || { echo "allocator_arms: $SHOOTDOWN not found (make build, or set SHOOTDOWN)" >&2; exit 1; }
command -v jq >/dev/null || { echo "allocator_arms: needs jq" >&2; exit 1; }
CHUNK=${CHUNK:-1GiB}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "# $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), chunk $CHUNK, $(date -u +%FT%TZ)"
echo "| arm | give-back call | released | release | shootdown IPIs to the victim | victim stall | IPIs per GiB | stall per GiB | kept per GiB |"
echo "|---|---|---|---|---|---|---|---|---|"
for spec in glibc-malloc:on glibc-malloc:off jemalloc:on jemalloc:off tcmalloc:on tcmalloc:off mimalloc:on mimalloc:off munmap madvise-free reuse; do
  arm=${spec%%:*}
  opts=()
  [[ $spec == *:* ]] && opts=(--allocator-purge "${spec#*:}")
  "$SHOOTDOWN" run --release "$arm" "${opts[@]}" --chunk-size "$CHUNK" --trigger after=1s --after 1s --trace on --rt \
    --quiet --out "$TMP/$arm-${spec#*:}" "$@" >/dev/null 2>&1 || { echo "| $spec | run failed |"; continue; }
  jq -r --arg spec "$spec" '
    def ms: . / 1e6 | (. * 100 | round) / 100;
    "| `\(.plan.release)` | \(if .allocator then (if .allocator.purge_call == "" then "none" else "`" + .allocator.purge_call + "`" end) else "–" end) | \(.memory.released_bytes / 1048576 | round) MiB | \(.releases[0].duration_ns | ms) ms | \(.summary.victims[0].shootdowns) | \(.summary.victims[0].stall_ns | ms) ms | \(.memory.per_gib.shootdowns_per_victim | round) | \(.memory.per_gib.stall_ms_per_victim * 100 | round / 100) ms | \(.memory.per_gib.kept_mib | round) MiB |"' \
    "$TMP/$arm-${spec#*:}/result.json"
done
