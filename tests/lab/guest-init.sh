#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# PID 1 of a lab guest (tests/lab/lab.sh packs it as /init). Mounts what the
# tool reads, runs the suite named by lab.suite= on the kernel command line,
# then writes /out as a base64 tar to the second serial port (/dev/ttyS1, a
# file on the host: no kernel message can interleave) and powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/shm /dev/hugepages /tmp /out
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
chmod 1777 /tmp /dev/shm
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t hugetlbfs hugetlbfs /dev/hugepages 2>/dev/null
suite=
deadline=300
for w in $(cat /proc/cmdline); do
  case "$w" in
    lab.suite=*) suite=${w#lab.suite=} ;;
    lab.deadline=*) deadline=${w#lab.deadline=} ;;
  esac
done
echo "LAB-BOOTED suite=$suite kernel=$(uname -r) cpus=$(nproc)"
{
  echo "kernel=$(uname -r)"
  echo "cmdline=$(cat /proc/cmdline)"
  echo "online=$(cat /sys/devices/system/cpu/online)"
  echo "isolated=$(cat /sys/devices/system/cpu/isolated 2>/dev/null)"
  echo "nohz_full=$(cat /sys/devices/system/cpu/nohz_full 2>/dev/null)"
  for n in /sys/devices/system/node/node*; do [ -e "$n/cpulist" ] && echo "${n##*/}=$(cat $n/cpulist)"; done
  for c in /sys/devices/system/cpu/cpu[0-9]*; do
    [ -e "$c/topology/thread_siblings_list" ] && echo "${c##*/}.siblings=$(cat $c/topology/thread_siblings_list)"
  done
  ls /sys/kernel/tracing/events/ipi /sys/kernel/tracing/events/csd 2>&1 | tr '\n' ' '
  echo
  grep -E 'tlb_flush' /sys/kernel/tracing/events/tlb/tlb_flush/format 2>/dev/null | head -2
} >/out/guest.txt 2>&1
start=$(cut -d' ' -f1 /proc/uptime)
if [ -x "/lab/suites/$suite.sh" ]; then
  # The suite gets a deadline so that a slow guest still sends back the
  # cases it finished (a case not finished has no rc file: check.py fails it).
  timeout "$deadline" sh "/lab/suites/$suite.sh" /out >/out/suite.log 2>&1
  echo "rc=$? (deadline ${deadline}s)" >>/out/suite.log
else
  echo "no suite '$suite'" >/out/suite.log
fi
echo "suite_seconds=$(awk -v s="$start" '{print $1 - s}' /proc/uptime)" >>/out/guest.txt
echo "boot_seconds=$start" >>/out/guest.txt
dmesg >/out/dmesg.txt 2>&1
cd /out && tar czf /tmp/out.tgz . 
sum=$(sha256sum /tmp/out.tgz | cut -d' ' -f1)
echo "LAB-PACKED at $(cut -d' ' -f1 /proc/uptime) s: $(wc -c </tmp/out.tgz) bytes"
stty -F /dev/ttyS1 raw -echo 2>/dev/null
{
  echo "LAB-RESULT-BEGIN $sum"
  base64 /tmp/out.tgz
  echo "LAB-RESULT-END"
} >/dev/ttyS1
sync
echo "LAB-DONE at $(cut -d' ' -f1 /proc/uptime) s"
poweroff -f
