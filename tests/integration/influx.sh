#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run --influx against a real InfluxDB 1.x (Debian's influxdb): starts its own
# influxd on 127.0.0.1 (temporary data/meta/wal dirs, reporting disabled,
# HTTP and UDP listeners on free ports), sends real runs over HTTP and UDP,
# queries the points back through /query and compares them with result.json
# (interval point count, every interval's p99/max and timestamp, marker
# timestamps, /proc/interrupts deltas); a 4xx (unknown database) is a
# warning with the server's message, exit 0, files intact. Stops the server
# it started, by PID.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
"$SHOOTDOWN_SRC"/scripts/install-deps.sh --with-integration >&2 || skip "cannot install influxdb (install-deps.sh --with-integration failed)"
for t in influxd curl jq python3; do command -v $t >/dev/null || skip "$t not found after install-deps"; done

free_port() {  # free_port tcp|udp
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if sys.argv[1] == "tcp" else socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}
HTTP_PORT=$(free_port tcp); RPC_PORT=$(free_port tcp); UDP_PORT=$(free_port udp)
D="$TMP/influx"; mkdir -p "$D"
cat >"$D/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$RPC_PORT"
[meta]
  dir = "$D/meta"
[data]
  dir = "$D/data"
  wal-dir = "$D/wal"
  query-log-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:$HTTP_PORT"
  log-enabled = false
[[udp]]
  enabled = true
  bind-address = "127.0.0.1:$UDP_PORT"
  database = "sd_udp"
  batch-size = 500
  batch-timeout = "50ms"
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
CONF
influxd run -config "$D/influxdb.conf" >"$D/influxd.log" 2>&1 &
INFLUXD_PID=$!
trap 'kill "$INFLUXD_PID" 2>/dev/null; wait "$INFLUXD_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
BASE="http://127.0.0.1:$HTTP_PORT"
up=0
for _ in $(seq 1 100); do
  if curl -sf -o /dev/null "$BASE/ping"; then up=1; break; fi
  kill -0 "$INFLUXD_PID" 2>/dev/null || break
  sleep 0.1
done
if ((up == 0)); then echo "# influxd log:"; tail -20 "$D/influxd.log" | sed 's/^/#   /'; skip "influxd did not answer /ping"; fi
ok "influxd $(influxd version 2>/dev/null | head -1) up on 127.0.0.1:$HTTP_PORT (udp $UDP_PORT), pid $INFLUXD_PID"
curl -sf -XPOST "$BASE/query" --data-urlencode "q=CREATE DATABASE sd_http" >/dev/null || not_ok "CREATE DATABASE sd_http"

q() {  # q DB QUERY -> JSON (epoch ns)
  curl -sfG "$BASE/query" --data-urlencode "db=$1" --data-urlencode "epoch=ns" --data-urlencode "q=$2"
}
# values of the single series of a query, as a JSON array of rows
rows() { q "$1" "$2" | jq -c '[.results[0].series[]?.values[]]'; }

# compare.py RESULT IV MARKERS IRQ LABEL: prints "ok - ..."/"not ok - ..." lines.
cat >"$TMP/compare.py" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); label = sys.argv[5]
def values(path):  # rows of a raw /query response (python ints: exact ns)
    res = json.load(open(path))["results"][0]
    return [v for series in res.get("series", []) for v in series["values"]]
iv, mk, irq = (values(f) for f in sys.argv[2:5])
off = r["measure"]["realtime_offset_ns"]
def report(ok, what, detail=""):
    print(("ok - " if ok else "not ok - ") + label + ": " + what + ("" if ok else ": " + detail))
want, idx = [], {}
for x in r["intervals"]:
    k = idx.get(x["victim_cpu"], 0); idx[x["victim_cpu"]] = k + 1
    want.append([x["end_ns"] + off, str(x["victim_cpu"]), k, x["count"], int(x["p50"]), int(x["p99"]), int(x["max"]), x["phase"]])
got = sorted(iv); want.sort()
bad = [(w, g) for w, g in zip(want, got) if w != g]
report(len(want) == len(got) and not bad, f"all {len(got)} interval points: exact ns timestamp, count, p50, p99, max, phase equal result.json",
       f"{len(want)} vs {len(got)}; first difference {bad[:1]}")
rel = [x for x in want if x[7] == "release"]
if rel:
    w = max(rel, key=lambda x: x[5]); g = [x for x in got if x[0] == w[0]]
    print(f"# {label}: worst release interval p99 {w[5]} ns (max {w[6]} ns) at {w[0]}; InfluxDB has {g[0][5] if g else 'nothing'}")
