#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Grafana dashboards (dashboards/grafana/*.json): every query in them (panel
# targets, template variables, annotations) runs against a real Prometheus
# and a real InfluxDB fed by shootdown itself, and must return data.
#   monitor --listen (scraped by prometheus, 1 s) --influx (influxd /write)
#   a munmap load (munmap_loop) in a cgroup v2 of its own when possible
#   run --influx (victim latency intervals, release markers, interrupts)
# Grafana's macros are replaced as Grafana would: $__rate_interval -> 30s,
# $__interval -> 1s, $timeFilter -> time > now() - 1h, $instance/$run_id ->
# their "All" value (.*). Also checks the provisioning files and that every
# panel's datasource uid is a provisioned one. Stops every server it started.
source "$TEST_LIB"
set -e
online=$(cat /sys/devices/system/cpu/online)
grep -Eq '^0-|^0,1' <<<"$online" || skip "needs CPUs 0 and 1 online (online: $online)"
"$SHOOTDOWN_SRC"/scripts/install-deps.sh --with-integration >&2 || true
for t in prometheus influxd curl jq python3; do command -v $t >/dev/null || skip "$t not installable"; done
LOOP="$SHOOTDOWN_BUILD/tests/integration/munmap_loop"
[[ -x "$LOOP" ]] || skip "munmap_loop not built ($LOOP)"
DASH="$SHOOTDOWN_SRC/dashboards/grafana"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
MPORT=$(free_port); PPORT=$(free_port); IPORT=$(free_port); RPORT=$(free_port)
PIDS=()
CG=
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [[ -n "$CG" ]] && rmdir "$CG" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# InfluxDB 1.x, as tests/integration/influx.sh starts it.
D="$TMP/influx"; mkdir -p "$D"
cat >"$D/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$RPORT"
[meta]
  dir = "$D/meta"
[data]
  dir = "$D/data"
  wal-dir = "$D/wal"
  query-log-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:$IPORT"
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
CONF
influxd run -config "$D/influxdb.conf" >"$D/log" 2>&1 &
PIDS+=($!)
IBASE="http://127.0.0.1:$IPORT"
for _ in $(seq 1 100); do curl -sf -o /dev/null "$IBASE/ping" && break; sleep 0.1; done
curl -sf -o /dev/null "$IBASE/ping" || { tail -5 "$D/log"; not_ok "influxd did not start"; finish; }
curl -sf -XPOST "$IBASE/query" --data-urlencode "q=CREATE DATABASE shootdown" >/dev/null

taskset -c 0 "$SHOOTDOWN" monitor 1s --listen "127.0.0.1:$MPORT" --influx "$IBASE/write?db=shootdown" >/dev/null 2>"$TMP/monitor.err" &
PIDS+=($!)
mkdir -p "$TMP/prom"
cat >"$TMP/prom/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: shootdown
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
YML
taskset -c 0 prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prom/log" 2>&1 &
PIDS+=($!)
PBASE="http://127.0.0.1:$PPORT"
up=0
for _ in $(seq 1 300); do
  [[ $(curl -s "$PBASE/api/v1/query" --data-urlencode 'query=up{job="shootdown"}' | jq -r '.data.result[0].value[1] // empty' 2>/dev/null) == 1 ]] && { up=1; break; }
  sleep 0.1
done
((up)) && ok "prometheus scrapes monitor, influxd up" || { not_ok "prometheus did not scrape: $(tail -3 "$TMP/prom/log")"; finish; }

# Load: munmaps in a cgroup of their own (if cgroup2 is writable), then a short run.
CG_MNT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [[ -n "$CG_MNT" ]] && mkdir "$CG_MNT/shootdown-dash.$$" 2>/dev/null; then CG="$CG_MNT/shootdown-dash.$$"; fi
if [[ -n "$CG" ]]; then
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CG" "$LOOP" 3000 munmap 0 1 >/dev/null
else
  "$LOOP" 3000 munmap 0 1 >/dev/null
