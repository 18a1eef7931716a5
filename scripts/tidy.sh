#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clang-tidy (Debian's clang-tidy-14) with the checks of .clang-tidy over
# every C and C++ source of src/ (make tidy, part of make test), using the
# Release build's compile_commands.json. GCC-only warning flags in it are
# not clang's: -Wno-unknown-warning-option. Exit 1 on any finding.
# Usage: scripts/tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[[ -n $tidy ]] || { echo "tidy: clang-tidy-14 not installed (scripts/install-deps.sh)" >&2; exit 1; }
[[ -f $build/compile_commands.json ]] || { echo "tidy: no $build/compile_commands.json (build first)" >&2; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.c' 2>/dev/null || find src -name '*.cpp' -o -name '*.c')
files=("${files[@]/#/}")
files=($(printf '%s\n' "${files[@]}" | grep -v '\.bpf\.c$'))
start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1 || true
if grep -E '(warning|error): ' "$log" | grep -v 'warnings generated' >/dev/null; then
  grep -E -A3 '(warning|error): ' "$log" | head -80
  echo "tidy: findings in ${#files[@]} files ($(( $(date +%s) - start )) s)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean ($(( $(date +%s) - start )) s, $(basename "$tidy"), checks of .clang-tidy)"
