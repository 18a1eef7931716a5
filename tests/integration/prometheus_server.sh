#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# monitor --listen scraped by a real Prometheus server (Debian's prometheus):
# the test starts its own server on 127.0.0.1 (free port, temporary TSDB,
# 1 s scrape interval) with one job scraping `shootdown monitor`, runs a known
# shootdown load (munmap_loop: N munmaps of touched pages, a spinning victim
# on CPU 1) between two quiet periods, and asks Prometheus's HTTP API:
#   - the raw samples around the load: their delta equals the
#     /proc/interrupts TLB delta the script read itself around the load, up
#     to the background measured in the quiet periods (one scrape interval's
#     counts at each end);
#   - increase() over exactly the samples' span equals that raw delta;
#   - rate() * window over a window covering the load equals the
#     /proc/interrupts delta within the extrapolation Prometheus does at the
#     window's two ends (at most 1.1 scrape intervals each, at the window's
#     average rate) plus the background;
#   - the tracepoint counters (reason 4 on the culprit, reason 1 on the
#     victim) and the bounded per-process series of munmap_loop agree with
#     the munmap count;
#   - `promtool check metrics` has nothing to say about the exposition;
#   - the number of series stays within the documented bound.
# Stops both servers it started (by PID). Skips (77) only when prometheus
# cannot be installed or CPUs 0 and 1 are not online.
source "$TEST_LIB"
set -e

online=$(cat /sys/devices/system/cpu/online)
grep -Eq '^0-|^0,1' <<<"$online" || skip "needs CPUs 0 and 1 online (online: $online)"
"$SHOOTDOWN_SRC"/scripts/install-deps.sh --with-integration >&2 || true
command -v prometheus >/dev/null && command -v promtool >/dev/null ||
  skip "prometheus not installable (scripts/install-deps.sh --with-integration did not provide prometheus/promtool)"
for t in curl jq python3; do command -v $t >/dev/null || skip "$t not found after install-deps"; done
LOOP="$SHOOTDOWN_BUILD/tests/integration/munmap_loop"
[[ -x "$LOOP" ]] || skip "munmap_loop not built ($LOOP)"

