# SPDX-License-Identifier: Apache-2.0
# smt-numa8: isolcpus=2-3,6-7 nohz_full=2-3,6-7 hugepages=64. Most important
# cases first: the guest has a deadline (8 vCPUs under single-threaded TCG).
. /lab/suites/common.sh
RUNARGS="--chunk-size 8M --batch 64K --trigger after=100ms --baseline 100ms --settle 5ms --after 100ms --trace on -q"
doctor_case doctor-tuned
case_run choice-default $RUNARGS --release munmap
case_run v3-munmap $RUNARGS --culprit-cpu 0 --victim-cpus 2,3,6 --release munmap --repeat 2 --every 50ms
case_run v3-reuse $RUNARGS --culprit-cpu 0 --victim-cpus 2,3,6 --release reuse --repeat 2 --every 50ms
case_run v3-membarrier $RUNARGS --culprit-cpu 0 --victim-cpus 2,3,6 --release membarrier --repeat 4 --every 20ms
case_run v7rt-munmap $RUNARGS --rt --culprit-cpu 0 --victim-cpus 1-7 --release munmap --repeat 2 --every 50ms
case_run hugetlb $RUNARGS --pages hugetlb --culprit-cpu 0 --victim-cpus 2 --release munmap --repeat 2 --every 50ms
case_run unprivileged --as nobody $RUNARGS --trace auto --culprit-cpu 0 --victim-cpus 2 --release munmap --no-mlock
case_run v3-mprotect $RUNARGS --culprit-cpu 0 --victim-cpus 2,3,6 --release mprotect --repeat 2 --every 50ms
case_run v3-madvise-dontneed $RUNARGS --culprit-cpu 0 --victim-cpus 2,3,6 --release madvise-dontneed --repeat 2 --every 50ms
case_run v7rt-reuse $RUNARGS --rt --culprit-cpu 0 --victim-cpus 1-7 --release reuse --repeat 2 --every 50ms
case_run v7rt-membarrier $RUNARGS --rt --culprit-cpu 0 --victim-cpus 1-7 --release membarrier --repeat 4 --every 20ms
