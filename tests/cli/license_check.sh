#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The project is Apache-2.0; BPF programs are "Dual BSD/GPL" (BSD-2-Clause OR
# GPL-2.0-only). Every tracked file carries its SPDX line in its first five
# lines, or is of a kind that cannot carry a comment and is covered by
# packaging/copyright (DEP-5); each BPF object says "Dual BSD/GPL" in its
# license section, in the source and in the built object.
source "$TEST_LIB"
src=$SHOOTDOWN_SRC

if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git -C "$src" ls-files)
else
  mapfile -t files < <(cd "$src" && find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||')
fi
((${#files[@]} > 100)) && ok "${#files[@]} files listed" || not_ok "only ${#files[@]} files listed under $src"

# Files that cannot carry a comment: covered by packaging/copyright's stanzas.
exempt() {
  case "$1" in
    LICENSE|packaging/copyright|packaging/changelog) return 0 ;;
    tests/fixtures/*|fuzz/corpus/*) return 0 ;;
    *.json|*.png) return 0 ;;
  esac
  return 1
}

missing=() wrong=()
for f in "${files[@]}"; do
  exempt "$f" && continue
  [[ -f "$src/$f" ]] || continue
  line=$(head -5 "$src/$f" | grep -m1 -o 'SPDX-License-Identifier: .*' || true)
  if [[ -z "$line" ]]; then missing+=("$f"); continue; fi
  id=${line#SPDX-License-Identifier: }
  id=${id% -->}
  case "$f" in
    src/bpf/*.bpf.c) want='(BSD-2-Clause OR GPL-2.0-only)' ;;
    *) want='Apache-2.0' ;;
  esac
  [[ "$id" == "$want" ]] || wrong+=("$f: '$id', expected '$want'")
done
((${#missing[@]} == 0)) && ok "every file that can carry a comment has an SPDX line" \
  || not_ok "${#missing[@]} file(s) without an SPDX-License-Identifier line: ${missing[*]:0:10}"
((${#wrong[@]} == 0)) && ok "every SPDX line names the project's license (BPF: BSD-2-Clause OR GPL-2.0-only)" \
  || not_ok "wrong SPDX identifiers: ${wrong[*]:0:5}"

grep -q 'Apache License' "$src/LICENSE" && grep -q 'Version 2.0, January 2004' "$src/LICENSE" \
  && ok "LICENSE is the Apache License 2.0" || not_ok "LICENSE is not the Apache License 2.0 text"

cr=$src/packaging/copyright
head -1 "$cr" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
  && ok "packaging/copyright is DEP-5" || not_ok "packaging/copyright does not start with the DEP-5 Format line"
awk '/^Files: \*$/{f=1;next} f&&/^License:/{print;exit}' "$cr" | grep -qx 'License: Apache-2.0' \
  && ok "DEP-5: Files: * is Apache-2.0" || not_ok "DEP-5: the Files: * stanza is not License: Apache-2.0"
awk '/^Files: src\/bpf\/\*\.bpf\.c$/{f=1;next} f&&/^License:/{print;exit}' "$cr" | grep -qx 'License: BSD-2-Clause or GPL-2.0-only' \
  && ok "DEP-5: the BPF programs are BSD-2-Clause or GPL-2.0-only" || not_ok "DEP-5: no src/bpf/*.bpf.c stanza with License: BSD-2-Clause or GPL-2.0-only"
for l in Apache-2.0 BSD-2-Clause GPL-2.0-only; do
  grep -qx "License: $l" "$cr" && ok "DEP-5: stand-alone License: $l paragraph" || not_ok "DEP-5: no stand-alone License: $l paragraph"
done

for b in "$src"/src/bpf/*.bpf.c; do
  grep -q 'SEC("license") = "Dual BSD/GPL";' "$b" && ok "$(basename "$b"): license section \"Dual BSD/GPL\"" \
    || not_ok "$(basename "$b"): no SEC(\"license\") = \"Dual BSD/GPL\""
  obj=$SHOOTDOWN_BUILD/src/bpf/$(basename "${b%.c}").o
  if [[ -f "$obj" ]] && command -v readelf >/dev/null; then
    sec=$(readelf -p license "$obj" 2>/dev/null | sed -n 's/^ *\[ *[0-9a-f]*\] *//p')
    [[ "$sec" == "Dual BSD/GPL" ]] && ok "$(basename "$obj"): built object's license section is \"Dual BSD/GPL\"" \
      || not_ok "$(basename "$obj"): built object's license section is '$sec'"
  else
    skip_check "$(basename "$b"): built object not found at $obj (or no readelf)"
  fi
done
finish
