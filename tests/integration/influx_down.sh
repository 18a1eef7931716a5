#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run --influx with the database down (a closed port): connection refused is
# retried with bounded backoff, then one warning on stderr; exit 0; every
# file is written and result.json is complete. Same over UDP to nowhere.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq"
command -v python3 >/dev/null || skip "needs python3 (free port)"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')  # closed once printed

common=(--chunk-size 128MiB --trigger after=200ms --after 200ms --quiet --release munmap)
start=$(date +%s%N)
run_cmd "$SHOOTDOWN" run "${common[@]}" --out "$TMP/down" --influx "http://127.0.0.1:$PORT/write?db=x"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_rc 0 "run --influx to a closed port exits 0"
expect_err "^shootdown: warning: influx http://127.0.0.1:$PORT/write\?db=x: .*(refused|Connection).* after 4 attempts" "one warning: refused after 4 attempts"
expect_err "$TMP/down/result.json" "the warning names the saved result"
expect_err_lines 1 "exactly one stderr line"
expect_out "release: munmap" "the table is still printed"
for f in result.json timeline.csv victim.hlog victim.hgrm; do expect_file "$TMP/down/$f" "$f written"; done
jq -e '.complete == true and (.intervals|length) > 0 and (.intervals[0].histogram|length) > 0' "$TMP/down/result.json" >/dev/null &&
  ok "result.json complete, with interval histograms" || not_ok "result.json incomplete"
echo "# run with 4 refused attempts took ${elapsed_ms} ms (backoff 100+200+400 ms)"

# A bad URL is bad input: exit 2 before the run, nothing written.
run_cmd "$SHOOTDOWN" run "${common[@]}" --out "$TMP/bad" --influx "http://127.0.0.1:$PORT/query?db=x"
expect_rc 2 "--influx with a path other than /write"
expect_err "^shootdown run: --influx 'http://127.0.0.1:$PORT/query\?db=x': HTTP path must be /write" "one line naming the option"
expect_no_file "$TMP/bad/result.json" "no result written for bad input"

# UDP: no delivery confirmation; sending to a closed port is not an error.
run_cmd "$SHOOTDOWN" run "${common[@]}" --out "$TMP/udp" --influx "udp://127.0.0.1:$PORT"
expect_rc 0 "run --influx udp:// to a closed port exits 0"
expect_file "$TMP/udp/result.json" "result.json written"
finish
