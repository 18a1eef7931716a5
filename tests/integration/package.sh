#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package (CPack, `make package`): built from this build tree into
# a temporary directory, checked by lintian (no errors), extracted with
# dpkg-deb into a temporary root (not installed on the machine), and run from
# there: `run` (small chunk), `probe -- CMD` (the probe library must be the
# package's, found relative to the binary, not the build tree's) and
# `doctor`; man pages and bash completion in place.
source "$TEST_LIB"
set -e
"$SHOOTDOWN_SRC"/scripts/install-deps.sh --with-integration >&2 || true
for t in cpack dpkg-deb; do command -v $t >/dev/null || skip "$t not found"; done
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"

PKG="$TMP/pkg"
mkdir -p "$PKG"
if ! cpack -G DEB --config "$SHOOTDOWN_BUILD/CPackConfig.cmake" -B "$PKG" >"$TMP/cpack.log" 2>&1; then
  sed 's/^/#   /' "$TMP/cpack.log" | tail -20
  not_ok "cpack -G DEB failed"
  finish
fi
deb=$(ls "$PKG"/*.deb 2>/dev/null | head -1)
[[ -n "$deb" ]] && ok "package built: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)" || { not_ok "no .deb in $PKG"; finish; }
dpkg-deb --info "$deb" | sed 's/^/#   /'
if command -v lintian >/dev/null; then
  set +e
  lintian --tag-display-limit 0 "$deb" >"$TMP/lintian.txt" 2>&1
  set -e
  sed 's/^/# lintian: /' "$TMP/lintian.txt"
  errors=$(grep -c '^E: ' "$TMP/lintian.txt" || true)
  if [[ "$errors" == 0 ]]; then ok "lintian: no errors ($(grep -c '^W: ' "$TMP/lintian.txt" || true) warnings)"; else not_ok "lintian: $errors errors"; fi
else
  not_ok "lintian not installed (scripts/install-deps.sh --with-integration)"
fi

ROOT="$TMP/root"
dpkg-deb -x "$deb" "$ROOT"
BIN="$ROOT/usr/bin/shootdown"
for f in usr/bin/shootdown usr/lib/shootdown/libshootdown_probe.so usr/share/man/man1/shootdown.1.gz \
  usr/share/man/man1/shootdown-monitor.1.gz usr/share/bash-completion/completions/shootdown \
  usr/share/doc/shootdown/copyright usr/share/doc/shootdown/changelog.gz \
  usr/lib/systemd/system/shootdown-monitor.service usr/share/doc/shootdown/examples/shootdown-monitor-daemonset.yaml; do
  [[ -e "$ROOT/$f" ]] && ok "package has /$f" || not_ok "package lacks /$f"
done
# The systemd unit: installed, not enabled (no maintainer script enables
# it), and clean under systemd-analyze verify (its ExecStart pointed at the
# extracted binary; its man: page is the package's shootdown-monitor.1.gz,
# checked above, so --man=no).
UNIT="$ROOT/usr/lib/systemd/system/shootdown-monitor.service"
if [[ -f $UNIT ]]; then
  if dpkg-deb -e "$deb" "$TMP/control" && ! grep -qs 'systemctl\|deb-systemd' "$TMP"/control/post* 2>/dev/null; then
    ok "systemd unit installed, not enabled (no maintainer script enables it)"
  else not_ok "a maintainer script enables the unit"; fi
  if command -v systemd-analyze >/dev/null; then
    sed "s|^ExecStart=/usr/bin/shootdown|ExecStart=$ROOT/usr/bin/shootdown|" "$UNIT" >"$TMP/shootdown-monitor.service"
    if out=$(systemd-analyze verify --man=no "$TMP/shootdown-monitor.service" 2>&1) && [[ -z $out ]]; then
      ok "systemd-analyze verify: clean"
    else not_ok "systemd-analyze verify: $out"; fi
  else skip_check "systemd-analyze not installed"; fi
fi
if readelf -d "$BIN" | grep -Eq 'RPATH|RUNPATH'; then not_ok "installed binary carries an RPATH into the build tree"; else ok "no RPATH/RUNPATH"; fi
if MANWIDTH=80 man --warnings -l "$ROOT/usr/share/man/man1/shootdown-run.1.gz" 2>&1 >/dev/null | grep -q .; then
  not_ok "man warnings for the packaged page"
else ok "packaged man page renders without warnings"; fi
if bash -c "source '$ROOT/usr/share/bash-completion/completions/shootdown'; complete -p shootdown" >/dev/null 2>&1; then
  ok "bash completion loads"
else not_ok "bash completion does not load"; fi

comp=$(PATH="$ROOT/usr/bin:$PATH" bash -c "source /usr/share/bash-completion/bash_completion 2>/dev/null
  source '$ROOT/usr/share/bash-completion/completions/shootdown'
  COMP_WORDS=(shootdown mon); COMP_CWORD=1; COMP_LINE='shootdown mon'; COMP_POINT=13; _shootdown; echo \${COMPREPLY[*]}
  COMP_WORDS=(shootdown monitor --ser); COMP_CWORD=2; COMP_LINE='shootdown monitor --ser'; COMP_POINT=23; _shootdown; echo \${COMPREPLY[*]}" 2>&1)
if [[ "$comp" == $'monitor\n--series' ]]; then ok "bash completion completes 'mon' and 'monitor --ser'"; else not_ok "bash completion gave: $comp"; fi

# cmake --install into a prefix: the same layout.
if cmake --install "$SHOOTDOWN_BUILD" --prefix "$TMP/inst" >/dev/null 2>&1 && [[ -x "$TMP/inst/bin/shootdown" &&
  -f "$TMP/inst/lib/shootdown/libshootdown_probe.so" && -f "$TMP/inst/share/man/man1/shootdown-run.1.gz" ]]; then
  ok "cmake --install --prefix: bin, lib/shootdown, share/man"
else not_ok "cmake --install --prefix $TMP/inst: layout incomplete"; fi

run_cmd "$BIN" --version
expect_rc 0 "packaged binary: --version"
run_cmd "$BIN" doctor
expect_rc 0 "packaged binary: doctor"
expect_out "PASS|WARN|FAIL" "doctor prints its checks"
run_cmd "$BIN" run --chunk-size 64MiB --baseline 100ms --after 100ms --trigger after=100ms --out "$TMP/result"
expect_rc 0 "packaged binary: run --chunk-size 64MiB"
expect_file "$TMP/result/result.json" "run wrote result.json"
# The probed command prints which probe library its process has mapped.
run_cmd "$BIN" probe --duration 2s -- sh -c 'grep -o "/[^ ]*libshootdown_probe.so" /proc/$$/maps | sort -u; sleep 1'
expect_rc 0 "packaged binary: probe -- sh"
lib=$(grep -o '/[^ ]*libshootdown_probe.so' <<<"$OUT" | head -1)
real_root=$(readlink -f "$ROOT")
if [[ "$(readlink -f "${lib:-/nonexistent}")" == "$real_root/usr/lib/shootdown/libshootdown_probe.so" ]]; then
  ok "probe preloaded the package's library ($lib)"
else
  not_ok "probe preloaded '$lib', not $ROOT/usr/lib/shootdown/libshootdown_probe.so; stdout: $OUT; stderr: $ERR"
fi
finish
