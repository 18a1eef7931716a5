#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clang-format (Debian's clang-format-14, .clang-format) over every C and C++
# file of src/, tests/, bench/ and fuzz/: make format-check (part of make
# test) fails on a file that is not formatted; --fix formats them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
[[ -n $fmt ]] || { echo "format-check: clang-format-14 not installed (scripts/install-deps.sh)" >&2; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.hpp' 'src/*.c' 'src/*.h' 'tests/*.cpp' 'tests/*.hpp' \
  'tests/*.c' 'tests/*.h' 'bench/*.cpp' 'bench/*.hpp' 'fuzz/*.cpp' 'fuzz/*.hpp' 2>/dev/null)
if [[ ${1:-} == --fix ]]; then
  "$fmt" -i "${files[@]}"
  echo "format: ${#files[@]} files formatted"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "format-check: ${#bad[@]} of ${#files[@]} files not formatted ($(basename "$fmt")): ${bad[*]:0:10}" >&2
  echo "format-check: scripts/format-check.sh --fix formats them" >&2
  exit 1
fi
echo "format-check: ${#files[@]} files formatted ($(basename "$fmt"))"
