#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docs/ARCHITECTURE.md stays true to the tree: every path it names (src/...,
# tests/..., a layer-relative core/x, sys/x ...) exists, and every code name
# in backticks (a type, a function, ns::name) is defined or used in src/ or
# the CMake files.
# CLI flags, tracepoints and shell commands are not code names and are left
# out. A name that goes from the code must go from the page too.
source "$TEST_LIB"
command -v python3 >/dev/null || skip "python3 not found"
src=$SHOOTDOWN_SRC
doc=$src/docs/ARCHITECTURE.md
[[ -f $doc ]] || { not_ok "no docs/ARCHITECTURE.md"; finish; }
out=$(SRC=$src python3 - <<'PY'
import os, re, subprocess, sys
src = os.environ["SRC"]
doc = open(os.path.join(src, "docs/ARCHITECTURE.md")).read()
top = {"src", "tests", "docs", "cmake", "scripts", "packaging", "bench", "dashboards", "fuzz", ".ci"}
layers = {"core", "sys", "cmd", "sink", "experiment", "cli", "probe", "bpf", "tools"}
code = subprocess.run(["grep", "-rhoE", r"[A-Za-z_][A-Za-z0-9_]*", os.path.join(src, "src"),
                       os.path.join(src, "cmake"), os.path.join(src, "CMakeLists.txt")],
                      capture_output=True, text=True).stdout.split()
words = set(code)
paths = names = 0
bad = []
for tok in sorted(set(re.findall(r"`([^`\n]+)`", doc))):
    t = tok.strip()
    first = t.split("/")[0]
    if "/" in t and " " not in t.split()[0] and (first in top or first in layers):
        p = t.split()[0].rstrip("/")
        cands = [p] if first in top else [os.path.join("src", p)]
        cands += [c + ext for c in list(cands) for ext in (".cpp", ".hpp", ".h", ".c", ".sh", ".py", ".md", ".cmake")]
        paths += 1
        if not any(os.path.exists(os.path.join(src, c)) for c in cands):
            bad.append(f"path `{t}`")
        continue
    if t.startswith("-") or " " in t or "/" in t or t.count(":") == 1 or "." in t:
        continue  # a flag, a command, a tracepoint, a file name
    ids = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t.replace("()", ""))
    ids = [i for i in ids if i not in ("T", "app", "opts")]
    if not ids or not re.match(r"^[A-Za-z_:<>(), *]+$", t.replace("_", "a")):
        continue
    names += 1
    for i in ids:
        if i.endswith("_") or i == "add_":  # a prefix pattern (`add_*`)
            continue
        if i not in words:
            bad.append(f"name `{t}` ({i} not in src/)")
print(f"{paths} {names}")
for b in bad:
    print(b)
PY
)
read -r npaths nnames <<<"$(head -1 <<<"$out")"
missing=$(tail -n +2 <<<"$out")
echo "# ARCHITECTURE.md names $npaths paths and $nnames code names"
((npaths >= 10 && nnames >= 20)) && ok "$npaths paths and $nnames code names found in the page" ||
  not_ok "only $npaths paths and $nnames code names found: the parser no longer reads the page"
[[ -z $missing ]] && ok "every path and code name in docs/ARCHITECTURE.md exists in the tree" ||
  not_ok "docs/ARCHITECTURE.md names what the tree does not have: $(tr '\n' ';' <<<"$missing")"
finish
