#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 19 must-show: peak RSS, post-processing time and output size of
# `run` for measured spans of 10 s, 60 s and 10 min, in one session.
#   [SPANS="10s 60s 10m"] [CHUNK=256MiB] [MEMORY_LIMIT=] [SHAPE=baseline|after|repeat] bench/long_run.sh [extra run options...]
# Each span is `run --release munmap --chunk-size CHUNK` (plus --memory-limit
# MEMORY_LIMIT when set) shaped by SHAPE: baseline (default) `--trigger
# after=SPAN --after 1s`, a long wait before one release; after `--trigger
# after=2s --after SPAN`, a long after phase; repeat `--trigger after=2s
# --repeat N --every 1s --after 1s`, one release a second for SPAN. Measured per run:
# wall time, peak RSS (getrusage of the child), peak RSS beyond the chunks
# (A and one B per victim), post-processing (from the tool's "analysing"
# phase line to its exit: trace drain, conversion, analysis, files), the
# --out size, intervals and kernel events. The targets: RSS beyond the
# chunks flat within 10 % across the spans, post-processing < 5 s each;
# exit 1 when either fails (a measurement, so run it on a quiet machine).
set -euo pipefail
SHOOTDOWN=${SHOOTDOWN:-build/src/shootdown}
SPANS=${SPANS:-10s 60s 10m}
CHUNK=${CHUNK:-256MiB}
SHAPE=${SHAPE:-baseline}
secs() {  # 10s, 60s, 10m, 1h -> seconds
  local v=${1%[smh]}
  case $1 in *h) echo $((v * 3600)) ;; *m) echo $((v * 60)) ;; *) echo "$v" ;; esac
}
shape_args() {
  case $SHAPE in
    baseline) echo "--trigger after=$1 --after 1s" ;;
    after) echo "--trigger after=2s --after $1" ;;
    repeat) echo "--trigger after=2s --repeat $(secs "$1") --every 1s --after 1s" ;;
    *) echo "long_run: SHAPE=$SHAPE: expected baseline, after or repeat" >&2; exit 2 ;;
  esac
}
shape_args 1s >/dev/null
[[ -x "$SHOOTDOWN" ]] || { echo "long_run: $SHOOTDOWN not found (make build, or set SHOOTDOWN)" >&2; exit 1; }
command -v jq >/dev/null || { echo "long_run: needs jq" >&2; exit 1; }
OUT=$(mktemp -d /tmp/shootdown-long.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
extra=()
[[ -n "${MEMORY_LIMIT:-}" ]] && extra+=(--memory-limit "$MEMORY_LIMIT")
echo "# $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), chunk $CHUNK${MEMORY_LIMIT:+, --memory-limit $MEMORY_LIMIT}, shape $SHAPE, $(date -u '+%F %T') UTC"
printf '%-6s %5s %8s %10s %12s %9s %9s %10s %9s\n' span rc wall_s peak_MiB beyond_MiB post_s out_MB intervals events
rows=()
for span in $SPANS; do
  d=$OUT/$span
  # rc wall_s maxrss_kib post_s (post: from the "analysing" line to exit)
  read -ra shape <<<"$(shape_args "$span")"
  read -r rc wall kb post < <(python3 - "$d.log" "$SHOOTDOWN" run --release munmap --chunk-size "$CHUNK" \
      "${shape[@]}" --out "$d" "${extra[@]}" "$@" <<'PY'
import resource, subprocess, sys, time
log = open(sys.argv[1], "w")
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[2:], stdout=log, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
ta = None
for line in p.stderr:
    log.write(line)
    if ta is None and line.startswith("shootdown: analysing"):
        ta = time.monotonic()
rc = p.wait()
t1 = time.monotonic()
kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(rc, f"{t1 - t0:.1f}", kb, f"{t1 - ta:.2f}" if ta else "nan")
PY
)
  R=$d/result.json
  chunks=0 size=0 intervals=- events=-
  if [[ -f $R ]]; then
    chunks=$(jq '.plan.chunk_size * (1 + (.plan.victim_cpus | length))' "$R")
    intervals=$(jq '.intervals | length' "$R")
    events=$(jq '[.trace.counts[]?.count] | add // 0' "$R")
    size=$(du -sb "$d" | cut -f1)
  fi
  beyond=$(( kb / 1024 - chunks / 1048576 ))
  printf '%-6s %5s %8s %10s %12s %9s %9.1f %10s %9s\n' "$span" "$rc" "$wall" $((kb / 1024)) "$beyond" "$post" \
    "$(awk -v b="$size" 'BEGIN { print b / 1e6 }')" "$intervals" "$events"
  rows+=("$rc $beyond $post")
done
printf '%s\n' "${rows[@]}" | awk '
  { if ($1 != 0) bad = bad " rc=" $1; b[NR] = $2; if ($3 == "nan" || $3 + 0 >= 5) slow = slow " " $3 "s" }
  END {
    lo = b[1]; hi = b[1]; for (i = 2; i <= NR; i++) { if (b[i] < lo) lo = b[i]; if (b[i] > hi) hi = b[i] }
    flat = lo > 0 && (hi - lo) / lo <= 0.10
    printf "RSS beyond the chunks: %d..%d MiB (%s within 10 %%); post-processing %s\n", lo, hi, flat ? "flat" : "NOT flat", slow == "" ? "< 5 s each" : "over 5 s:" slow
    exit !(flat && slow == "" && bad == "")
  }'
