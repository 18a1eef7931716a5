#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bad input for every option of every subcommand. The table below lists each
# option (and positional) with a valid value and its bad values; the test
# reads every subcommand's --help and fails on an option missing from the
# table, so a new option without cases fails here.
# Every case: exit 2, exactly one line on stderr naming the option (and the
# value, when there is one), saying what is accepted, and no files written.
# Generated for every option: an empty value ('') and a repeat (given twice);
# for a flag: a repeat and a value ('--json=maybe').
source "$TEST_LIB"

# Fixtures, outside the directory each case runs in.
FIX=$TMP/fix
mkdir -p "$FIX/emptydir" "$FIX/rjdir/result.json" "$FIX/badjson"
echo regular >"$FIX/file"
echo '{"tool": "shootdown", "complete": tr' >"$FIX/badjson/result.json"
RO=
if [[ $(id -u) == 0 ]] && mkdir -p "$FIX/ro" && mount -t tmpfs -o ro,size=1M tmpfs "$FIX/ro" 2>/dev/null; then
  RO=$FIX/ro
  trap 'umount "$FIX/ro" 2>/dev/null; rm -rf "$TMP"' EXIT
fi

# subcommand|option|valid value (FLAG for a flag, MULTI: repeats allowed, - none)|bad values ';;'-separated
# A bad value starting with '!' is a whole argument list instead of "option value".
# Placeholders: @FILE a regular file, @EMPTY a directory without result.json,
# @RJDIR a directory whose result.json is a directory, @BADJSON truncated JSON,
# @RO a read-only filesystem (root only; else those cases are skipped).
TABLE=$(cat <<'T'
run|--culprit-cpu|0|abc;;99999999999999999999;;-1;;0-1
run|--victim-cpus|1|1-x;;1,1;;4294967296;;1,,2
run|--chunk-size|64MiB|12abc;;MiB64;;99999999999999999999GiB;;-1GiB;;64 MiB MiB
run|--batch|64KiB|64x;;KiB;;1000;;99999999999999999999
run|--report-every|10ms|32MiBs;;-1MiB;;MiB;;500us;;2h;;-5ms;;10msms;;1KiB
run|--pages|4k|1g;;4kk
run|--release|free|frob;;free,munmap
run|--pace|2MiB/1ms|2MiB/1ms;;!--release paced --pace 2MiB;;!--release paced --pace 2MiB/1ms/1ms;;!--release paced --pace x/1ms;;!--release paced --pace 2MiB/x;;!--release paced --pace 3KiB/1ms;;!--release paced --pace 0/1ms;;!--release paced --pace 2MiB/-1ms;;!--release chunked --pace 2MiB/2s;;!--release chunked --chunk-size 64MiB --pace 128MiB/1ms;;!--release paced --chunk-size 1GiB --pace 4KiB/1s;;!--release chunked --pages thp --chunk-size 64MiB --pace 64KiB/1ms
run|--allocator-conf|M_TRIM_THRESHOLD=0|M_TRIM_THRESHOLD=0;;!--release glibc-malloc --allocator-conf M_FOO=1;;!--release glibc-malloc --allocator-conf M_TRIM_THRESHOLD=x;;!--release glibc-malloc --allocator-conf M_TRIM_THRESHOLD;;!--release jemalloc --allocator-conf dirty_decay_ms=0;;!--release tcmalloc --allocator-conf RELEASE_RATE=1;;!--release mimalloc --allocator-conf TCMALLOC_X=1;;!--release mimalloc --allocator-conf MIMALLOC_X=1,,
run|--allocator-purge|on|on;;!--release jemalloc --allocator-purge maybe;;!--release tcmalloc --allocator-purge 1
run|--trigger|after=1ms|sometimes;;after=;;after=1msms;;after=-1s
run|--repeat|1|0;;1s;;99999999999999999999;;-1
run|--every|500ms|500;;ms500;;-1s;;99999999999999999999s
run|--baseline|1s|1;;s1;;-1s
run|--settle|1ms|1;;1ms1;;-1ms
run|--after|1s|5;;1ss;;-1s
run|--trace|auto|maybe;;AUTO
run|--stall-threshold|10us|10;;us10;;-1us
run|--stall-factor|8|abc;;99999;;-1;;8x
run|--no-mlock|FLAG|
run|--rt|FLAG|
run|--memory-limit|512MiB|100MiB;;0;;512;;-1GiB;;512MiBs;;99999999999999999999GiB;;!--victim-cpus 1 --memory-limit 255MiB
run|--json|FLAG|
run|--out|out|@FILE/sub;;@RO/out;;@FILE
run|--open|FLAG|!--open
run|--influx|http://127.0.0.1:1/write?db=x|ftp://x;;http://;;udp://127.0.0.1:99999;;http://127.0.0.1:1/write
run|--quiet|FLAG|
run|--verbose|FLAG|
compare|--arms|reuse,munmap|reuse;;frob,munmap;;,;;reuse,,munmap
compare|--trials|20|0;;1.5;;99999999999999999999;;-1
compare|--sequential|on|maybe;;ON;;1
compare|--look-every|5|0;;x;;1.5;;-1;;99999999999999999999
compare|--spending|pocock|Pocock;;linear
compare|--seed|1|abc;;-1;;99999999999999999999
compare|--bootstrap|2000|0;;x;;99999999999999999999
compare|--fail-if|MULTI|x;;munmap.stall_us >;;munmap.stall_us > 1us;;frob.stall_us > 1
compare|--max-regression|5|abc;;-5;;5%%;;99999999
compare|--out|out|@FILE/sub;;@RO/out;;@FILE
compare|--json|FLAG|
compare|--workload|memory|disk
compare|--segment-size|16MiB|0;;16MiBB;;99999999999999999999GiB
compare|--journal-dir|/tmp|!--workload journal --arms journal-recycle,journal-unmap --journal-dir @FILE;;!--workload journal --arms journal-recycle,journal-unmap --journal-dir @RO;;!--workload journal --arms journal-recycle,journal-unmap --journal-dir /nonexistent/x
compare|--culprit-cpu|0|abc;;99999999999999999999
compare|--victim-cpus|1|1-x;;1,1
compare|--chunk-size|64MiB|12abc;;-1GiB
compare|--batch|64KiB|64x;;1000
compare|--report-every|10ms|32MiBs;;500us
compare|--pages|4k|1g
compare|--pace|2MiB/1ms|2MiB/1ms;;!--arms reuse,paced --pace 2MiB;;!--arms reuse,chunked --pace 3KiB/1ms;;!--arms paced,chunked --pace 2MiB/2s
compare|--allocator-conf|M_TRIM_THRESHOLD=0|!--arms reuse,munmap --allocator-conf M_TRIM_THRESHOLD=0;;!--arms reuse,glibc-malloc --allocator-conf M_FOO=1;;!--arms glibc-malloc,jemalloc --allocator-conf M_TRIM_THRESHOLD=0
compare|--allocator-purge|on|!--arms reuse,munmap --allocator-purge off;;!--arms reuse,jemalloc --allocator-purge maybe
compare|--preset|mitigations|foo;;MITIGATIONS;;!--preset mitigations --arms reuse,munmap;;!--preset mitigations --workload journal
compare|--trigger|after=150ms|enter;;after=x
compare|--repeat|1|0;;x
compare|--every|500ms|500
compare|--baseline|150ms|150
compare|--settle|1ms|1
compare|--after|100ms|100
compare|--trace|auto|maybe
compare|--stall-threshold|10us|10
compare|--stall-factor|8|abc;;-1
compare|--no-mlock|FLAG|
compare|--rt|FLAG|
compare|--memory-limit|512MiB|100MiB;;512MiBs
compare|--quiet|FLAG|
monitor|interval|-|0;;1x;;-1s;;99999999999999999999s;;s
monitor|count|-|!1s 0;;!1s x;;!1s -1;;!1s 99999999999999999999
monitor|--cpus|0|1-x;;99999
monitor|--json|FLAG|
monitor|--pid|1|abc;;0;;-1;;99999999999
monitor|--listen|127.0.0.1:0|1.2.3.4:99999;;127.0.0.1:;;:x;;127.0.0.1:-1
monitor|--influx|http://127.0.0.1:1/write?db=x|ftp://x;;http://
monitor|--trace|auto|maybe
monitor|--top|5|1000;;-1;;x
monitor|--series|20|1001;;-1;;x
monitor|--calibrate-from|-|@FILE;;@EMPTY;;@RJDIR;;@BADJSON;;/nonexistent;;!--trace ring --calibrate-from @EMPTY
trace|--culprit-cpu|0|-1;;x;;99999
trace|--victim-cpus|1|1-x;;99999
trace|--duration|1s|5;;0s;;x;;-1s
trace|--all|FLAG|
trace|--quiet|FLAG|
trace|--format|text|json;;TEXT
trace|--no-callchains|FLAG|
trace|--output|out.txt|@FILE/sub;;@EMPTY;;@RO/out.txt;;/nonexistent/out.txt
probe|--cpu|1|99999;;-1;;x
probe|--duration|1s|5;;x;;-1s
probe|--out|out|@FILE/sub;;@RO/out;;@FILE
probe|--json|FLAG|
probe|--arena|2MiB|1x;;0;;99999999999GiB
probe|--batch-pages|512|0;;x;;-1
probe|--ring|16MiB|1x;;0;;99999999999GiB
probe|--stall-threshold|10us|10;;x
probe|--rt|FLAG|
probe|--no-callsites|FLAG|
probe|--only|xz|,;;a,,b
probe|--memory-limit|256MiB|1x;;0;;63MiB;;99999999999GiB
probe|--pid|1|abc;;1;;-1
probe|--output|out.txt|@FILE/sub;;@EMPTY;;@RO/out.txt
blame|--pid|1|abc;;0;;-1;;99999999999
blame|--duration|1s|5;;x
blame|--json|FLAG|
blame|--folded|FLAG|
blame|--top|10|0;;1001;;x
blame|--frames|16|0;;65
blame|--stack-bytes|128|x;;-8;;7;;99999999
blame|--output|out.txt|@FILE/sub;;@EMPTY;;@RO/out.txt
report|DIR|-|!@FILE;;!@EMPTY;;!@RJDIR;;!@BADJSON;;!/nonexistent
report|--influx|http://127.0.0.1:1/write?db=x|ftp://x;;http://
report|--json|FLAG|
report|--quiet|FLAG|
report|--verbose|FLAG|
doctor|--cpus|0,1|1-x;;99999;;0,0
doctor|--json|FLAG|
doctor|--strict|FLAG|
T
)

