#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shootdown report DIR: re-rendering from result.json reproduces the files of
# the run byte for byte (timeline.csv, victim.hlog, victim.hgrm) and leaves
# result.json untouched; the console table is printed again; --json prints
# the saved result, with the run's kernel-trace and stall attribution lines
# and report.html's chart-2 event ticks (from the saved attribution and
# events); bad DIR or corrupt result.json exit 2 with one line.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq (scripts/install-deps.sh installs it)"

run_cmd "$SHOOTDOWN" run --release munmap --chunk-size 128MiB --trigger after=300ms --after 300ms --quiet --out "$TMP/run"
expect_rc 0 "run --out"
table_run=$OUT
for f in result.json timeline.csv victim.hlog victim.hgrm; do expect_file "$TMP/run/$f" "run wrote $f"; done
if jq -e '[.intervals[] | .histogram | test("^HISTF")] | all and length > 0' "$TMP/run/result.json" >/dev/null; then
  ok "every interval in result.json carries a compressed V2 histogram"; else not_ok "intervals without histogram"; fi
n=$(jq '.intervals|length' "$TMP/run/result.json")
untagged=$(grep -c '^[0-9]' "$TMP/run/victim.hlog")
cpu=$(jq '.plan.victim_cpus[0]' "$TMP/run/result.json")
tagged=$(grep -c "^Tag=cpu$cpu," "$TMP/run/victim.hlog")
phased=$(grep -c "^Tag=cpu$cpu\.\(baseline\|release\|after\)," "$TMP/run/victim.hlog")
[[ $untagged == "$n" && $tagged == "$n" && $phased == "$n" ]] && ok "victim.hlog: $n untagged, $n Tag=cpu$cpu, $n Tag=cpu$cpu.PHASE lines for $n intervals" ||
  not_ok "victim.hlog lines: untagged $untagged, tagged $tagged, phased $phased, intervals $n"
rel=$(grep -c "^Tag=cpu$cpu\.release," "$TMP/run/victim.hlog")
want_rel=$(jq '[.intervals[]|select(.phase=="release")]|length' "$TMP/run/result.json")
[[ $rel == "$want_rel" && $rel -gt 0 ]] && ok "Tag=cpu$cpu.release lines ($rel) = release intervals in result.json" || not_ok "release lines $rel vs $want_rel"
header=$(head -1 "$TMP/run/timeline.csv")
[[ $header == "victim_cpu,interval,start_ns,end_ns,elapsed_s,phase,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,start_unix_ns,end_unix_ns" ]] &&
  ok "timeline.csv header" || not_ok "timeline.csv header: $header"

mkdir -p "$TMP/copy"
cp "$TMP/run/result.json" "$TMP/copy/"
cp "$TMP/run/result.json" "$TMP/result.orig.json"
run_cmd "$SHOOTDOWN" report "$TMP/copy"
expect_rc 0 "report DIR"
for f in timeline.csv victim.hlog victim.hgrm; do
  if cmp -s "$TMP/run/$f" "$TMP/copy/$f"; then ok "report re-renders $f byte for byte"; else not_ok "report: $f differs from the run's"; fi
done
cmp -s "$TMP/result.orig.json" "$TMP/copy/result.json" && ok "result.json left untouched" || not_ok "result.json changed"
# The tables, release and /proc/interrupts lines: identical to the run's, up
# to the kernel-trace section.
upto_trace() { sed -n '1,/^kernel trace:/p' | grep -v '^kernel trace:'; }
if diff <(upto_trace <<<"$table_run") <(upto_trace <<<"$OUT") >"$TMP/table.diff"; then
  ok "report prints the run's tables ($(upto_trace <<<"$OUT" | wc -l) lines)"; else not_ok "report table differs from the run's"; sed 's/^/#   /' "$TMP/table.diff" | head; fi
# The kernel-trace and stall attribution section: from the saved attribution
# and events (trace.events_table), the same lines as the run printed.
trace_section() { sed -n '/^kernel trace:/,$p' | grep -v '^\(warning\|results\):'; }
n_attr=$(grep -c '^stall attribution, victim cpu' <<<"$table_run" || true)
if diff <(trace_section <<<"$table_run") <(trace_section <<<"$OUT") >"$TMP/attr.diff"; then
  ok "report prints the run's kernel-trace section ($(trace_section <<<"$OUT" | wc -l) lines, $n_attr stall attribution section(s))"
else
  not_ok "report's kernel-trace/attribution section differs from the run's"; sed 's/^/#   /' "$TMP/attr.diff" | head -20
