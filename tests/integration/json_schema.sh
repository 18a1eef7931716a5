#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docs/result.schema.json against real output: a real run's result.json (with
# a release and kernel trace when permitted) validates; copies broken in
# documented ways (wrong schema_version, a histogram that is a number, an
# unknown phase, a missing required field) do not. Validator: python3-jsonschema.
source "$TEST_LIB"
(( $(nproc) >= 2 )) || skip "needs 2 online CPUs"
command -v jq >/dev/null || skip "needs jq"
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import jsonschema' 2>/dev/null; then PY=$p; break; fi
done
if [[ -z $PY ]]; then
  "$SHOOTDOWN_SRC"/scripts/install-deps.sh --with-integration >&2 || skip "cannot install python3-jsonschema"
  /usr/bin/python3 -c 'import jsonschema' 2>/dev/null && PY=/usr/bin/python3 || skip "python3-jsonschema not importable after install-deps"
fi
SCHEMA="$SHOOTDOWN_SRC/docs/result.schema.json"

validate() {  # validate FILE -> prints errors, rc 0 when valid
  "$PY" - "$SCHEMA" "$1" <<'PY' 2>/dev/null
import json, sys, jsonschema
schema = json.load(open(sys.argv[1])); jsonschema.Draft7Validator.check_schema(schema)
errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(json.load(open(sys.argv[2]))), key=lambda e: list(e.path))
for e in errors[:5]: print("#   " + "/".join(map(str, e.path)) + ": " + e.message[:160])
sys.exit(1 if errors else 0)
PY
}

run_cmd "$SHOOTDOWN" run --release munmap --repeat 2 --every 200ms --chunk-size 128MiB --trigger after=300ms --after 300ms --quiet --out "$TMP/run"
expect_rc 0 "run --out"
if validate "$TMP/run/result.json" >"$TMP/v.out"; then
  ok "real result.json ($(jq '.intervals|length' "$TMP/run/result.json") intervals, $(jq '.releases|length' "$TMP/run/result.json") releases, trace $(jq -r .trace.status "$TMP/run/result.json")) validates against docs/result.schema.json"
else
  not_ok "real result.json does not validate"; cat "$TMP/v.out"
fi

# A probe's result (its process, how its probe ended) validates too.
if [[ -f "$SHOOTDOWN_BUILD/src/probe/libshootdown_probe.so" ]]; then
  run_cmd "$SHOOTDOWN" probe --duration 300ms --out "$TMP/probe" -- sh -c 'sleep 1'
  expect_rc 0 "probe --out"
  if validate "$TMP/probe/result.json" >"$TMP/v.out"; then
    ok "probe result.json (probe: $(jq -c '.probe | {pid, comm, fate}' "$TMP/probe/result.json")) validates"
  else
    not_ok "probe result.json does not validate"; cat "$TMP/v.out"
  fi
fi

broken() {  # broken WHAT JQ_FILTER
  jq "$2" "$TMP/run/result.json" >"$TMP/broken.json"
  if validate "$TMP/broken.json" >"$TMP/v.out"; then not_ok "schema accepts $1"; else ok "schema rejects $1 ($(head -1 "$TMP/v.out" | sed 's/^#   //'))"; fi
}
broken "schema_version 2" '.schema_version = 2'
broken "a histogram that is a number" '.intervals[0].histogram = 5'
broken "an unknown phase" '.intervals[0].phase = "during"'
broken "a result without intervals" 'del(.intervals)'
broken "a negative sample count" '.victims[0].samples = -1'
if jq -e '.attribution.victims[0].tlb_accounting' "$TMP/run/result.json" >/dev/null; then
  broken "a TLB accounting without its kernel rule" 'del(.attribution.victims[0].tlb_accounting.rule)'
fi
finish
