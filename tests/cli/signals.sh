#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SIGINT/SIGTERM in each phase: threads stop, partial result marked
# incomplete is written with --out, exit 130/143.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq"

# wait_for FILE REGEX TIMEOUT_S
wait_for() {
  local i
  for ((i = 0; i < $3 * 20; i++)); do
    grep -Eq "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

send() {  # send SIGNAL PHASE-REGEX EXPECTED-RC NAME
  local sig=$1 when=$2 want=$3 name=$4 out="$TMP/$4"
  "$SHOOTDOWN" run --release munmap --chunk-size 512MiB --trigger after=3s --after 3s --out "$out" \
    </dev/null >"$TMP/$name.stdout" 2>"$TMP/$name.stderr" &
  local pid=$!
  if ! wait_for "$TMP/$name.stderr" "$when" 60; then
    not_ok "$name: phase /$when/ never reached"; kill -9 $pid; wait $pid; return
  fi
  [[ $when == "baseline" ]] && sleep 0.5
  kill -s "$sig" $pid
  local start=$SECONDS
  wait $pid
  local rc=$?
  [[ $rc == "$want" ]] && ok "$name: exit $rc" || not_ok "$name: exit $rc, expected $want ($(cat "$TMP/$name.stderr" | tail -2))"
  (( SECONDS - start <= 10 )) && ok "$name: stopped within 10 s" || not_ok "$name: took $((SECONDS - start)) s to stop"
  if jq -e '.complete == false and (.incomplete_reason | test("interrupted"))' "$out/result.json" >/dev/null 2>&1; then
    ok "$name: result.json written and marked incomplete"
  else
    not_ok "$name: no incomplete result.json"
  fi
  ls "$out" | grep -q '\.tmp\.' && not_ok "$name: temp files left" || ok "$name: no temp files left"
}

send INT  "pre-faulting chunk A" 130 sigint-prepare
send INT  "baseline"            130 sigint-baseline
send TERM "baseline"            143 sigterm-baseline

finish
