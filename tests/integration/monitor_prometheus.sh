# SPDX-License-Identifier: Apache-2.0
# monitor --listen: scrape /metrics around a known workload and check that the
# victim CPU's TLB counter grew by the workload's munmap count, within the
# noise measured in a control window of the same length; the exposition is
# checked by a strict parser below. Then SIGTERM: prompt exit 0, port closed,
# tracefs mounts as before. Loopback only; every wait is bounded.
source "$TEST_LIB"
set -e

command -v curl >/dev/null || skip "curl not installed"
LOOP="$SHOOTDOWN_BUILD/tests/integration/munmap_loop"
[[ -x "$LOOP" ]] || skip "munmap_loop not built ($LOOP)"
online=$(cat /sys/devices/system/cpu/online)
grep -Eq '^0-|^0,1' <<<"$online" || skip "needs CPUs 0 and 1 online (online: $online)"
need_tlb_ipis  # every rate here is checked against the victim CPU's TLB row

N=${MONITOR_TEST_ITERATIONS:-10000}
CULPRIT=0
VICTIM=1

# A free loopback port: ask the kernel (bind port 0), release it, use it.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')

# Strict Prometheus text exposition parser (format 0.0.4): every line is a
# HELP, a TYPE or a sample; HELP/TYPE at most once per family and before its
# samples; metric and label names by the spec's regexes; label values quoted
# with only \\, \" and \n escapes; integer or float values (+optional int
# timestamp); no duplicate series. Prints "name{labels} value" normalized.
parse_exposition() {
  awk '
  function fail(msg) { printf("exposition line %d: %s: %s\n", NR, msg, $0) > "/dev/stderr"; bad = 1; exit 1 }
  BEGIN { name_re = "^[a-zA-Z_:][a-zA-Z0-9_:]*$"; label_re = "^[a-zA-Z_][a-zA-Z0-9_]*$" }
  /\r/ { fail("carriage return") }
  /^# HELP / { n = $3; if (n !~ name_re) fail("bad metric name"); if (help[n]++) fail("second HELP"); if (seen[n]) fail("HELP after samples"); next }
  /^# TYPE / { n = $3; if (n !~ name_re) fail("bad metric name"); if (type[n]) fail("second TYPE"); if (seen[n]) fail("TYPE after samples");
               if ($4 !~ /^(counter|gauge|histogram|summary|untyped)$/ || NF != 4) fail("bad type"); type[n] = $4; next }
  /^#/ { next }
  /^$/ { fail("empty line") }
  {
    line = $0
    if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) fail("no metric name")
    n = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1); labels = ""
    if (substr(rest, 1, 1) == "{") {
      rest = substr(rest, 2)
      while (substr(rest, 1, 1) != "}") {
        if (!match(rest, /^[a-zA-Z_][a-zA-Z0-9_]*="/)) fail("bad label")
        lname = substr(rest, 1, RLENGTH - 2); rest = substr(rest, RLENGTH + 1)
        if (!match(rest, /^([^"\\]|\\\\|\\"|\\n)*"/)) fail("bad label value")
        lval = substr(rest, 1, RLENGTH - 1); rest = substr(rest, RLENGTH + 1)
        if (lseen[NR "|" lname]++) fail("duplicate label")
        labels = labels (labels == "" ? "" : ",") lname "=\"" lval "\""
        if (substr(rest, 1, 1) == ",") rest = substr(rest, 2)
        else if (substr(rest, 1, 1) != "}") fail("expected , or }")
      }
      rest = substr(rest, 2)
    }
    if (!match(rest, /^ [-+]?([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|NaN|[+-]Inf)( [-]?[0-9]+)?$/)) fail("bad value")
    split(substr(rest, 2), v, " ")
    base = n; sub(/_(total|created|bucket|sum|count)$/, "", base)
    if (!type[n] && !type[base]) fail("sample without TYPE")
    if (type[n] == "counter" || type[base] == "counter") if (v[1] + 0 < 0) fail("negative counter")
    key = n "{" labels "}"
    if (series[key]++) fail("duplicate series")
    seen[n] = 1
    print key, v[1]
  }
  END { if (bad) exit 1 }'
}

scrape() {  # scrape OUTFILE: fetch and parse; fails the test on a bad exposition
  curl -sS --max-time 5 -D "$1.headers" "http://127.0.0.1:$PORT/metrics" -o "$1.raw"
  grep -qi '^content-type: text/plain; version=0.0.4' "$1.headers" || { echo "bad content type: $(cat "$1.headers")"; return 1; }
  parse_exposition < "$1.raw" > "$1"
}
value() {  # value FILE SERIES
  awk -v k="$2" '$1 == k { print $2; found = 1 } END { if (!found) print "missing" }' "$1"
}

mounts_before=$(grep -c ' tracefs ' /proc/mounts || true)

# The monitor (its tracer reader and HTTP threads) stays off the victim CPU.
taskset -c $CULPRIT "$SHOOTDOWN" monitor 1s --listen "127.0.0.1:$PORT" >"$TMP/monitor.out" 2>"$TMP/monitor.err" &
MON=$!
cleanup() { kill -KILL "$MON" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

for _ in $(seq 1 100); do  # <= 10 s
  grep -q "serving http://127.0.0.1:$PORT/metrics" "$TMP/monitor.err" 2>/dev/null && break
  kill -0 "$MON" 2>/dev/null || break
  sleep 0.1
done
if grep -q "serving" "$TMP/monitor.err"; then ok "monitor listens on 127.0.0.1:$PORT"; else not_ok "monitor did not start: $(cat "$TMP/monitor.err")"; finish; fi
traced=0
grep -q "tracepoints unavailable" "$TMP/monitor.err" || traced=1

# Control window: same threads and duration, no munmap.
scrape "$TMP/m0" && ok "first scrape parses strictly" || not_ok "first scrape"
work_ms=300
"$LOOP" 100 control $CULPRIT $VICTIM $work_ms > "$TMP/control.txt"
scrape "$TMP/m1" && ok "second scrape parses strictly" || not_ok "second scrape"
# Work window: N munmaps of touched regions. The victim vCPU's steal time
# (/proc/stat) says how long the host had it descheduled: KVM's PV TLB flush
# skips the IPI to a preempted vCPU (it flushes on re-entry instead).
steal() { awk -v c="cpu$VICTIM" '$1 == c { print $9 }' /proc/stat; }
st0=$(steal)
"$LOOP" "$N" munmap $CULPRIT $VICTIM > "$TMP/work.txt"
st1=$(steal)
scrape "$TMP/m2" && ok "third scrape parses strictly" || not_ok "third scrape"
cat "$TMP/control.txt" "$TMP/work.txt" | sed 's/^/# /'

tlb="shootdown_tlb_interrupts_total{cpu=\"$VICTIM\"}"
v0=$(value "$TMP/m0" "$tlb"); v1=$(value "$TMP/m1" "$tlb"); v2=$(value "$TMP/m2" "$tlb")
if [[ "$v0" == missing || "$v1" == missing || "$v2" == missing ]]; then
  not_ok "series $tlb missing"; finish
fi
control=$((v1 - v0))
work=$((v2 - v1))
munmaps=$(sed -n 's/.*munmaps=\([0-9]*\).*/\1/p' "$TMP/work.txt")
elapsed_ms=$(sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' "$TMP/work.txt")
hz=$(getconf CLK_TCK)
steal_ms=$(((st1 - st0) * 1000 / hz))
# Expected: one IPI per munmap, minus those KVM skipped while the victim vCPU
# was preempted (steal_ms of elapsed_ms, + 1 tick of granularity), plus
# or minus the control window's noise and 1% of N.
tol=$((control + munmaps / 100 + 2))
skipped_max=$((munmaps * (steal_ms + 1000 / hz) / (elapsed_ms > 0 ? elapsed_ms : 1)))
low=$((munmaps - skipped_max - tol)); high=$((munmaps + tol))
excess=$((work - control))
echo "# victim cpu $VICTIM: control window +$control, work window +$work (excess $excess), munmaps $munmaps in $elapsed_ms ms"
echo "# victim vCPU steal during the work window: $steal_ms ms -> up to $skipped_max IPIs skipped by PV TLB flush; accepted [$low, $high]"
if ((excess >= low && excess <= high)); then ok "victim TLB counter grew by the munmap count ($excess of $munmaps, noise $control, steal $steal_ms ms)"; else not_ok "victim TLB counter grew by $excess, expected [$low, $high]"; fi
if [[ $(value "$TMP/m2" "shootdown_call_function_interrupts_total{cpu=\"$VICTIM\"}") != missing ]]; then ok "CAL counter exported"; else not_ok "CAL counter missing"; fi

if ((traced)); then
  rs="shootdown_tlb_flush_total{cpu=\"$VICTIM\",reason=\"remote_shootdown\"}"
  si="shootdown_tlb_flush_total{cpu=\"$CULPRIT\",reason=\"remote_send_ipi\"}"
  r1=$(value "$TMP/m1" "$rs"); r2=$(value "$TMP/m2" "$rs"); s1=$(value "$TMP/m1" "$si"); s2=$(value "$TMP/m2" "$si")
  echo "# tracepoint: victim remote_shootdown +$((r2 - r1)), culprit remote_send_ipi +$((s2 - s1))"
  # Two readers of the same IPIs: the tracepoint on the receiver and /proc/interrupts.
  d=$((r2 - r1 - work)); d=${d#-}
  if ((d <= tol)); then ok "tlb_flush remote_shootdown on the victim matches the TLB counter ($((r2 - r1)) vs $work)"; else not_ok "remote_shootdown grew by $((r2 - r1)), TLB counter by $work (tolerance $tol)"; fi
  d=$((s2 - s1 - munmaps)); d=${d#-}
  if ((d <= tol)); then ok "tlb_flush remote_send_ipi on the culprit matches the munmaps ($((s2 - s1)) vs $munmaps)"; else not_ok "remote_send_ipi grew by $((s2 - s1)), expected $munmaps +- $tol"; fi
  # munmap_loop exited before the scrape: its comm was read from /proc while it
  # ran (the monitor folds events in every 100 ms), not lost to "?".
  pi=$(awk '$1 ~ /^shootdown_process_initiated_total\{/ && $1 ~ /comm="munmap_loop"/ { s += $2 } END { print s + 0 }' "$TMP/m2")
  if ((pi * 10 >= munmaps * 9)); then ok "short-lived initiator named: munmap_loop initiated $pi of $munmaps after it exited"; else
    not_ok "munmap_loop's series holds $pi of $munmaps: $(grep '^shootdown_process_initiated_total' "$TMP/m2" | head -4)"; fi
else
  echo "# tracepoints unavailable: $(cat "$TMP/monitor.err")"
fi

# Prompt, clean exit on SIGTERM.
t0=$(date +%s%N)
kill -TERM "$MON"
rc=none
for _ in $(seq 1 50); do  # <= 5 s
  if ! kill -0 "$MON" 2>/dev/null; then set +e; wait "$MON"; rc=$?; set -e; break; fi
  sleep 0.1
done
ms=$((($(date +%s%N) - t0) / 1000000))
if [[ "$rc" == 0 ]] && ((ms < 2000)); then ok "exits 0 within ${ms} ms of SIGTERM"; else not_ok "after SIGTERM: rc=$rc after ${ms} ms"; fi
if curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" >/dev/null; then not_ok "port $PORT still served"; else ok "server closed"; fi
mounts_after=$(grep -c ' tracefs ' /proc/mounts || true)
if [[ "$mounts_before" == "$mounts_after" ]]; then ok "tracefs mounts unchanged ($mounts_after)"; else not_ok "tracefs mounts $mounts_before -> $mounts_after"; fi
if grep -q "TLB/s" "$TMP/monitor.out"; then ok "non-TTY line output"; else not_ok "no line output: $(head -3 "$TMP/monitor.out")"; fi
finish
