#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The preloaded probe library runs only in the environment the tool sets up:
# SHOOTDOWN_PROBE_FD must be a memfd of this user, mode 0600, size-sealed,
# with the right header. Anything else (a plain file, a world-readable memfd,
# an unsealed one, garbage) and the library does nothing: the shared header's
# claim field stays 0. A correct setup is the positive control.
source "$TEST_LIB"
command -v python3 >/dev/null || skip "python3 not found"
LIB=$(dirname "$SHOOTDOWN")/probe/libshootdown_probe.so
[[ -f $LIB ]] || skip "probe library not built: $LIB"
LIB=$LIB TMPD=$TMP python3 - <<'PY'
import fcntl, os, struct, subprocess, sys
lib, tmp = os.environ["LIB"], os.environ["TMPD"]
# src/probe/probe_shm.h, version 3 (probe.c asserts these offsets): the
# header, then cpus[ncpus], holder[ncpus], slots[nslots], rings at the
# offsets sd_probe_layout() computes.
MAGIC, VERSION, CAP, NCPUS, SPARE = 0x53445052, 3, 1024, 1, 16
SLOTS = NCPUS + SPARE
HDR, SLOT = 88, 216  # sizeof(struct sd_probe_shm), sizeof(struct sd_probe_slot)
CLAIMED = 44  # offsetof(struct sd_probe_shm, claimed): processes that claimed a slot
ARR = (NCPUS * 4 + 7) & ~7
CPUS_OFF, HOLDER_OFF = HDR, HDR + ARR
SLOTS_OFF = HOLDER_OFF + ARR
RINGS_OFF = (SLOTS_OFF + SLOTS * SLOT + 4095) & ~4095
size = RINGS_OFF + SLOTS * CAP * 8
def header(version=VERSION, rings_off=RINGS_OFF):
    # magic version batch_pages sched_fifo arena_bytes capacity ncpus nslots
    # next_seq claimed unslotted reserved cpus_off holder_off slots_off rings_off
    return struct.pack("<IIIIQQIIIIIIQQQQ", MAGIC, version, 1, 0, 4 * 4096, CAP, NCPUS, SLOTS, 0, 0, 0, 0,
                       CPUS_OFF, HOLDER_OFF, SLOTS_OFF, rings_off)
def arrays():  # cpus[] = {0}, holder[] = {-1}, every slot's successor and cpu -1
    out = [(CPUS_OFF, struct.pack("<i", 0)), (HOLDER_OFF, struct.pack("<i", -1))]
    for k in range(SLOTS):
        out.append((SLOTS_OFF + k * SLOT + 16, struct.pack("<i", -1)))   # cpu
        out.append((SLOTS_OFF + k * SLOT + 36, struct.pack("<i", -1)))   # successor
    return out
def prepare(fd, mode=0o600, seal=True, good=True, head=None):
    os.ftruncate(fd, size)
    os.pwrite(fd, head if head is not None else header() if good else b"\xff" * 40, 0)
    for off, data in arrays():
        os.pwrite(fd, data, off)
    os.fchmod(fd, mode)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
def claimed(fd):
    return struct.unpack("<i", os.pread(fd, 4, CLAIMED))[0]
def run(fd):
    env = dict(os.environ, LD_PRELOAD=lib, SHOOTDOWN_PROBE_FD=str(fd))
    subprocess.run(["sleep", "0.2"], env=env, pass_fds=(fd,), timeout=30, check=False)
    return claimed(fd)
failed = 0
def check(cond, what):
    global failed
    print(("ok" if cond else "not ok"), "-", what, flush=True)
    failed += 0 if cond else 1
cases = []
f = os.open(os.path.join(tmp, "plain"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
prepare(f, seal=False); cases.append(("a plain file with a valid header", f))
m = os.memfd_create("x", os.MFD_ALLOW_SEALING); prepare(m, mode=0o644); cases.append(("a memfd readable by others (0644)", m))
m = os.memfd_create("x", os.MFD_ALLOW_SEALING); prepare(m, seal=False); cases.append(("an unsealed memfd", m))
m = os.memfd_create("x", 0); os.ftruncate(m, size); os.pwrite(m, header(), 0); os.fchmod(m, 0o600); cases.append(("a memfd without sealing", m))
m = os.memfd_create("x", os.MFD_ALLOW_SEALING); prepare(m, good=False); cases.append(("a wrong header", m))
m = os.memfd_create("x", os.MFD_ALLOW_SEALING); prepare(m, head=header(version=2)); cases.append(("a version-2 header", m))
m = os.memfd_create("x", os.MFD_ALLOW_SEALING); prepare(m, head=header(rings_off=RINGS_OFF - 8)); cases.append(("offsets that disagree with the layout", m))
for what, fd in cases:
    check(run(fd) == 0, "refuses " + what)
r, w = os.pipe()
env = dict(os.environ, LD_PRELOAD=lib, SHOOTDOWN_PROBE_FD=str(r))
p = subprocess.run(["true"], env=env, pass_fds=(r,), timeout=30)
check(p.returncode == 0, "a pipe: the target runs untouched")
for bad in ["", "x", "-1", "99999", "3junk"]:
    p = subprocess.run(["true"], env=dict(os.environ, LD_PRELOAD=lib, SHOOTDOWN_PROBE_FD=bad), timeout=30)
    check(p.returncode == 0, "SHOOTDOWN_PROBE_FD=%r: the target runs untouched" % bad)
m = os.memfd_create("x", os.MFD_ALLOW_SEALING); prepare(m)
check(run(m) > 0, "positive control: the setup the tool makes is claimed")
sys.exit(1 if failed else 0)
PY
if [[ $? == 0 ]]; then ok "probe library environment checks"; else not_ok "probe library environment checks"; fi
# The tool's own memfd: mode 0600 and sealed, seen from the target.
run_cmd timeout 60 "$SHOOTDOWN" probe --duration 1s -- sh -c 'sleep 0.5; cat /proc/self/status >/dev/null'
expect_rc 0 "probe through the tool still runs"
finish
