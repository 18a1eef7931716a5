# SPDX-License-Identifier: Apache-2.0
# Sourced by the suites inside the guest. $1 = output directory.
out=$1
SD=/bin/shootdown
# Small and short: under TCG every latency is meaningless, every count exact.
RUNARGS="--chunk-size 16M --batch 64K --trigger after=200ms --baseline 200ms --settle 5ms --after 200ms --trace on -q"
echo "$(cat /proc/sys/kernel/perf_event_paranoid)" >"$out/perf_event_paranoid"

# The checks read counts, never raw samples: result.json's raw_windows (up to
# 200000 samples per victim and release, 44 MB of a 7-victim run) are cut
# before the result leaves the guest, where every byte costs a serial-port
# write under TCG. dump(1) puts each top-level key at one space of indent.
strip_raw() {
  [ -s "$1" ] || return 0
  sed -i '/^ "raw_windows": \[$/,/^ \],$/d' "$1"
}

# case NAME [--as nobody] ARGS...: one `shootdown run --json` into $out/NAME.
case_run() {
  name=$1
  shift
  as=
  if [ "$1" = "--as" ]; then
    as=$2
    shift 2
  fi
  d=$out/$name
  mkdir -p "$d"
  echo "$*" >"$d/args"
  t0=$(cut -d' ' -f1 /proc/uptime)
  if [ -n "$as" ]; then
    chmod 777 "$d"
    su "$as" -s /bin/sh -c "timeout 240 $SD run --json $* >$d/result.json 2>$d/stderr; echo \$? >$d/rc"
  else
    timeout 240 $SD run --json "$@" >"$d/result.json" 2>"$d/stderr"
    echo $? >"$d/rc"
  fi
  awk -v s="$t0" '{print $1 - s}' /proc/uptime >"$d/seconds"
  strip_raw "$d/result.json"
  echo "case $name rc=$(cat "$d/rc") $(cat "$d/seconds") s"
}

doctor_case() {
  d=$out/$1
  mkdir -p "$d"
  $SD doctor --json >"$d/doctor.json" 2>"$d/stderr"
  echo $? >"$d/rc"
  $SD doctor >"$d/doctor.txt" 2>&1
  echo "case $1 rc=$(cat "$d/rc")"
}

# monitor_case NAME RUN-ARGS...: `shootdown monitor --trace bpf --json` every
# 100 ms around one `run` (the load, its result in run/); check.py sets its per-CPU tlb_flush
# counts against the TLB row of the same intervals and looks for the run's
# process among the initiators.
monitor_case() {
  name=$1
  shift
  d=$out/$name
  mkdir -p "$d"
  $SD monitor --trace bpf --json 100ms >"$d/monitor.jsonl" 2>"$d/stderr" &
  mon=$!
  # Its first line comes after the programs are loaded and attached (under
  # TCG loading against a large kernel's BTF takes seconds): start the load
  # only then.
  for _ in $(seq 1 600); do [ -s "$d/monitor.jsonl" ] && break; kill -0 $mon 2>/dev/null || break; sleep 0.1; done
  timeout 240 $SD run "$@" --out "$d/run" >/dev/null 2>"$d/run.stderr"
  echo $? >"$d/run_rc"
  sleep 0.5
  kill -TERM $mon
  wait $mon
  echo $? >"$d/rc"
  echo "case $name rc=$(cat "$d/rc") run_rc=$(cat "$d/run_rc")"
}

# probe_case NAME CPUS: `shootdown probe --cpu CPUS` over a shell that starts
# two `shootdown run`s (munmap x3 each, culprit and victim CPUs of their own)
# side by side; the probe library gives each process image a probe CPU from
# the list in its order (the guest's sh is static busybox: no preload, no
# probe), so the runs' shootdowns reach probes on the first two CPUs of the
# list. Results in NAME/probe.json (one per process).
probe_case() {
  name=$1
  cpus=$2
  d=$out/$name
  mkdir -p "$d"
  echo "--cpu $cpus" >"$d/args"
  inner="--chunk-size 16M --batch 64K --trigger after=200ms --baseline 200ms --settle 5ms --after 200ms --trace off -q --release munmap --repeat 3 --every 50ms"
  timeout 240 $SD probe --cpu "$cpus" --json -o "$d/probe.json" -- \
    sh -c "$SD run $inner --culprit-cpu 1 --victim-cpus 2 >/dev/null 2>&1 & $SD run $inner --culprit-cpu 5 --victim-cpus 6 >/dev/null 2>&1; wait" \
    >/dev/null 2>"$d/stderr"
  echo $? >"$d/rc"
  echo "case $name rc=$(cat "$d/rc")"
}
