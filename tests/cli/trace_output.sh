#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# trace -o FILE: the stream and summary go to FILE, written to a
# temporary next to it and renamed at the end; the command keeps its stdout
# and stderr. Also without a command (--duration) and with --format raw.
# Bad values (a directory, an unwritable parent) are in bad_input_all.sh.
source "$TEST_LIB"

run_cmd "$SHOOTDOWN" trace --help
expect_out '-o,--output' "trace --help documents -o"
expect_out 'trace -o [^ ]+ -- ' "trace --help has an -o example"

need_root "perf tracepoints and tracefs"
mapfile -t CPUS < <(awk -F, '{for(i=1;i<=NF;i++){n=split($i,r,"-"); if(n==1)print r[1]; else for(c=r[1];c<=r[2];c++)print c}}' /sys/devices/system/cpu/online)
((${#CPUS[@]} >= 2)) || skip "needs 2 online CPUs"
C=(--culprit-cpu "${CPUS[0]}" --victim-cpus "${CPUS[1]}")
D=$TMP/d
mkdir -p "$D"
echo "previous content" >"$D/trace.txt"

# 1. -- CMD: stdout is the command's alone, its stderr reaches stderr, FILE has the summary.
run_cmd "$SHOOTDOWN" trace "${C[@]}" -o "$D/trace.txt" -- sh -c 'echo from-the-command; echo err-of-the-command >&2'
expect_rc 0 "trace -o FILE -- CMD"
if [[ "$OUT" == "from-the-command" ]]; then ok "stdout is the command's alone"; else not_ok "stdout: $OUT"; fi
expect_err '^err-of-the-command$' "the command's stderr reaches stderr"
expect_err "report in $D/trace.txt" "stderr says where the report is"
if grep -q '^summary over ' "$D/trace.txt" && grep -q '^lost events: ' "$D/trace.txt"; then
  ok "FILE holds the summary"
else
  not_ok "FILE: $(head -3 "$D/trace.txt")"
fi
if ! grep -q 'previous content' "$D/trace.txt"; then ok "FILE replaced"; else not_ok "FILE still holds the previous content"; fi
if [[ $(ls -A "$D") == trace.txt ]]; then ok "no temporary left next to FILE"; else not_ok "left in $D: $(ls -A "$D" | tr '\n' ' ')"; fi

# 2. No command: --duration, the stream (with an event of this process) in FILE.
run_cmd "$SHOOTDOWN" trace "${C[@]}" --duration 300ms -o "$D/dur.txt"
expect_rc 0 "trace --duration -o FILE"
if [[ -z "$OUT" ]]; then ok "--duration -o: nothing on stdout"; else not_ok "--duration -o: stdout: $OUT"; fi
if grep -q '^summary over ' "$D/dur.txt"; then ok "--duration -o: FILE holds the summary"; else not_ok "--duration -o: $(head -3 "$D/dur.txt")"; fi

# 3. --format raw: events in FILE, the summary on stderr (as without -o).
run_cmd "$SHOOTDOWN" trace "${C[@]}" --format raw -o "$D/raw.txt" -- sh -c 'echo raw-cmd'
expect_rc 0 "trace --format raw -o FILE"
if [[ "$OUT" == "raw-cmd" ]]; then ok "raw -o: stdout is the command's alone"; else not_ok "raw -o: stdout: $OUT"; fi
expect_err '^summary over ' "raw -o: the summary on stderr"
if ! grep -qvE '^[0-9]+ [0-9]+ -?[0-9]+ [a-z_]+ -?[0-9]+ -?[0-9]+ -?[0-9]+ [^ ]+$' "$D/raw.txt"; then
  ok "raw -o: every line of FILE is a raw event ($(wc -l <"$D/raw.txt") lines)"
else
  not_ok "raw -o: non-event line in FILE: $(grep -vE '^[0-9]+ ' "$D/raw.txt" | head -2)"
fi

# 4. SIGINT: the trace so far is still published.
"$SHOOTDOWN" trace "${C[@]}" -o "$D/int.txt" >"$TMP/int.out" 2>"$TMP/int.err" &
TPID=$!
sleep 1
kill -INT "$TPID"
set +e
wait "$TPID"
RC=$?
set -e
ERR=$(cat "$TMP/int.err")
expect_rc 130 "trace -o FILE, SIGINT"
if grep -q '^summary over ' "$D/int.txt" 2>/dev/null; then ok "SIGINT: FILE holds the summary"; else not_ok "SIGINT: FILE missing or without summary"; fi
if [[ $(ls -A "$D" | grep -c '\.tmp\.') == 0 ]]; then ok "SIGINT: no temporary left"; else not_ok "SIGINT: temporary left: $(ls -A "$D")"; fi
set +e
finish