fi
run_cmd "$SHOOTDOWN" run --chunk-size 64MiB --baseline 200ms --after 200ms --trigger after=200ms --out "$TMP/result" \
  --influx "$IBASE/write?db=shootdown"
expect_rc 0 "run --influx"
sleep 3  # two more scrapes and monitor intervals after the load

set +e
python3 - "$DASH" "$PBASE" "$IBASE" >"$TMP/check.txt" 2>&1 <<'PY'
import json, os, sys, urllib.parse, urllib.request
dash, pbase, ibase = sys.argv[1:4]
def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)
def prom(expr):
    expr = expr.replace("$__rate_interval", "30s").replace("$instance", ".*")
    j = get(pbase + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    return j["status"] == "success" and len(j["data"]["result"]) > 0, expr
def prom_var(q):  # label_values(metric, label)
    metric, label = q[len("label_values("):-1].split(", ")
    j = get(pbase + "/api/v1/label/%s/values?" % label + urllib.parse.urlencode({"match[]": metric}))
    return len(j["data"]) > 0, q
def influx(q):
    q = (q.replace("$timeFilter", "time > now() - 1h").replace("$__interval", "1s")
          .replace("/^$run_id$/", "/.*/").replace("$run_id", ".*"))
    j = get(ibase + "/query?" + urllib.parse.urlencode({"db": "shootdown", "q": q}))
    res = j.get("results", [{}])[0]
    series = res.get("series", [])
    ok = "error" not in res and any(len(s.get("values", [])) > 0 for s in series)
    return ok, q + ("  error: " + res["error"] if "error" in res else "")
failed = 0
total = 0
uids = {"shootdown-prometheus", "shootdown-influxdb", "-- Grafana --"}
for name in sorted(os.listdir(dash)):
    if not name.endswith(".json"):
        continue
    d = json.load(open(os.path.join(dash, name)))
    checks = []
    for p in d["panels"]:
        assert p["datasource"]["uid"] in uids, (name, p["title"], p["datasource"])
        for t in p["targets"]:
            checks.append((p["title"], p["datasource"]["type"], t.get("expr") or t.get("query")))
    for v in d["templating"]["list"]:
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        checks.append(("variable " + v["name"], v["datasource"]["type"], q))
    for a in d["annotations"]["list"]:
        if "query" in a:
            checks.append(("annotation " + a["name"], a["datasource"]["type"], a["query"]))
    for title, kind, q in checks:
        total += 1
        if kind == "prometheus":
            ok, sent = prom_var(q) if q.startswith("label_values(") else prom(q)
        else:
            ok, sent = influx(q)
        print(("ok  " if ok else "NO DATA ") + name + " / " + title + ": " + sent)
        failed += not ok
print("%d queries, %d without data" % (total, failed))
sys.exit(1 if failed or total == 0 else 0)
PY
rc=$?
set -e
sed 's/^/# /' "$TMP/check.txt"
n=$(tail -1 "$TMP/check.txt")
if ((rc == 0)); then ok "every dashboard query returns data ($n)"; else not_ok "dashboard queries: $n"; fi

# Provisioning files: datasource uids match the dashboards'.
for u in shootdown-prometheus shootdown-influxdb; do
  grep -q "uid: $u" "$SHOOTDOWN_SRC/dashboards/grafana/provisioning/datasources/shootdown.yaml" && ok "provisioned datasource $u" || not_ok "datasource $u not provisioned"
done
# The checked-in JSON is what the generator writes.
cp -r "$SHOOTDOWN_SRC/dashboards" "$TMP/dash-regen"
python3 "$TMP/dash-regen/gen_dashboards.py"
if diff -r "$SHOOTDOWN_SRC/dashboards/grafana" "$TMP/dash-regen/grafana" >/dev/null; then ok "dashboards JSON up to date with gen_dashboards.py"; else not_ok "dashboards/grafana differs from gen_dashboards.py output"; fi
finish
