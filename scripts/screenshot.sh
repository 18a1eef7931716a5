#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates docs/img/report.png and docs/img/stall-timeline.png (the README
# pictures) from a real run: `shootdown run --release munmap` on this
# machine, its report.html rendered by headless Chromium (Debian's chromium
# via playwright-core, as the integration test does). Crops charts 1-3, and
# chart 2 alone, to keep the PNGs small. The README's chart 2 is of a 4 GiB
# free (the default release): RELEASE=free CHUNK=4GiB scripts/screenshot.sh
# (needs ~9 GiB of RAM).
# Usage: scripts/screenshot.sh [path/to/shootdown]   (default: build/src/shootdown)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-${SHOOTDOWN:-$src/build/src/shootdown}}
build=$(cd "$(dirname "$bin")/.." 2>/dev/null && pwd || echo "$src/build")
if [[ ! -x "$bin" ]]; then
  echo "screenshot: building $bin" >&2
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$src/build" -j"$(nproc)" --target shootdown >/dev/null
  bin=$src/build/src/shootdown build=$src/build
fi
"$src"/scripts/install-deps.sh --with-integration
npm_dir=$build/npm
[[ -f $npm_dir/node_modules/playwright-core/package.json ]] ||
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error playwright-core@1
out=$(mktemp -d /tmp/shootdown-screenshot.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$bin" run --release "${RELEASE:-munmap}" --chunk-size "${CHUNK:-1GiB}" --trigger after=1s --out "$out/run" -q >/dev/null
mkdir -p "$src/docs/img"
PLAYWRIGHT_CORE=$npm_dir/node_modules/playwright-core \
  node "$src/tests/integration/html_report_check.js" "$out/run/report.html" "$src/docs/img/report.png" \
  --no-checks --from '#timeseries' --to '#distribution'
PLAYWRIGHT_CORE=$npm_dir/node_modules/playwright-core \
  node "$src/tests/integration/html_report_check.js" "$out/run/report.html" "$src/docs/img/stall-timeline.png" \
  --no-checks --from '#stall-timeline' --to '#raw'
ls -l "$src/docs/img/report.png" "$src/docs/img/stall-timeline.png"
