#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Injected faults and their documented outcome (docs/exit-codes.md): a clear
# message, partial results kept and marked, the exit code as documented,
# never a hang, a crash or a half-written file passed off as whole.
source "$TEST_LIB"
command -v python3 >/dev/null || skip "python3 not found"
need_root "faults are injected as root (drop to nobody, tmpfs mounts)"
A=(--chunk-size 8MiB --report-every 1MiB --trigger after=10ms --baseline 50ms --after 50ms)
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
no_crash() { if ((RC < 128)) || ((RC == 130 || RC == 143)); then ok "$1: no crash (rc=$RC)"; else not_ok "$1: died by signal (rc=$RC): $ERR"; fi; }
jq_py() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
cd "$TMP" && chmod 755 "$TMP"
TRACEFS_BEFORE=$(grep tracefs /proc/mounts || true)

# 1. mlock refused (RLIMIT_MEMLOCK 0, unprivileged): the run completes, the
#    result says the samples may be disturbed.
run_cmd "${NOBODY[@]}" prlimit --memlock=0:0 "$SHOOTDOWN" run "${A[@]}" --trace off --json
no_crash "RLIMIT_MEMLOCK=0"
expect_rc 0 "RLIMIT_MEMLOCK=0: run completes"
echo "$OUT" >"$TMP/memlock.json"
# (Not under ASan/TSan: their runtimes map and lock memory of their own.)
if "$SHOOTDOWN" --version | grep -qE '\+(address|thread)'; then ok "# skip RLIMIT_MEMLOCK warning: sanitizer build"
elif jq_py "$TMP/memlock.json" "any('mlock' in w for w in j['warnings'])" | grep -q True; then ok "RLIMIT_MEMLOCK=0: warning in the result"; else not_ok "RLIMIT_MEMLOCK=0: no mlock warning"; fi

# 2. mmap refused (RLIMIT_AS too small for the chunks): exit 1, one clear line.
#    (Not under ASan/TSan: their shadow memory needs terabytes of address space.)
if "$SHOOTDOWN" --version | grep -qE '\+(address|thread)'; then
  ok "# skip RLIMIT_AS: sanitizer build"
else
run_cmd prlimit --as=$((200 * 1024 * 1024)) "$SHOOTDOWN" run "${A[@]/8MiB/512MiB}" --trace off --out "$TMP/as"
no_crash "RLIMIT_AS"
expect_rc 1 "mmap failing: exit 1"
expect_err "error: .*(mmap|malloc|memory|allocat)" "mmap failing: says so"
expect_no_file "$TMP/as/result.json" "mmap failing: no result.json"
fi

# 2b. A memory-limited cgroup (a container, a systemd slice with MemoryMax):
#     MemAvailable alone let the default chunks exceed the limit and the kernel
#     OOM-killed the run (SIGKILL, nothing written: measured in a 300 MiB v1
#     cgroup, rc=137). Now the default chunks are capped under the limit and
#     the run completes; an explicit --chunk-size beyond it is refused in one
#     line naming the cgroup (exit 2, no files).
CG=""
read -r cgv cgpath < <(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print 1, $3; exit} $1 == "0" && $2 == "" {v2=$3} END {if (v2 != "") print 2, v2}' /proc/self/cgroup | head -1)
if [[ ${cgv:-} == 1 ]]; then
  cgmnt=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
  cgroot=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)memory(,|$)/ {print $4; exit}' /proc/self/mountinfo)
  limit_file=memory.limit_in_bytes
else
  cgmnt=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
  cgroot=$(awk '$0 ~ / - cgroup2 / {print $4; exit}' /proc/self/mountinfo)
  limit_file=memory.max
