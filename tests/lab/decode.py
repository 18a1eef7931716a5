#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Extracts the guest's result from the second serial port's capture:
LAB-RESULT-BEGIN <sha256> / base64 lines / LAB-RESULT-END. Exit 1 when the
block is missing, truncated or its checksum does not match."""
import base64
import hashlib
import sys

src, dst = sys.argv[1], sys.argv[2]
try:
    text = open(src, "rb").read().decode("ascii", "replace")
except OSError as e:
    sys.exit(f"decode: {e}")
lines = [l.strip() for l in text.replace("\r", "\n").split("\n")]
try:
    b = next(i for i, l in enumerate(lines) if l.startswith("LAB-RESULT-BEGIN "))
    e = next(i for i in range(b + 1, len(lines)) if lines[i] == "LAB-RESULT-END")
except StopIteration:
    sys.exit("decode: no complete LAB-RESULT block")
want = lines[b].split()[1]
data = base64.b64decode("".join(lines[b + 1:e]))
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"decode: sha256 mismatch ({got} != {want})")
open(dst, "wb").write(data)
