# SPDX-License-Identifier: Apache-2.0
# plain4: 4 CPUs, one node, untuned command line.
. /lab/suites/common.sh
doctor_case doctor-untuned
monitor_case monitor-bpf $RUNARGS --culprit-cpu 0 --victim-cpus 1-3 --release munmap --repeat 2 --every 50ms
case_run choice-default $RUNARGS --release munmap
for s in munmap mprotect madvise-dontneed reuse; do
  case_run v3-$s $RUNARGS --culprit-cpu 0 --victim-cpus 1-3 --release $s --repeat 2 --every 50ms
done
for s in munmap reuse; do
  case_run v3rt-$s $RUNARGS --rt --culprit-cpu 0 --victim-cpus 1-3 --release $s --repeat 2 --every 50ms
done
case_run v3-membarrier $RUNARGS --culprit-cpu 0 --victim-cpus 1-3 --release membarrier --repeat 4 --every 20ms
case_run v3rt-membarrier $RUNARGS --rt --culprit-cpu 0 --victim-cpus 1-3 --release membarrier --repeat 4 --every 20ms