fi
if [[ -n ${cgmnt:-} && -n ${cgpath:-} ]]; then
  rel=${cgpath#"$cgroot"}
  CG="$cgmnt/${rel#/}/shootdown-test-$$"
  CG=${CG//\/\//\/}
  if ! mkdir "$CG" 2>/dev/null || [[ ! -e $CG/$limit_file ]] || ! echo $((300 << 20)) >"$CG/$limit_file" 2>/dev/null; then
    rmdir "$CG" 2>/dev/null
    CG=""
  fi
fi
if [[ -z $CG ]]; then
  ok "# skip memory cgroup: no writable memory cgroup under this process's (cgroup v${cgv:-?} at ${cgmnt:-nowhere})"
elif "$SHOOTDOWN" --version | grep -qE '\+(address|thread)'; then
  ok "# skip memory cgroup: sanitizer build (shadow memory is charged to the cgroup)"
  rmdir "$CG"
else
  in_cg() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
  run_cmd in_cg "$SHOOTDOWN" run --trigger after=100ms --baseline 100ms --after 100ms --trace off --json
  no_crash "memory cgroup of 300 MiB, default chunks"
  expect_rc 0 "memory cgroup, default chunks: run completes"
  if grep -q "capped .* memory cgroup .*limit 300 MiB" <<<"$OUT$ERR"; then ok "memory cgroup: the chunks were capped under its limit, said"; else not_ok "memory cgroup: no capping warning naming the cgroup"; fi
  run_cmd in_cg "$SHOOTDOWN" run --chunk-size 1GiB --trigger after=100ms --out "$TMP/cg1g"
  expect_rc 2 "memory cgroup, --chunk-size 1GiB: refused"
  expect_err_lines 1 "memory cgroup, --chunk-size 1GiB: one line"
  expect_err "--chunk-size 1GiB: .*memory cgroup .*limit 300 MiB.*use at most" "memory cgroup: names the cgroup and what fits"
  expect_no_file "$TMP/cg1g" "memory cgroup, refused: no files"
  rmdir "$CG" 2>/dev/null || true
fi

# 3. perf_event_open refused (unprivileged, perf_event_paranoid > -1).
run_cmd "${NOBODY[@]}" "$SHOOTDOWN" run "${A[@]}" --trace on
expect_rc 1 "perf refused, --trace on: exit 1"
expect_err "trace on: kernel tracing unavailable.*(paranoid|root)" "perf refused: names the reason and the fix"
run_cmd "${NOBODY[@]}" "$SHOOTDOWN" run "${A[@]}" --trace auto --json
expect_rc 0 "perf refused, --trace auto: completes"
echo "$OUT" >"$TMP/noperf.json"
if jq_py "$TMP/noperf.json" "j['trace']['status']" | grep -q "^unavailable: "; then ok "perf refused: result says why the evidence is missing"; else not_ok "perf refused: trace status not 'unavailable: ...'"; fi

# 3b. tracefs absent: in a private mount namespace, /sys/kernel is an empty
#     read-only tmpfs (no tracing/ to mount on).
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  run_cmd unshare -m --propagation private sh -c "mount -t tmpfs -o ro,size=4k none /sys/kernel &&
    exec \"$SHOOTDOWN\" run ${A[*]} --trace on"
  expect_rc 1 "tracefs absent, --trace on: exit 1"
  expect_err "tracefs not mounted" "tracefs absent: says so"
  run_cmd unshare -m --propagation private sh -c "mount -t tmpfs -o ro,size=4k none /sys/kernel &&
    exec \"$SHOOTDOWN\" run ${A[*]} --trace auto --json"
  expect_rc 0 "tracefs absent, --trace auto: completes"
  echo "$OUT" >"$TMP/notracefs.json"
  if jq_py "$TMP/notracefs.json" "j['trace']['status']" | grep -q "^unavailable: tracefs"; then
    ok "tracefs absent: result says why the evidence is missing"
  else not_ok "tracefs absent: trace status not 'unavailable: tracefs ...'"; fi
else
  ok "# skip tracefs absent: no mount namespaces"
fi

# 4. Too few file descriptors: tracepoints that cannot open are listed as
#    missing with the reason; the run still completes.
# (Not under ASan/TSan: their runtimes hold file descriptors of their own.)
if "$SHOOTDOWN" --version | grep -qE '\+(address|thread)'; then
  ok "# skip ulimit -n 12: sanitizer build"
else
run_cmd bash -c "ulimit -n 12; exec \"$SHOOTDOWN\" run ${A[*]} --trace on --json"
no_crash "ulimit -n 12"
expect_rc 0 "ulimit -n 12: completes with what it could open"
echo "$OUT" >"$TMP/nofile.json"
if jq_py "$TMP/nofile.json" "any('Too many open files' in m for m in j['trace']['missing'])" | grep -q True; then
  ok "ulimit -n 12: missing tracepoints listed with the reason"
else not_ok "ulimit -n 12: EMFILE not recorded"; fi
fi

# 5. --out on a full filesystem (256 KiB tmpfs): exit 1, the reason, and no
#    partial file left (atomic writer removes its temporary).
mkdir -p "$TMP/full"
if mount -t tmpfs -o size=256k tmpfs "$TMP/full"; then
  run_cmd "$SHOOTDOWN" run "${A[@]}" --trace off --out "$TMP/full/o"
  no_crash "full filesystem"
  expect_rc 1 "full filesystem: exit 1"
  expect_err "No space left on device" "full filesystem: says why"
  left=$(find "$TMP/full/o" -type f 2>/dev/null | grep -v -E '\.(csv|hlog|hgrm|html)$' || true)
  tmpf=$(find "$TMP/full/o" -name '*.tmp*' 2>/dev/null || true)
  if [[ -z $tmpf ]]; then ok "full filesystem: no temporary files left"; else not_ok "full filesystem: left $tmpf"; fi
  if [[ ! -e $TMP/full/o/result.json ]] || python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$TMP/full/o/result.json"; then
    ok "full filesystem: no half-written result.json"
  else not_ok "full filesystem: result.json is truncated"; fi
  umount "$TMP/full"
else
  ok "# skip full filesystem: cannot mount tmpfs"
fi

# 6. InfluxDB that accepts connections and never answers: the run ends,
#    files written, a warning, exit 0 (the sink is a warning, not an error).
python3 - "$TMP/port" <<'PY' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
conns = []
s.settimeout(1)
t = time.time()
while time.time() - t < 120:
    try:
        c, _ = s.accept(); conns.append(c)   # accept, never read, never answer
    except socket.timeout:
        pass
PY
mute=$!
for _ in $(seq 50); do [[ -s $TMP/port ]] && break; sleep 0.1; done
t0=$SECONDS
run_cmd timeout 100 "$SHOOTDOWN" run "${A[@]}" --trace off --out "$TMP/influx" --influx "http://127.0.0.1:$(cat "$TMP/port")/write?db=x"
kill "$mute" 2>/dev/null || true; wait "$mute" 2>/dev/null || true
expect_rc 0 "silent InfluxDB: exit 0"
if ((SECONDS - t0 < 90)); then ok "silent InfluxDB: no hang ($((SECONDS - t0)) s)"; else not_ok "silent InfluxDB: took $((SECONDS - t0)) s"; fi
expect_err "influx.*(timed? ?out|timeout|no response|failed)" "silent InfluxDB: warning says so"
expect_file "$TMP/influx/result.json" "silent InfluxDB: files written"

# 7. SIGKILL during a run: nothing half-written is passed off as whole, and
#    `report` on what is left says what is missing (exit 2).
"$SHOOTDOWN" run --chunk-size 64MiB --trigger after=5s --baseline 5s --after 5s --trace off -q --out "$TMP/killed" \
  >/dev/null 2>&1 &
victim=$!
sleep 1.5
kill -KILL "$victim" || true; wait "$victim" 2>/dev/null || true
run_cmd "$SHOOTDOWN" report "$TMP/killed"
no_crash "report after SIGKILL"
expect_rc 2 "report after SIGKILL: exit 2"
expect_err "result.json: missing.*killed" "report after SIGKILL: says result.json is missing and why"
expect_err_lines 1 "report after SIGKILL: one line"
tmpf=$(find "$TMP/killed" -name '*.tmp*' 2>/dev/null || true)
if [[ -z $(find "$TMP/killed" -name 'result.json' 2>/dev/null) ]]; then ok "SIGKILL: no result.json claiming a whole run"; else not_ok "SIGKILL: result.json exists"; fi

# 8. Targets of blame/probe that exit at once, or fail to start.
for sub in blame probe; do
  run_cmd timeout 60 "$SHOOTDOWN" "$sub" -- true
  no_crash "$sub -- true"
  if [[ $RC == 0 || $RC == 1 ]]; then ok "$sub -- true: documented exit code ($RC)"; else not_ok "$sub -- true: rc=$RC"; fi
  run_cmd timeout 60 "$SHOOTDOWN" "$sub" -- /nonexistent/command
  no_crash "$sub -- /nonexistent"
  if [[ $RC == 1 || $RC == 2 ]]; then ok "$sub -- /nonexistent: exit $RC"; else not_ok "$sub -- /nonexistent: rc=$RC: $ERR"; fi
  expect_err "nonexistent" "$sub -- /nonexistent: names the command"
  run_cmd timeout 60 "$SHOOTDOWN" "$sub" -- sh -c 'kill -KILL $$'
  no_crash "$sub target killed"
  if [[ $RC == 0 || $RC == 1 ]]; then ok "$sub target killed: exit $RC"; else not_ok "$sub target killed: rc=$RC: $ERR"; fi
done
# 8b. The target exiting at every phase of the session: before the probe
#     library has set up (0 s), while it sets up its ring (20 ms), during the
#     measurement (300 ms); and blame -p of a process that exits before the
#     --duration ends. Outcome: exit 0 with a report, or exit 1 with one line
#     saying why (never a crash, a hang or empty tables).
for d in 0 0.02 0.3; do
  for sub in blame probe; do
    run_cmd timeout 60 "$SHOOTDOWN" "$sub" -- sh -c "sleep $d"
    no_crash "$sub -- sh -c 'sleep $d'"
    case $RC in
      0) if grep -Eq "^shootdown blame: pid [0-9]+ |^the probe on cpu[0-9]+ " <<<"$OUT"; then ok "$sub, target exits after ${d}s: a report (rc=0)"; else not_ok "$sub, target exits after ${d}s: rc=0 without a report: $(head -3 <<<"$OUT")"; fi ;;
      1) if [[ $(grep -c "error:" <<<"$ERR") == 1 ]] && grep -q "no sample arrived\|exited" <<<"$ERR"; then ok "$sub, target exits after ${d}s: one line why (rc=1)"; else not_ok "$sub, target exits after ${d}s: rc=1: $ERR"; fi ;;
      *) not_ok "$sub, target exits after ${d}s: rc=$RC: $ERR" ;;
    esac
  done
done
sleep 0.2 &
GONE=$!
run_cmd timeout 30 "$SHOOTDOWN" blame -p "$GONE" --duration 2s
no_crash "blame -p of a process that exits after 0.2 s"
expect_rc 0 "blame -p, the target exits before --duration: the report of what it saw"
expect_out "^shootdown blame: pid $GONE sleep, [0-9.]+ ms" "blame -p: the report says the time it saw (under 2 s)"

# Kernel state restored: no tracefs mount of ours left behind.
if grep -q "tracefs" /proc/mounts && ! grep -q tracefs <<<"$TRACEFS_BEFORE"; then not_ok "a tracefs mount was left"; else ok "no tracefs mount left"; fi
finish
