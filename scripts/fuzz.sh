#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets in fuzz/ with clang (ASan+UBSan) in build-fuzz/
# and runs each one on its seed corpus (fuzz/corpus/<target>/).
# Usage: scripts/fuzz.sh [seconds-per-target] [target...]   (default 30 s, every target)
#   make fuzz       short smoke of every target (FUZZ_SECONDS, default 10)
#   make fuzz-long  600 s per target; the figures go to build-fuzz/summary.tsv
# New inputs found go to build-fuzz/corpus/<target>/ (kept between runs, never
# into the tree); a crash leaves its reproducer in build-fuzz/artifacts/ and
# fails the script. One summary line per target: executions, coverage (cov =
# edges, ft = features), corpus size, seconds.
set -euo pipefail
secs=${1:-30}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh)" >&2; exit 1; }

# The target list lives in fuzz/CMakeLists.txt (SHOOTDOWN_FUZZ_TARGETS).
mapfile -t all < <(sed -n '/^set(SHOOTDOWN_FUZZ_TARGETS/,/)/p' "$root/fuzz/CMakeLists.txt" | grep -o 'fuzz_[a-z0-9_]*')
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")

export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
CC=clang CXX=clang++ cmake -S "$root/fuzz" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target "${targets[@]}"

mkdir -p "$build/artifacts"
summary="$build/summary.tsv"
[[ -f $summary ]] || printf 'date\ttarget\tseconds\texecutions\tcov\tft\tcorpus\tresult\n' >"$summary"
status=0
for target in "${targets[@]}"; do
  work="$build/corpus/$target"
  mkdir -p "$work"
  max_len=16384
  [[ $target == fuzz_elf_symbols ]] && max_len=65536
  # libtraceevent (not ours) leaks a few bytes on some malformed formats.
  leaks=1
  [[ $target == fuzz_tracefs_format ]] && leaks=0
  echo "fuzz.sh: $target for ${secs}s"
  result=ok
  # DEBUGINFOD_URLS: the ELF target must never reach the network.
  # detect_leaks also for ASan's exit-time check (libFuzzer's flag covers only
  # the per-input one): libtraceevent's own leaks are not ours.
  if ! env -u DEBUGINFOD_URLS ASAN_OPTIONS="detect_leaks=$leaks${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
      "$build/$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -max_len=$max_len -detect_leaks=$leaks -artifact_prefix="$build/artifacts/$target-" -print_final_stats=1 \
      "$work" "$root/fuzz/corpus/$target" 2>"$build/$target.log"; then
    echo "fuzz.sh: $target FAILED; see $build/$target.log and $build/artifacts/" >&2
    tail -40 "$build/$target.log" >&2
    status=1
    result=FAILED
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/$target.log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$build/$target.log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$secs" "${execs:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" "$result" | tee -a "$summary"
done
exit $status
