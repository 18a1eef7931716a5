#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration: a real `shootdown run --release munmap` writes
# report.html; headless Chromium (Debian's chromium, driven by playwright-core
# from npm with executablePath /usr/bin/chromium: no browser download) renders
# it offline and html_report_check.js checks it by DOM/SVG structure: no
# console errors, no network requests, every chart with its series, markers ==
# releases x 2, phase table rows; chart 2 stacked by cause with
# the release window shaded and, with kernel evidence, a nonzero
# tlb-shootdown layer; every chart at 1280x800 and 1920x1080 (no overflow,
# all shown, no text outside its chart). The PNG screenshot is kept as an artifact:
# $SHOOTDOWN_BUILD/artifacts/html_report.png.
set -euo pipefail
source "$TEST_LIB"
: "${SHOOTDOWN_SRC:?}" "${SHOOTDOWN_BUILD:?}"

"$SHOOTDOWN_SRC"/scripts/install-deps.sh --with-integration >/dev/null 2>&1 || true
[[ -x /usr/bin/chromium ]] || skip "chromium not installed (scripts/install-deps.sh --with-integration installs it)"
command -v node >/dev/null && command -v npm >/dev/null || skip "node/npm not installed (needed for playwright-core)"

# playwright-core only (no bundled browser), cached inside the build tree.
NPM_DIR="$SHOOTDOWN_BUILD/npm"
PW="$NPM_DIR/node_modules/playwright-core"
if [[ ! -f "$PW/package.json" ]]; then
  mkdir -p "$NPM_DIR"
  if ! npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error playwright-core@1 >"$TMP/npm.log" 2>&1; then
    sed 's/^/# /' "$TMP/npm.log" | tail -5
    skip "npm could not install playwright-core (registry unreachable?)"
  fi
fi
export PLAYWRIGHT_CORE="$PW"

ARTIFACTS="$SHOOTDOWN_BUILD/artifacts"
mkdir -p "$ARTIFACTS"
OUTDIR="$TMP/run"

# Kernel evidence when permitted (auto); the report must be complete either way.
run_cmd "$SHOOTDOWN" run --release munmap --chunk-size 256MiB --trigger after=1s --baseline 1s --after 1s \
  --out "$OUTDIR" --open -q
expect_rc 0 "shootdown run --release munmap --chunk-size 256MiB --out DIR"
expect_file "$OUTDIR/report.html" "report.html written next to result.json"
expect_out "^report: file://$OUTDIR/report.html$" "--open prints the report's file:// URL"
size=$(stat -c %s "$OUTDIR/report.html" 2>/dev/null || echo 0)
if ((size > 0 && size < 5 * 1024 * 1024)); then ok "report.html is $size bytes (< 5 MB)"; else not_ok "report.html size $size"; fi
if grep -Eq '<(script|link|img)[^>]+(src|href)="(https?:)?//' "$OUTDIR/report.html"; then
  not_ok "report references external resources"
else
  ok "no external resources referenced"
fi
cp "$OUTDIR/report.html" "$ARTIFACTS/html_report.html"

# tlb-shootdown ticks are only expected when the tracer ran and IPIs arrive.
if grep -q 'data-kernel-evidence="yes"' "$OUTDIR/report.html"; then
  if tlb_ipis_reach; then export EXPECT_SHOOTDOWNS=1
  else skip_check "charts 2 and 3: a nonzero tlb-shootdown series: $NO_TLB_IPIS"; fi
fi
set +e
timeout 240 node "$SHOOTDOWN_SRC/tests/integration/html_report_check.js" "$OUTDIR/report.html" "$ARTIFACTS/html_report.png" \
  >"$TMP/check.log" 2>&1
rc=$?
set -e
sed -e 's/^\(ok\|not ok\) [0-9]* - /  \1 - /' -e '/^1\.\./d' "$TMP/check.log"
if ((rc == 0)); then ok "Chromium render and structure checks"; else not_ok "Chromium checks (rc=$rc)"; fi
expect_file "$ARTIFACTS/html_report.png" "screenshot saved: $ARTIFACTS/html_report.png"

# The same run re-rendered from result.json (`shootdown report DIR`), which
# keeps raw samples only around the releases: the charts must say what they
# cover and still fit both screen sizes.
cp -r "$OUTDIR" "$TMP/readback"
run_cmd "$SHOOTDOWN" report "$TMP/readback" -q
expect_rc 0 "shootdown report DIR re-renders report.html"
set +e
READ_BACK=1 timeout 240 node "$SHOOTDOWN_SRC/tests/integration/html_report_check.js" "$TMP/readback/report.html" \
  "$ARTIFACTS/html_report_readback.png" >"$TMP/check2.log" 2>&1
rc=$?
set -e
sed -e 's/^\(ok\|not ok\) [0-9]* - /  \1 - read back: /' -e '/^1\.\./d' "$TMP/check2.log"
if ((rc == 0)); then ok "read back: Chromium render and structure checks"; else not_ok "read back: Chromium checks (rc=$rc)"; fi

# --open without --out is bad input (exit 2, nothing written).
run_cmd "$SHOOTDOWN" run --open --trace off -q
expect_rc 2 "--open without --out"
expect_err "--open: needs --out" "--open error names the option"
finish