N=${PROM_TEST_ITERATIONS:-10000}
CULPRIT=0
VICTIM=1
SCRAPE_S=1
SERIES=5
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
MPORT=$(free_port)
PPORT=$(free_port)
MON=
PROM=
cleanup() {
  [[ -n "$PROM" ]] && kill "$PROM" 2>/dev/null && wait "$PROM" 2>/dev/null
  [[ -n "$MON" ]] && kill "$MON" 2>/dev/null && wait "$MON" 2>/dev/null
  [[ -n "${CG_NAME:-}" ]] && rmdir "$CG_MNT$CG_NAME" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

taskset -c $CULPRIT "$SHOOTDOWN" monitor 1s --listen "127.0.0.1:$MPORT" --series $SERIES >/dev/null 2>"$TMP/monitor.err" &
MON=$!
for _ in $(seq 1 100); do
  grep -q "serving" "$TMP/monitor.err" 2>/dev/null && break
  kill -0 "$MON" 2>/dev/null || break
  sleep 0.1
done
grep -q "serving http://127.0.0.1:$MPORT/metrics" "$TMP/monitor.err" || {
  not_ok "monitor did not start: $(cat "$TMP/monitor.err")"
  finish
}
traced=1
grep -q "tracepoints unavailable" "$TMP/monitor.err" && traced=0

# promtool's linter on our exposition: no output, exit 0.
curl -sS --max-time 5 "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
set +e
lint=$(promtool check metrics <"$TMP/metrics.txt" 2>&1)
lint_rc=$?
set -e
if [[ $lint_rc == 0 && -z "$lint" ]]; then ok "promtool check metrics: no findings ($(grep -vc '^#' "$TMP/metrics.txt") series)"; else
  not_ok "promtool check metrics (rc $lint_rc): $lint"
fi

mkdir -p "$TMP/prom"
cat >"$TMP/prom/prometheus.yml" <<YML
global:
  scrape_interval: ${SCRAPE_S}s
  scrape_timeout: ${SCRAPE_S}s
  evaluation_interval: ${SCRAPE_S}s
scrape_configs:
  - job_name: shootdown
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
YML
promtool check config "$TMP/prom/prometheus.yml" >/dev/null 2>&1 && ok "promtool check config" || not_ok "promtool check config"
# Off the victim CPU like the monitor.
taskset -c $CULPRIT prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prom/log" 2>&1 &
PROM=$!
API="http://127.0.0.1:$PPORT/api/v1"
q() {  # q QUERY [TIME]: instant query, prints the JSON result array
  local args=(--data-urlencode "query=$1")
  [[ -n "${2:-}" ]] && args+=(--data-urlencode "time=$2")
  curl -sS --max-time 10 "$API/query" "${args[@]}" | jq -c '.data.result'
}
up=0
for _ in $(seq 1 300); do  # <= 30 s: server start plus a first scrape
  if [[ $(q 'up{job="shootdown"}' 2>/dev/null | jq -r '.[0].value[1] // empty' 2>/dev/null) == 1 ]]; then up=1; break; fi
  kill -0 "$PROM" 2>/dev/null || break
  sleep 0.1
done
if ((up)); then ok "prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') scrapes the monitor (up == 1)"; else
  sed 's/^/#   /' "$TMP/prom/log" | tail -20
  not_ok "prometheus did not scrape the monitor"
  finish
fi

tlb_cpu() { awk -v c=$((${1} + 2)) '$1 == "TLB:" { print $c }' /proc/interrupts; }
tlb_sum() { awk -v n="$(nproc)" '$1 == "TLB:" { s = 0; for (i = 2; i <= n + 1; i++) s += $i; print s }' /proc/interrupts; }
sleep 3.2  # quiet period: at least 3 samples before the load
t0=$(date +%s.%N)
p0=$(tlb_cpu $VICTIM)
s0=$(tlb_sum)
# The load runs in its own cgroup v2 (a "container"), when cgroup2 is mounted
# and writable; removed at exit.
CG_MNT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
CG_NAME=
if [[ -n "$CG_MNT" ]] && mkdir "$CG_MNT/shootdown-test.$$" 2>/dev/null; then CG_NAME="/shootdown-test.$$"; fi
if [[ -n "$CG_NAME" ]]; then
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CG_MNT$CG_NAME" "$LOOP" "$N" munmap $CULPRIT $VICTIM >"$TMP/work.txt"
else
  "$LOOP" "$N" munmap $CULPRIT $VICTIM >"$TMP/work.txt"
fi
p1=$(tlb_cpu $VICTIM)
s1=$(tlb_sum)
t1=$(date +%s.%N)
sleep 3.2  # quiet period after: at least 3 samples
tq=$(date +%s.%N)
munmaps=$(sed -n 's/.*munmaps=\([0-9]*\).*/\1/p' "$TMP/work.txt")
D=$((p1 - p0))
DS=$((s1 - s0))
echo "# load: $(cat "$TMP/work.txt"); /proc/interrupts TLB: victim +$D, all CPUs +$DS, t0=$t0 t1=$t1"

# The window rate() sees: from just after t0 - 2 s to tq.
# Raw samples of the victim's counter, from before the quiet period on.
sel="shootdown_tlb_interrupts_total{job=\"shootdown\",cpu=\"$VICTIM\"}"
span=$(python3 -c "import math; print(math.ceil($tq - $t0) + 4)")
q "$sel[${span}s]" "$tq" | jq -c '.[0].values' >"$TMP/raw.json"
read -r ta va tb vb bg nsamples < <(jq -r --argjson t0 "$t0" --argjson t1 "$t1" '
  map([.[0], (.[1] | tonumber)]) as $s
  | ($s | map(select(.[0] < $t0)) ) as $pre | ($s | map(select(.[0] > $t1))) as $post
  | ($pre | last) as $a | ($post | first) as $b
  # background: the largest change between consecutive samples in the quiet periods
  | ([$pre, $post] | map([range(1; length) as $i | .[$i][1] - .[$i-1][1]] as $d | $d) | flatten | max // 0) as $bg
  | "\($a[0]) \($a[1]) \($b[0]) \($b[1]) \($bg) \($s | length)"' "$TMP/raw.json")
R=$((${vb%.*} - ${va%.*}))
bg=${bg%.*}
tol=$((2 * bg + 2))
echo "# prometheus samples: $nsamples; last before load @$ta = $va, first after @$tb = $vb; raw delta $R; background per scrape <= $bg"
d=$((R - D))
if ((d >= 0 && d <= tol)); then ok "raw sample delta $R matches /proc/interrupts delta $D (+$d, background allowance $tol)"; else
  not_ok "raw sample delta $R vs /proc/interrupts $D (diff $d, allowed 0..$tol)"
fi

# increase() over exactly [ta, tb] (range in ms, evaluated at tb): no extrapolation.
range_ms=$(python3 -c "print(round(($tb - $ta) * 1000))")
inc=$(q "increase($sel[${range_ms}ms])" "$tb" | jq -r '.[0].value[1]')
if python3 -c "import sys; sys.exit(0 if abs($inc - $R) < 0.5 else 1)"; then ok "increase() over the samples' span = $inc = raw delta"; else
  not_ok "increase() over [$ta, $tb] = $inc, raw delta $R"
fi

rx=$(q "rate($sel[${range_ms}ms])" "$tb" | jq -r '.[0].value[1]')
est=$(python3 -c "print(round($rx * $range_ms / 1000))")
d=$((est - D))
if ((d >= 0 && d <= tol)); then ok "rate() over the samples' span x span = $est matches /proc/interrupts $D (+$d <= $tol)"; else
  not_ok "rate() x span = $est vs /proc/interrupts $D (allowed 0..$tol)"
fi
# rate() over a window covering the load and both quiet periods, at tq.
W=$(python3 -c "import math; print(math.floor($tq - $t0) + 2)")
rate=$(q "rate($sel[${W}s])" "$tq" | jq -r '.[0].value[1]')
sampled=$(jq -r --argjson lo "$(python3 -c "print($tq - $W)")" --argjson hi "$tq" \
  'map(select(.[0] >= $lo and .[0] <= $hi)) | (last[0] - first[0])' "$TMP/raw.json")
read -r est allow < <(python3 -c "
est = $rate * $W
# extrapolation: <= 1.1 scrape intervals at each end at the average rate, plus background
allow = 2 * 1.1 * $SCRAPE_S * $D / $sampled + 2 * $bg + 2
print(round(est), round(allow))")
d=$((est - D)); d=${d#-}
if ((d <= allow)); then ok "rate()*${W}s = $est matches /proc/interrupts delta $D (|diff| $d <= $allow: extrapolation + background)"; else
  not_ok "rate()*${W}s = $est vs /proc/interrupts $D (|diff| $d > $allow)"
fi
# The same across CPUs: sum(increase()) over exactly [ta, tb].
sinc=$(q "sum(increase(shootdown_tlb_interrupts_total{job=\"shootdown\"}[${range_ms}ms]))" "$tb" | jq -r '.[0].value[1] | tonumber | round')
d=$((sinc - DS))
# background of all CPUs: per CPU the largest change between consecutive
# quiet-period samples, summed
bgall=$(q "shootdown_tlb_interrupts_total{job=\"shootdown\"}[${span}s]" "$tq" | jq -r --argjson t0 "$t0" --argjson t1 "$t1" '
  map(.values | map([.[0], (.[1] | tonumber)]) | [map(select(.[0] < $t0)), map(select(.[0] > $t1))]
      | map([range(1; length) as $i | .[$i][1] - .[$i-1][1]] as $d | $d) | flatten | max // 0) | add')
stol=$((2 * ${bgall%.*} + 2 * $(nproc)))
if ((d >= 0 && d <= stol)); then ok "sum over CPUs of increase() $sinc matches /proc/interrupts $DS (+$d <= $stol)"; else
  not_ok "sum(increase()) $sinc vs /proc/interrupts all CPUs $DS (diff $d, allowed 0..$stol)"
fi

if ((traced)); then
  reason() { q "increase(shootdown_tlb_flush_total{job=\"shootdown\",cpu=\"$1\",reason=\"$2\"}[${range_ms}ms])" "$tb" | jq -r '.[0].value[1] | tonumber | round'; }
  si=$(reason $CULPRIT remote_send_ipi)
  rs=$(reason $VICTIM remote_shootdown)
  ptol=$((munmaps / 100 + tol))
  d=$((si - munmaps)); d=${d#-}
  # The allowance for other processes' flushes on the culprit CPU comes from
  # the TLB row's background, which is 0 where no IPI arrives (the per-cgroup
  # check below still pins the load's own requests).
  if ! tlb_ipis_reach; then skip_check "increase(remote_send_ipi) $si ~ munmaps $munmaps: allowance from the TLB row: $NO_TLB_IPIS"
  elif ((d <= ptol)); then ok "increase(remote_send_ipi) on the culprit $si ~ munmaps $munmaps (+-$ptol)"; else not_ok "remote_send_ipi $si vs munmaps $munmaps"; fi
  d=$((rs - D)); d=${d#-}
  if ((d <= ptol)); then ok "increase(remote_shootdown) on the victim $rs ~ /proc/interrupts $D (+-$ptol)"; else not_ok "remote_shootdown $rs vs $D"; fi
  # Per-process series: munmap_loop's series carries its comm and cgroup.
  # A series born during the load (a new pid, a new cgroup) starts at 0, and
  # increase() cannot count what its first sample already holds: read the
  # counters' values at tb instead (all they ever counted).
  pi=$(q "sum(shootdown_process_initiated_total{job=\"shootdown\",comm=\"munmap_loop\"})" "$tb" | jq -r '.[0].value[1] // "0" | tonumber | round')
  # It may start in pid="other" until it outweighs the weakest named series
  # (core/bounded_series.hpp): nothing is lost (its series + other >= the
  # munmaps) and most of it is in its own series.
  po=$(q "sum(increase(shootdown_process_initiated_total{job=\"shootdown\",pid=\"other\"}[${range_ms}ms]))" "$tb" | jq -r '.[0].value[1] // "0" | tonumber | round')
  if ((pi >= munmaps / 2 && pi + po >= munmaps - ptol && pi <= munmaps + ptol)); then ok "per-process series: munmap_loop initiated $pi of $munmaps (+ $po in pid=other)"; else
    not_ok "process_initiated munmap_loop $pi (+ other $po) vs $munmaps"
  fi
  want=${CG_NAME:-$(sed -n 's/^0:://p' /proc/self/cgroup)}
  if [[ -n "$CG_NAME" ]]; then cf() { echo "$1{job=\"shootdown\",cgroup=\"$want\"}"; }; else cf() { echo "increase($1{job=\"shootdown\",cgroup=\"$want\"}[${range_ms}ms])"; }; fi
  ci=$(q "$(cf shootdown_cgroup_initiated_total)" "$tb" | jq -r '.[0].value[1] // "0" | tonumber | round')
  cr=$(q "$(cf shootdown_cgroup_received_total)" "$tb" | jq -r '.[0].value[1] // "0" | tonumber | round')
  echo "# cgroup $want: initiated +$ci, received +$cr"
  if ((ci >= munmaps * 9 / 10 && ci <= munmaps + ptol)); then ok "cgroup $want initiated $ci of $munmaps"; else not_ok "cgroup $want initiated $ci, expected ~$munmaps"; fi
  if ((cr >= rs * 9 / 10 && cr <= rs + ptol)); then ok "cgroup $want received $cr of the victim's $rs remote_shootdown"; else not_ok "cgroup $want received $cr, expected ~$rs"; fi
  # Cardinality: at most SERIES named + other per family.
  for f in shootdown_process_initiated_total shootdown_cgroup_initiated_total shootdown_cgroup_received_total; do
    n=$(q "count($f{job=\"shootdown\"})" "$tq" | jq -r '.[0].value[1]')
    if ((n >= 1 && n <= SERIES + 1)); then ok "$f: $n series (bound $((SERIES + 1)))"; else not_ok "$f: $n series, bound $((SERIES + 1))"; fi
  done
else
  echo "# tracepoints unavailable: tracepoint/per-process checks not run: $(cat "$TMP/monitor.err")"
fi

# promtool again, now that the per-process and per-cgroup families have named series.
curl -sS --max-time 5 "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics2.txt"
set +e
lint=$(promtool check metrics <"$TMP/metrics2.txt" 2>&1)
lint_rc=$?
set -e
if [[ $lint_rc == 0 && -z "$lint" ]]; then ok "promtool check metrics after the load: no findings ($(grep -vc '^#' "$TMP/metrics2.txt") series)"; else
  not_ok "promtool check metrics after the load (rc $lint_rc): $lint"
fi

# Scrape health over the whole test.
fails=$(q "sum(count_over_time(up{job=\"shootdown\"}[${span}s])) - sum(sum_over_time(up{job=\"shootdown\"}[${span}s]))" "$tq" | jq -r '.[0].value[1]')
if [[ "$fails" == 0 ]]; then ok "no failed scrapes"; else not_ok "$fails failed scrapes"; fi

kill "$PROM"
wait "$PROM" 2>/dev/null || true
PROM=
if curl -s --max-time 2 "$API/query?query=up" >/dev/null; then not_ok "prometheus still answering"; else ok "prometheus stopped"; fi
finish