wm = sorted([m["before_ns"] + off, "before", m["duration_ns"]] for m in r["releases"]) 
wm = sorted(wm + [[m["after_ns"] + off, "after", m["duration_ns"]] for m in r["releases"]])
report(sorted(mk) == wm, f"{len(mk)} markers: exact timestamps and durations equal result.json", f"want {wm} got {sorted(mk)}")
wi = sorted([str(d["cpu"]), d["tlb"], d["cal"]] for d in r["interrupts"]["deltas"] if d["role"] == "victim")
gi = sorted(x[1:] for x in irq)
report(wi == gi, f"victim /proc/interrupts deltas {gi} equal result.json", f"want {wi}")
PY
tap() { local l; while IFS= read -r l; do case $l in "ok - "*) ok "${l#ok - }" ;; "not ok - "*) not_ok "${l#not ok - }" ;; *) echo "$l" ;; esac; done; }

# check_run LABEL DB DIR : compares what the database holds for DIR's run with DIR/result.json
check_run() {
  local label=$1 db=$2 dir=$3 run off n got
  run=$(jq -r .run_id "$dir/result.json"); off=$(jq .measure.realtime_offset_ns "$dir/result.json")
  [[ $off != 0 ]] && ok "$label: result.json records realtime_offset_ns ($off)" || not_ok "$label: realtime_offset_ns is 0"
  n=$(jq '.intervals|length' "$dir/result.json")
  got=$(rows "$db" "SELECT count(p99) FROM shootdown_interval WHERE run_id='$run'" | jq '.[0][1] // 0')
  [[ $got == "$n" && $n -gt 0 ]] && ok "$label: $got interval points = $n intervals in result.json" || not_ok "$label: $got interval points, result.json has $n intervals"
  # Exact integers (ns timestamps exceed 2^53, where jq's doubles round): python3.
  q "$db" "SELECT victim_cpu, \"interval\", \"count\", p50, p99, \"max\", phase FROM shootdown_interval WHERE run_id='$run'" >"$TMP/iv.json"
  q "$db" "SELECT marker, duration_ns FROM shootdown_marker WHERE run_id='$run'" >"$TMP/mk.json"
  q "$db" "SELECT cpu, tlb, cal FROM shootdown_interrupts WHERE run_id='$run' AND role='victim'" >"$TMP/irq.json"
  tap < <(python3 "$TMP/compare.py" "$dir/result.json" "$TMP/iv.json" "$TMP/mk.json" "$TMP/irq.json" "$label")
  local tags
  tags=$(q "$db" "SHOW TAG KEYS FROM shootdown_interval" | jq -c '[.results[0].series[0].values[][0]]')
  [[ $tags == '["pages","phase","release","run_id","victim_cpu"]' ]] && ok "$label: interval tags $tags" || not_ok "$label: interval tags $tags"
  local types
  types=$(q "$db" "SHOW FIELD KEYS FROM shootdown_interval" | jq -c '[.results[0].series[0].values[] | select(.[0]=="p99" or .[0]=="mean")]')
  [[ $types == '[["mean","float"],["p99","integer"]]' ]] && ok "$label: p99 is an integer field, mean a float" || not_ok "$label: field types $types"
}

common=(--chunk-size 128MiB --trigger after=300ms --after 300ms --quiet --release munmap)

# 1. HTTP, default report interval: thousands of points, several batches.
run_cmd "$SHOOTDOWN" run "${common[@]}" --out "$TMP/http" --influx "$BASE/write?db=sd_http"
expect_rc 0 "run --influx http://.../write?db=sd_http"
expect_out "release: munmap" "the table is printed"
[[ $ERR == "" ]] && ok "no warning on stderr" || not_ok "stderr: $ERR"
check_run http sd_http "$TMP/http"

# 2. UDP (the article's transport): datagrams < 1500 bytes, database from [[udp]].
run_cmd "$SHOOTDOWN" run "${common[@]}" --report-every 256MiB --out "$TMP/udp" --influx "udp://127.0.0.1:$UDP_PORT"
expect_rc 0 "run --influx udp://127.0.0.1:$UDP_PORT"
sleep 1  # the UDP listener batches writes (batch-timeout 50ms)
check_run udp sd_udp "$TMP/udp"

# 3. report DIR --influx sends a saved result later, the same points.
curl -sf -XPOST "$BASE/query" --data-urlencode "q=CREATE DATABASE sd_later" >/dev/null
run_cmd "$SHOOTDOWN" report "$TMP/http" --influx "$BASE/write?db=sd_later" --quiet
expect_rc 0 "report DIR --influx (sent later)"
check_run "report --influx" sd_later "$TMP/http"

# 4. A 4xx is final: warning with the server's message, exit 0, result.json intact.
run_cmd "$SHOOTDOWN" run "${common[@]}" --out "$TMP/nodb" --influx "$BASE/write?db=no_such_db"
expect_rc 0 "run --influx to a missing database exits 0"
expect_err "warning: influx .*HTTP 404.*database not found" "warning shows the server's 4xx message"
expect_err "result.json" "warning says where the result is"
jq -e '.complete == true and (.intervals|length) > 0' "$TMP/nodb/result.json" >/dev/null && ok "result.json intact" || not_ok "result.json missing or incomplete"

finish
