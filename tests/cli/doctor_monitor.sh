#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# doctor and monitor from the command line: output shape, JSON, bad input.
source "$TEST_LIB"
command -v jq >/dev/null || skip "needs jq"

run_cmd "$SHOOTDOWN" doctor
expect_rc 0 "doctor exits 0 without --strict"
expect_out "^(PASS|WARN|FAIL) +cpus" "doctor checks the CPUs"
expect_out "^(PASS|WARN|FAIL) +clocksource" "doctor checks the clocksource"
expect_out "[0-9]+ pass, [0-9]+ warn, [0-9]+ fail" "doctor prints a summary line"
expect_out "isolcpus=" "doctor suggests a kernel command line"

run_cmd "$SHOOTDOWN" doctor --json
expect_rc 0 "doctor --json exits 0"
if jq -e '.findings | length > 10 and all(.status == "pass" or .status == "warn" or .status == "fail")' <<<"$OUT" >/dev/null; then
  ok "doctor --json: findings with statuses"; else not_ok "doctor --json findings"; fi

run_cmd "$SHOOTDOWN" doctor --cpus 0,0
expect_rc 2 "doctor --cpus with a duplicate"
expect_err "--cpus" "doctor names --cpus"
expect_err_lines 1 "doctor bad --cpus: one line"

# A CPU this machine does not have: a usage error like any other, before
# anything is measured or advised (no isolcpus= line for it).
present=$(cat /sys/devices/system/cpu/present)
absent=$(( ${present##*[-,]} + 1 ))
run_cmd "$SHOOTDOWN" doctor --cpus "0,$absent"
expect_rc 2 "doctor --cpus 0,$absent (a CPU this machine does not have)"
expect_err "^shootdown doctor: --cpus 0,$absent: CPU $absent does not exist on this machine \(online CPUs: [0-9]" "doctor names the option, the CPU and the online ones"
expect_err_lines 1 "doctor --cpus with an absent CPU: one line"
[[ -z "$OUT" ]] && ok "doctor --cpus with an absent CPU prints no report" || not_ok "doctor printed a report: $(head -3 <<<"$OUT")"

run_cmd "$SHOOTDOWN" monitor 100ms 2
expect_rc 0 "monitor 100ms 2 ends by itself"
expect_out "CPU +TLB/s +CAL/s" "monitor prints a header"
lines=$(grep -Ec '^[0-9:]+ +[0-9]+ ' <<<"$OUT" || true)
(( lines >= 2 )) && ok "monitor prints one line per CPU per interval ($lines)" || not_ok "monitor printed $lines CPU lines"

run_cmd "$SHOOTDOWN" monitor --json 100ms 2
expect_rc 0 "monitor --json"
n=$(jq -s 'length' <<<"$OUT" 2>/dev/null || echo 0)
[[ "$n" == 2 ]] && ok "monitor --json: one object per interval" || not_ok "monitor --json gave $n objects"

for args in "0s 1" "abc" "--listen 127.0.0.1:99999 1 1" "--cpus 1-x 1 1" "--pid 999999999 100ms 1"; do
  # shellcheck disable=SC2086
  run_cmd "$SHOOTDOWN" monitor $args
  expect_rc 2 "monitor $args"
  expect_err_lines 1 "monitor $args: one line"
done

finish
