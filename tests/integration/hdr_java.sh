#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-checks our .hlog/.hgrm against the HdrHistogram Java reference:
#  1. hdr_tool writes a deterministic multi-interval log with our code;
#  2. HistogramLogProcessor (-outputValueUnitRatio 1000, our .hgrm unit) must
#     print exactly our .hgrm for the untagged and for the tagged intervals;
#  3. HdrCheck.java (HistogramLogReader) must decode per-interval count, min,
#     max, percentiles, mean, stddev and timestamps equal to ours, and to the
#     values computed from the data before encoding.
#  4. Real output: with a directory argument (or SHOOTDOWN_HDR_DIR) holding
#     victim.hlog/victim.hgrm, or when `shootdown run` supports --out, the same
#     checks run on that output, and HdrHistogram's tools must be able to
#     place every interval in time: per tag, HistogramLogProcessor
#     prints one line per interval with strictly increasing times (it prints
#     each interval's end, start + length) and HistogramLogReader's start
#     timestamps (ms) strictly increase.
# Usage: hdr_java.sh [DIR]
source "$TEST_LIB"

"$SHOOTDOWN_SRC"/scripts/install-deps.sh --with-integration >&2 || skip "cannot install the Java reference (install-deps.sh --with-integration failed)"
command -v java >/dev/null || skip "java not found after install-deps"
command -v javac >/dev/null || skip "javac not found after install-deps (default-jdk-headless)"
JAR=""
for j in /usr/share/java/HdrHistogram.jar /usr/share/java/hdrhistogram.jar; do
  [[ -r $j ]] && JAR=$j && break
done
[[ -n $JAR ]] || skip "HdrHistogram jar not found in /usr/share/java (libhdrhistogram-java)"
TOOL="$SHOOTDOWN_BUILD/tests/integration/hdr_tool"
[[ -x $TOOL ]] || skip "hdr_tool not built at $TOOL"

set -e
javac -cp "$JAR" -d "$TMP/classes" "$SHOOTDOWN_SRC/tests/integration/HdrCheck.java"
set +e

processor() { java -cp "$JAR" org.HdrHistogram.HistogramLogProcessor "$@"; }
# HistogramLogProcessor prints its own "#[StartTime: ..." line before the
# distribution that outputPercentileDistribution() prints; ours has none.
strip_start() { grep -v '^#\[StartTime: '; }

compare_file() {  # compare_file EXPECTED ACTUAL WHAT
  if diff -u "$1" "$2" >"$TMP/diff"; then
    ok "$3"
  else
    not_ok "$3"
    head -30 "$TMP/diff" | sed 's/^/#   /'
  fi
}

check_log() {  # check_log LABEL HLOG HGRM [TAG]
  local label=$1 hlog=$2 hgrm=$3 tag=${4:-}
  local tagargs=()
  [[ -n $tag ]] && tagargs=(-tag "$tag")
  processor -i "$hlog" -outputValueUnitRatio 1000 "${tagargs[@]}" >"$TMP/java.hgrm" 2>"$TMP/java.err"
  local rc=$?
  if ((rc != 0)); then
    not_ok "$label: HistogramLogProcessor failed (rc=$rc): $(head -3 "$TMP/java.err")"
    return
  fi
  strip_start <"$TMP/java.hgrm" >"$TMP/java.stripped.hgrm"
  compare_file "$TMP/java.stripped.hgrm" "$hgrm" "$label: HistogramLogProcessor output equals our .hgrm${tag:+ (tag $tag)}"
}

check_stats() {  # check_stats LABEL HLOG [EXPECTED_STATS]
  local label=$1 hlog=$2 expected=${3:-}
  if ! java -cp "$JAR:$TMP/classes" HdrCheck "$hlog" >"$TMP/java.stats" 2>"$TMP/java.err"; then
    not_ok "$label: HdrCheck failed: $(head -3 "$TMP/java.err")"
    return
  fi
  if ! "$TOOL" stats "$hlog" >"$TMP/ours.stats" 2>"$TMP/ours.err"; then
    not_ok "$label: our reader failed: $(cat "$TMP/ours.err")"
    return
  fi
  local n
  n=$(wc -l <"$TMP/java.stats")
  if ((n > 0)); then ok "$label: Java reads $n intervals"; else not_ok "$label: Java read no interval"; fi
  compare_file "$TMP/java.stats" "$TMP/ours.stats" "$label: per-interval count/min/max/percentiles/mean decoded by Java equal ours"
  if [[ -n $expected ]]; then
    compare_file "$expected" "$TMP/java.stats" "$label: Java-decoded intervals equal the data before encoding"
  fi
}

