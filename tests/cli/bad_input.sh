#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every invalid option: exit 2, one stderr line naming the option and value,
# and no output files.
source "$TEST_LIB"

online=$(cat /sys/devices/system/cpu/online)
last=$(( $(nproc --all) - 1 ))
offline=$(( last + 100 ))

bad() {  # bad "description" "option regex" args...
  local what=$1 pattern=$2; shift 2
  local out="$TMP/out-$_count"
  # Options are given once each (a repeat is itself bad input): no default
  # --trigger when the case is about --trigger.
  local trig=(--trigger after=1ms)
  [[ " $* " == *" --trigger "* ]] && trig=()
  run_cmd "$SHOOTDOWN" run "${trig[@]}" --out "$out" "$@"
  expect_rc 2 "$what"
  expect_err "$pattern" "$what: names the option"
  expect_err_lines 1 "$what: one line"
  if [[ -e "$out/result.json" || -e "$out/timeline.csv" ]]; then not_ok "$what: left output files"; else ok "$what: no output files"; fi
}

bad "unknown CPU"              "--culprit-cpu '?abc'?"        --culprit-cpu abc
bad "offline CPU"              "--culprit-cpu.*not online"    --culprit-cpu $offline
bad "offline victim"           "--victim-cpus.*not online"    --victim-cpus $offline
bad "culprit == victim"        "--victim-cpus.*culprit"       --culprit-cpu 0 --victim-cpus 0
bad "duplicate victims"        "--victim-cpus.*twice"         --victim-cpus 1,1
bad "malformed victim list"    "--victim-cpus"                --victim-cpus 1-x
bad "chunk larger than memory" "--chunk-size.*MemAvailable"   --chunk-size 64TiB
bad "malformed size 12abc"     "--chunk-size '12abc'"         --chunk-size 12abc
bad "negative size"            "--chunk-size '-1GiB'.*negative" --chunk-size=-1GiB
bad "batch not page multiple"  "--batch.*multiple"            --batch 1000
bad "batch larger than chunk"  "--batch.*larger than the chunk" --chunk-size 1MiB --batch 2MiB
bad "malformed batch"          "--batch '64x'"                --batch 64x
bad "unknown release"          "--release 'frob'.*accepted"   --release frob
bad "unknown trigger"          "--trigger 'sometimes'"        --trigger sometimes
bad "bad trigger duration"     "--trigger 'after=soon'"       --trigger after=soon
bad "unknown pages"            "--pages '1g'.*accepted"       --pages 1g
bad "unknown trace mode"       "--trace 'maybe'"              --trace maybe
bad "bad duration"             "--after '5'"                  --after 5
bad "repeat out of range"      "--repeat 0"                   --repeat 0
bad "report-every too short"   "--report-every '500us': out of range.*1ms to 1h.*32MiB" --report-every 500us
bad "report-every neither"     "--report-every 'soon': neither a duration nor a size.*accepted" --report-every soon
bad "report-every below batch" "--report-every 1KiB: smaller than the batch" --report-every 1KiB
if [[ $(awk '/HugePages_Free/ {print $2}' /proc/meminfo) == 0 ]]; then
  bad "hugetlb without reserved pages" "--pages hugetlb.*HugePages_Free" --pages hugetlb --chunk-size 64MiB
else
  ok "# skip hugetlb without reserved pages: this machine has huge pages reserved"
fi

# Unwritable --out: a path under a regular file.
touch "$TMP/file"
run_cmd "$SHOOTDOWN" run --trigger after=1ms --chunk-size 64MiB --out "$TMP/file/sub"
expect_rc 2 "unwritable --out"
expect_err "--out" "unwritable --out: names the option"
expect_err_lines 1 "unwritable --out: one line"

finish
