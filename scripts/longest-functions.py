#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the longest functions of a C/C++ tree, longest first.

What it counts: the lines of a function definition from the first line of
its signature (template<> line and return type included; the comment above
it not) to its closing brace, blank lines and comments inside included.
Lambdas, local classes and nested blocks count inside the function that
holds them; member functions defined in a class body count on their own.
Functions are found by braces outside comments, strings and preprocessor
lines: a brace at namespace or class scope whose header has a parameter
list and no '=' outside parentheses opens a function.

Usage: scripts/longest-functions.py [--top N] [--max LINES] [DIR|FILE ...]
       (default: src/, top 15). With --max, exits 1 when a function is
       longer than LINES (and lists those).
"""
import argparse
import os
import re
import sys

EXTS = (".c", ".cc", ".cpp", ".h", ".hpp")


def clean(text):
    """Comments, string/char literals and preprocessor lines as spaces; newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # preprocessor line, with continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def top_level_eq(header):
    depth = 0
    for k, ch in enumerate(header):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0:
            prev = header[k - 1] if k else ""
            nxt = header[k + 1] if k + 1 < len(header) else ""
            if prev not in "=!<>" and nxt != "=" and not re.search(r"\boperator\s*$", header[:k]):
                return True
    return False


def functions(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    c = clean(text)
    line_of = []  # offset -> line number, lazily via counting
    starts = [0]
    for m in re.finditer("\n", c):
        starts.append(m.end())

    def line(off):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    found = []
    stack = []  # (kind, start_offset, name)
    boundary = 0  # where the current header begins (scope level)
    for i, ch in enumerate(c):
        in_scope = not stack or stack[-1][0] == "scope"
        if ch in ";" and in_scope:
            boundary = i + 1
        elif ch == "{":
            if not in_scope:
                stack.append(("block", i, None))
                continue
            header = c[boundary:i]
            h = re.sub(r"^\s*((public|private|protected)\s*:\s*)+", "", header)
            lead = len(header) - len(h)
            hs = h.strip()
            plain = re.sub(r"template\s*<[^{;]*?>\s*", "", hs)
            if re.match(r"(inline\s+)?namespace\b", plain) or re.match(r"extern\s*$", plain):
                stack.append(("scope", i, None))
            elif re.match(r"((typedef|export)\s+)?(class|struct|union)\b", plain) and not re.search(r"\)\s*(const\s*)?$", plain):
                stack.append(("scope", i, None))
                boundary = i + 1
            elif "(" in plain and not top_level_eq(plain) and not re.match(r"enum\b", plain):
                # A brace in a constructor's initializer list (`b_{2}`): not the body.
                if re.search(r"\)\s*(noexcept\s*)?:[^:]", plain) and re.search(r"[\w>]\s*$", c[:i]) and not re.search(r"\)\s*(const|noexcept|override|final|\s)*$", c[boundary:i]):
                    stack.append(("init", i, None))
                    continue
                name = re.findall(r"([~\w:]+(?:<[^()]*>)?|operator\s*\S+)\s*\(", plain)
                start = boundary + lead + (len(h) - len(h.lstrip()))
                stack.append(("fn", start, name[0] if name else "?"))
            else:
                stack.append(("block", i, None))
        elif ch == "}":
            if not stack:
                continue
            kind, start, name = stack.pop()
            if kind == "fn":
                a, b = line(start), line(i)
                found.append((b - a + 1, path, a, name))
            if kind != "init" and (not stack or stack[-1][0] == "scope"):
                boundary = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", default=["src"])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--max", type=int, default=0)
    a = ap.parse_args()
    files = []
    for p in a.paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, f) for f in sorted(names) if f.endswith(EXTS)]
        elif os.path.isfile(p):
            files.append(p)
        else:
            print(f"longest-functions: {p}: no such file or directory", file=sys.stderr)
            return 2
    fns = sorted((f for path in sorted(files) for f in functions(path)), key=lambda x: (-x[0], x[1], x[2]))
    print(f"{len(fns)} functions in {len(files)} files; lines from signature to closing brace "
          "(comments and lambdas inside included)")
    for n, path, ln, name in fns[: a.top]:
        print(f"{n:6d}  {path}:{ln}  {name}")
    if a.max:
        over = [f for f in fns if f[0] > a.max]
        if over:
            print(f"{len(over)} function(s) longer than {a.max} lines")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