# Strictly increasing interval times, as HdrHistogram's Java tools read them.
check_times() {  # check_times LABEL HLOG
  local label=$1 hlog=$2 tags tag n_log n_out bad
  tags=$(grep -o '^Tag=cpu[0-9]*,' "$hlog" | sort -u | sed 's/^Tag=//; s/,$//')
  for tag in "" $tags; do
    local tagargs=()
    [[ -n $tag ]] && tagargs=(-tag "$tag")
    if ! processor -csv -i "$hlog" -o "$TMP/intervals.csv" -outputValueUnitRatio 1000 "${tagargs[@]}" \
      >"$TMP/proc.out" 2>&1; then
      not_ok "$label: HistogramLogProcessor -csv failed${tag:+ (tag $tag)}: $(head -3 "$TMP/proc.out")"
      continue
    fi
    if [[ -n $tag ]]; then n_log=$(grep -c "^Tag=$tag," "$hlog"); else n_log=$(grep -c '^[0-9]' "$hlog"); fi
    n_out=$(grep -c '^[0-9]' "$TMP/intervals.csv")
    bad=$(awk -F, '/^[0-9]/ { if (n++ && $1 + 0 <= prev) { print NR ": " prev " then " $1; exit } prev = $1 + 0 }' \
      "$TMP/intervals.csv")
    if ((n_out == n_log && n_out > 1)) && [[ -z $bad ]]; then
      ok "$label: HistogramLogProcessor places all $n_out intervals${tag:+ of $tag} at strictly increasing times"
    else
      not_ok "$label: HistogramLogProcessor${tag:+ (tag $tag)}: $n_out of $n_log intervals, first repeat: ${bad:-none}"
    fi
  done
  # HdrCheck (HistogramLogReader): start timestamps per tag ("-" = untagged).
  if java -cp "$JAR:$TMP/classes" HdrCheck "$hlog" >"$TMP/java.times" 2>"$TMP/java.err"; then
    bad=$(awk '$1 !~ /\./ { if (($1 in prev) && $2 + 0 <= prev[$1] + 0) { print $1 ": " prev[$1] " then " $2; exit } prev[$1] = $2 }' \
      "$TMP/java.times")
    if [[ -z $bad ]]; then
      ok "$label: HistogramLogReader start timestamps strictly increase per victim and combined"
    else
      not_ok "$label: HistogramLogReader start timestamps repeat: $bad"
    fi
  else
    not_ok "$label: HdrCheck failed: $(head -3 "$TMP/java.err")"
  fi
}

# 1-3: synthetic data.
mkdir -p "$TMP/gen"
if "$TOOL" gen "$TMP/gen"; then ok "hdr_tool wrote synthetic.hlog"; else not_ok "hdr_tool gen failed"; finish; fi
check_log synthetic "$TMP/gen/synthetic.hlog" "$TMP/gen/synthetic.hgrm"
check_log synthetic "$TMP/gen/synthetic.hlog" "$TMP/gen/synthetic.victim1.hgrm" victim1
check_stats synthetic "$TMP/gen/synthetic.hlog" "$TMP/gen/synthetic.stats"
# Our reader's .hgrm of the log equals what the writer produced from the data.
"$TOOL" hgrm "$TMP/gen/synthetic.hlog" >"$TMP/reread.hgrm"
compare_file "$TMP/gen/synthetic.hgrm" "$TMP/reread.hgrm" "synthetic: our reader round-trips the log"

# 4: real output of `shootdown run --out DIR`.
real_dir=${1:-${SHOOTDOWN_HDR_DIR:-}}
if [[ -z $real_dir && -x ${SHOOTDOWN:-} ]] && "$SHOOTDOWN" run --help 2>&1 | grep -q -- '--out'; then
  real_dir="$TMP/run"
  timeout 300 "$SHOOTDOWN" run --out "$real_dir" </dev/null >"$TMP/run.out" 2>&1 || echo "# shootdown run --out exited non-zero: $(tail -3 "$TMP/run.out")"
fi
if [[ -n $real_dir && -s $real_dir/victim.hlog ]]; then
  check_stats "real ($real_dir)" "$real_dir/victim.hlog"
  check_times "real ($real_dir)" "$real_dir/victim.hlog"
  if [[ -s $real_dir/victim.hgrm ]]; then
    check_log "real ($real_dir)" "$real_dir/victim.hlog" "$real_dir/victim.hgrm"
  else
    not_ok "real ($real_dir): victim.hgrm missing next to victim.hlog"
  fi
else
  echo "# no real victim.hlog to check (pass a DIR, set SHOOTDOWN_HDR_DIR, or implement run --out)"
fi

finish
