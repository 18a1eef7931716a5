#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The experiment's threads (victims, culprit, kernel-trace reader) end to end,
# for sanitizer builds: a run and an interrupted run must exit as documented
# and write their result. Under TSan a data race exits 66 (halt_on_error).
# No measurement assertions here: sanitizer runtimes release shadow memory
# themselves, which sends TLB shootdowns of their own (run_smoke.sh checks
# the numbers in the Release build).
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq"

run_cmd "$SHOOTDOWN" run --release munmap --repeat 2 --every 100ms --chunk-size 64MiB --trigger after=200ms --after 100ms -q --out "$TMP/a"
expect_rc 0 "run with two releases"
if jq -e '.complete == true and (.releases | length) == 2' "$TMP/a/result.json" >/dev/null 2>&1; then
  ok "result.json complete with two releases"; else not_ok "result.json of the run"; fi

"$SHOOTDOWN" run --release reuse --chunk-size 64MiB --trigger after=4s --after 1s --out "$TMP/b" </dev/null >/dev/null 2>"$TMP/b.err" &
pid=$!
for ((i = 0; i < 1200; i++)); do grep -q "baseline" "$TMP/b.err" 2>/dev/null && break; sleep 0.05; done
sleep 0.5
kill -INT $pid
rc=0
wait $pid || rc=$?
[[ $rc == 130 ]] && ok "SIGINT: exit 130" || not_ok "SIGINT: exit $rc ($(tail -3 "$TMP/b.err"))"
if jq -e '.complete == false' "$TMP/b/result.json" >/dev/null 2>&1; then ok "SIGINT: incomplete result written"; else not_ok "SIGINT: no incomplete result"; fi

finish
