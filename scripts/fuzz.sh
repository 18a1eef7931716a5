#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (ASan+UBSan) in build-fuzz/
# and runs each one briefly on its seed corpus (fuzz/corpus/<target>/).
# Usage: scripts/fuzz.sh [seconds-per-target]   (default 30)
# New inputs found go to a temporary corpus, not into the tree; a crash leaves
# its reproducer in build-fuzz/artifacts/ and fails the script.
set -euo pipefail
secs=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh)" >&2; exit 1; }

CC=clang CXX=clang++ cmake -S "$root/fuzz" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2

mkdir -p "$build/artifacts"
status=0
for target in fuzz_hdr_decode fuzz_hlog_read; do
  work=$(mktemp -d)
  echo "fuzz.sh: $target for ${secs}s"
  if ! "$build/$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
      -artifact_prefix="$build/artifacts/$target-" -print_final_stats=1 \
      "$work" "$root/fuzz/corpus/$target" 2>"$build/$target.log"; then
    echo "fuzz.sh: $target FAILED; see $build/$target.log and $build/artifacts/" >&2
    tail -40 "$build/$target.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/$target.log" | tail -2 || true
  fi
  rm -rf "$work"
done
exit $status
