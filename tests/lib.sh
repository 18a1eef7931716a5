# SPDX-License-Identifier: Apache-2.0
# Shared helpers for CLI and integration test scripts (bash).
# Usage: source "$TEST_LIB"; each check prints "ok"/"not ok" lines (TAP-like),
# and finish exits non-zero if any failed. skip "reason" exits 77.
set -u
_failed=0
_count=0
: "${SHOOTDOWN:?SHOOTDOWN must point to the binary}"
TMP=$(mktemp -d /tmp/shootdown-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

ok()     { _count=$((_count+1)); echo "ok $_count - $*"; }
not_ok() { _count=$((_count+1)); _failed=$((_failed+1)); echo "not ok $_count - $*"; }
skip()   { echo "SKIP: $*"; exit 77; }
need_root() { [[ $(id -u) -eq 0 ]] || skip "needs root: $*"; }

# Do remote TLB flushes reach other CPUs as IPIs here? doctor measures it
# (pv_tlb_flush: 256 munmaps on one CPU while a thread spins on another). A
# guest whose hypervisor flushes remote TLBs itself (Hyper-V, PVM) receives
# none: checks that count shootdown IPIs cannot hold there, and the tool must
# say so instead (docs/kernel-evidence.md, remote flushes without an IPI).
tlb_ipis_reach() {
  [[ -n ${_TLB_IPIS:-} ]] ||
    _TLB_IPIS=$("$SHOOTDOWN" doctor --json 2>/dev/null | jq -r '.findings[] | select(.name == "pv_tlb_flush") | .status')
  [[ $_TLB_IPIS != fail ]]
}
NO_TLB_IPIS="remote TLB flushes bypass IPIs on this machine (shootdown doctor: pv_tlb_flush FAIL), so no shootdown IPI arrives to count"
need_tlb_ipis() { tlb_ipis_reach || skip "$NO_TLB_IPIS"; }
skip_check() { _count=$((_count+1)); echo "ok $_count - # SKIP $*"; }

# run_cmd: runs "$@", captures stdout/stderr/exit code into OUT, ERR, RC
run_cmd() {
  set +e
  "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  set -e
  OUT=$(cat "$TMP/out"); ERR=$(cat "$TMP/err")
}
expect_rc()    { if [[ "$RC" == "$1" ]]; then ok "$2 (rc=$RC)"; else not_ok "$2: expected rc=$1 got $RC; stderr: $ERR"; fi; }
expect_out()   { if grep -Eq -- "$1" <<<"$OUT"; then ok "$2"; else not_ok "$2: stdout does not match /$1/"; echo "$OUT" | head -20 | sed 's/^/#   /'; fi; }
expect_err()   { if grep -Eq -- "$1" <<<"$ERR"; then ok "$2"; else not_ok "$2: stderr does not match /$1/: $ERR"; fi; }
expect_err_lines() { local n; n=$(grep -c . <<<"$ERR" || true); if [[ "$n" == "$1" ]]; then ok "$2"; else not_ok "$2: expected $1 stderr line(s), got $n: $ERR"; fi; }
expect_file()  { if [[ -s "$1" ]]; then ok "$2"; else not_ok "$2: $1 missing or empty"; fi; }
expect_no_file() { if [[ ! -e "$1" ]]; then ok "$2"; else not_ok "$2: $1 exists"; fi; }
# expect_tlb_accounting RESULT LABEL: the victim's TLB row accounted for by
# evidence (result.json attribution.victims[0].tlb_accounting): counted =
# reason 1 + reason 5 in a remote run + lazy TLB + counted-not-traced, every
# term >= 0 and nothing traced beyond the count. Sets TLB_COUNTED, TLB_R1,
# TLB_R5, TLB_LAZY, TLB_UNTRACED for the caller.
expect_tlb_accounting() {
  local beyond lr lw
  read -r TLB_COUNTED TLB_R1 TLB_R5 TLB_LAZY TLB_UNTRACED beyond lr lw < <(jq -r '.attribution.victims[0].tlb_accounting |
      "\(.counted) \(.traced_remote) \(.traced_wrong_cpu) \(.lazy_tlb) \(.counted_not_traced) \(.traced_beyond_count) \(.local_flush_runs) \(.local_wrong_cpu)"' "$1")
  echo "# $2: TLB $TLB_COUNTED = reason 1 $TLB_R1 + reason 5 in an IPI $TLB_R5 + lazy $TLB_LAZY + untraced $TLB_UNTRACED; apart: own runs $lr, local reason 5 $lw"
  if ((TLB_COUNTED == TLB_R1 + TLB_R5 + TLB_LAZY + TLB_UNTRACED && TLB_UNTRACED >= 0 && TLB_LAZY >= 0 && beyond == 0)); then
    ok "$2: TLB accounting closes by evidence ($TLB_COUNTED, nothing traced beyond it)"
  else
    not_ok "$2: TLB $TLB_COUNTED != $TLB_R1 + $TLB_R5 + $TLB_LAZY + $TLB_UNTRACED (traced beyond the count: $beyond)"
  fi
}
finish() { echo "1..$_count"; if ((_failed)); then echo "$_failed of $_count failed"; exit 1; fi; exit 0; }