# What each subcommand needs besides the option under test (report: a DIR;
# probe/blame: a command), so the case fails on that option and nothing else.
suffix() {
  case "$1|$2" in
    report\|DIR) ;;
    report\|*) echo "@EMPTY" ;;
    probe\|*) echo "-- true" ;;
    blame\|--pid) ;;
    blame\|*) echo "-- true" ;;
  esac
}

subst() {  # placeholders -> paths
  local s=$1
  s=${s//@FILE/$FIX/file}
  s=${s//@EMPTY/$FIX/emptydir}
  s=${s//@RJDIR/$FIX/rjdir}
  s=${s//@BADJSON/$FIX/badjson}
  s=${s//@RO/$RO}
  printf '%s' "$s"
}

# 1. Every option in every --help is in the table.
for sub in run compare monitor trace probe blame report doctor; do
  help=$("$SHOOTDOWN" "$sub" --help 2>&1)
  opts=$(grep -oE '^\s+(-[A-Za-z],)?--[a-z][a-z-]*' <<<"$help" | sed 's/.*--/--/' | grep -v -- '--help')
  pos=$(sed -n 's/^Usage: .*\[OPTIONS\]//p' <<<"$help" | tr -d '[]' | tr ' ' '\n' | grep -v '\.\.\.$' | grep . || true)
  for o in $opts $pos; do
    if grep -q "^$sub|$o|" <<<"$TABLE"; then ok "$sub $o: in the table"; else not_ok "$sub $o: option without bad-input cases"; fi
  done
done

# 2. The cases.
declare -A SHORT=([--pid]=-p [--quiet]=-q [--verbose]=-v [--output]=-o)
n=0
check_case() {  # sub option value-shown args...
  local sub=$1 opt=$2 shown=$3; shift 3
  n=$((n + 1))
  local cwd=$TMP/case-$n
  mkdir -p "$cwd"
  local what="$sub $opt ${shown:-(empty)}"
  set +e
  (cd "$cwd" && timeout 60 "$SHOOTDOWN" "$sub" "$@" </dev/null >"$TMP/out" 2>"$TMP/err")
  RC=$?
  set -e
  ERR=$(cat "$TMP/err")
  expect_rc 2 "$what"
  expect_err_lines 1 "$what: one line"
  local name=${opt#--} short=${SHORT[$opt]:-}
  # A positional is named by its value (report DIR: the path) or its name.
  local named=0
  grep -qiF -- "$name" <<<"$ERR" && named=1
  [[ -n $short ]] && grep -qF -- "$short " <<<"$ERR" && named=1
  [[ $opt != -* && -n $shown ]] && grep -qF -- "$shown" <<<"$ERR" && named=1
  if ((named)); then
    ok "$what: names the option"
  else
    not_ok "$what: does not name $opt: $ERR"
  fi
  if [[ -n $shown && $shown != REPEAT ]] && ! grep -qF -- "$shown" <<<"$ERR"; then
    not_ok "$what: does not show the value: $ERR"
  fi
  if grep -qiE 'accepted|use |expected|give|needs|e\.g\.|online|arms:|range' <<<"$ERR"; then ok "$what: says what is accepted"; else not_ok "$what: does not say what is accepted: $ERR"; fi
  if [[ -n $(ls -A "$cwd") ]] || [[ -n $RO && -n $(ls -A "$RO") ]] || [[ -n $(ls -A "$FIX/emptydir") ]]; then
    not_ok "$what: left files: $(ls -A "$cwd" "$FIX/emptydir")"
    rm -rf "${cwd:?}"/* "$FIX/emptydir"/*
  fi
}

# run's options (shared with compare) take the last occurrence: scripts append
# options to a base command line (src/cli/run_options.cpp, and
# tests/cli/bad_input.sh relies on it). Their repeat is not an error.
LAST_WINS=" $(grep -oE 'add_(option|flag)\(\s*"[^"]+"' "$SHOOTDOWN_SRC/src/cli/run_options.cpp" |
  grep -oE '"[^"]+"' | tr -d '"' | tr ',' ' ' | tr '\n' ' ') "
[[ $LAST_WINS == *" --trigger "* ]] || { not_ok "could not read run's options from src/cli/run_options.cpp"; finish; }
repeat_case() {  # sub opt args...
  # run's option_defaults (TakeLast) cover every option of run, and compare's shared run options.
  if [[ $1 == run || ($1 == compare && $LAST_WINS == *" $2 "*) ]]; then
    ok "# skip $1 $2 REPEAT: a later occurrence overrides (documented)"
    return
  fi
  check_case "$@"
}

set -e
while IFS='|' read -r sub opt valid bads; do
  [[ -z $sub ]] && continue
  read -r -a sfx <<<"$(subst "$(suffix "$sub" "$opt")")"
  positional=0
  [[ $opt != -* ]] && positional=1
  if [[ $valid == FLAG ]]; then
    repeat_case "$sub" "$opt" REPEAT "$opt" "$opt" "${sfx[@]}"
    check_case "$sub" "$opt" maybe "$opt=maybe" "${sfx[@]}"
  elif ((!positional)); then
    check_case "$sub" "$opt" "" "$opt" "" "${sfx[@]}"
    if [[ $valid != MULTI ]]; then
      v=$(subst "$valid")
      repeat_case "$sub" "$opt" REPEAT "$opt" "$v" "$opt" "$v" "${sfx[@]}"
    fi
  fi
  IFS=$'\x01' read -r -a cases <<<"${bads//;;/$'\x01'}"
  for c in "${cases[@]}"; do
    [[ -z $c ]] && continue
    if [[ $c == *@RO* && -z $RO ]]; then
      ok "# skip $sub $opt $c: needs root for a read-only mount"
      continue
    fi
    if [[ $c == !* ]]; then
      read -r -a args <<<"$(subst "${c#!}")"
      shown=${args[-1]}
      [[ $positional == 1 && $sub == monitor && $opt == count ]] && shown=${args[-1]}
      check_case "$sub" "$opt" "$shown" "${args[@]}" "${sfx[@]}"
    elif ((positional)); then
      v=$(subst "$c")
      check_case "$sub" "$opt" "$v" "$v" "${sfx[@]}"
    else
      v=$(subst "$c")
      check_case "$sub" "$opt" "$v" "$opt" "$v" "${sfx[@]}"
    fi
  done
done <<<"$TABLE"
set +e
finish