fi
if (( n_attr > 0 )); then
  (( $(grep -c '^stall attribution, victim cpu' <<<"$OUT") == n_attr )) && ok "report has the $n_attr stall attribution section(s)" ||
    not_ok "report lost stall attribution sections"
fi
# report.html chart 2 (raw windows): the kernel event ticks come back.
ticks() { grep -o '<path class="ticks" data-kind="[a-z-]*" data-count="[0-9]*"' "$1" | grep -v 'data-kind="\(preempted\|unexplained\)"'; }
run_tlb=$(ticks "$TMP/run/report.html" | grep -c 'data-kind="tlb-shootdown" data-count="[1-9]' || true)
if (( run_tlb > 0 )); then
  rep_tlb=$(ticks "$TMP/copy/report.html" | grep -c 'data-kind="tlb-shootdown" data-count="[1-9]' || true)
  (( rep_tlb == run_tlb )) && ok "report.html draws TLB shootdown ticks in $rep_tlb chart(s), as the run's" ||
    not_ok "report.html: TLB shootdown ticks in $rep_tlb chart(s), the run's in $run_tlb"
  diff <(ticks "$TMP/run/report.html") <(ticks "$TMP/copy/report.html") >/dev/null && ok "report.html event tick counts equal the run's" ||
    not_ok "report.html event tick counts differ from the run's"
  grep -q 'data-kernel-evidence="yes"' "$TMP/copy/report.html" && ok "report.html says kernel evidence: yes" || not_ok "report.html lost the kernel evidence"
else
  ok "run drew no TLB shootdown ticks (trace $(jq -r .trace.status "$TMP/result.orig.json")): nothing to compare"
fi
run_cmd "$SHOOTDOWN" report "$TMP/copy" --json
expect_rc 0 "report DIR --json"
if jq -e --slurpfile a "$TMP/result.orig.json" '. == $a[0]' <<<"$OUT" >/dev/null; then ok "--json prints the saved result"; else not_ok "--json output differs"; fi

# Bad input: exit 2, one line, nothing written.
run_cmd "$SHOOTDOWN" report "$TMP/nonexistent"
expect_rc 2 "report of a missing DIR"
expect_err "^shootdown report: DIR '.*nonexistent': not a directory" "names the DIR"
expect_err_lines 1 "one stderr line"
mkdir -p "$TMP/empty"
run_cmd "$SHOOTDOWN" report "$TMP/empty"
expect_rc 2 "report of a DIR without result.json"
expect_err "result.json: missing" "says result.json is missing"
expect_err_lines 1 "one stderr line"
mkdir -p "$TMP/trunc"; head -c 5000 "$TMP/result.orig.json" >"$TMP/trunc/result.json"
run_cmd "$SHOOTDOWN" report "$TMP/trunc"
expect_rc 2 "report of a truncated result.json"
expect_err "result.json: not valid JSON: parse error" "says it is not valid JSON"
expect_err_lines 1 "one stderr line"
expect_no_file "$TMP/trunc/victim.hlog" "nothing written for a corrupt result"
mkdir -p "$TMP/v99"; jq '.schema_version = 99' "$TMP/result.orig.json" >"$TMP/v99/result.json"
run_cmd "$SHOOTDOWN" report "$TMP/v99"
expect_rc 2 "report of schema_version 99"
expect_err "schema_version: 99 is newer than this shootdown reads \(1\)" "names the unsupported version"
expect_err_lines 1 "one stderr line"
mkdir -p "$TMP/badhist"; jq '.intervals[3].histogram = "HISTFAAA!!"' "$TMP/result.orig.json" >"$TMP/badhist/result.json"
run_cmd "$SHOOTDOWN" report "$TMP/badhist"
expect_rc 2 "report of a corrupt interval histogram"
expect_err "intervals\[3\]\.histogram: " "names the field"
expect_err_lines 1 "one stderr line"
mkdir -p "$TMP/nofield"; jq 'del(.plan.batch)' "$TMP/result.orig.json" >"$TMP/nofield/result.json"
run_cmd "$SHOOTDOWN" report "$TMP/nofield"
expect_rc 2 "report of a result without plan.batch"
expect_err "plan\.batch: missing" "names the missing field"
mkdir -p "$TMP/other"; echo '{"hello": 1}' >"$TMP/other/result.json"
run_cmd "$SHOOTDOWN" report "$TMP/other"
expect_rc 2 "report of a JSON file that is not a result"
expect_err "not a shootdown result" "says so"
run_cmd "$SHOOTDOWN" report "$TMP/copy" --influx "ftp://x"
expect_rc 2 "report --influx with a bad URL"
expect_err "^shootdown report: --influx 'ftp://x': " "one line naming the option"
finish
