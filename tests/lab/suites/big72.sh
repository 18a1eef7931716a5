# SPDX-License-Identifier: Apache-2.0
# big72: 72 CPUs (2 sockets x 18 cores x 2 threads, 2 NUMA nodes), untuned.
# Victims below and above CPU 63: an ipi_send_cpumask mask is two 64-bit
# words here, and every per-victim check must hold on CPUs 65 and 70 as on 3.
# A subset of the cases (munmap, reuse, membarrier, and probe on 11 CPUs,
# 3 and 64-71): under single-threaded TCG every idle vCPU of 72 costs boot
# and run time.
. /lab/suites/common.sh
for s in munmap reuse; do
  case_run v3rt-$s $RUNARGS --rt --culprit-cpu 1 --victim-cpus 3,65,70 --release $s --repeat 3 --every 50ms
done
case_run v3rt-membarrier $RUNARGS --rt --culprit-cpu 1 --victim-cpus 3,65,70 --release membarrier --repeat 3 --every 20ms
probe_case probe-11cpus 3,64-71
