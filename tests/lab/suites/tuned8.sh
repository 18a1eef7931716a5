# smt-numa8: isolcpus=2-3,6-7 nohz_full=2-3,6-7 hugepages=64.
. /lab/suites/common.sh
doctor_case doctor-tuned
case_run choice-default $RUNARGS --release munmap
for s in munmap mprotect madvise-dontneed reuse; do
  case_run v3-$s $RUNARGS --culprit-cpu 0 --victim-cpus 2,3,6 --release $s --repeat 2 --every 50ms
done
case_run v3-membarrier $RUNARGS --culprit-cpu 0 --victim-cpus 2,3,6 --release membarrier --repeat 4 --every 20ms
for s in munmap reuse; do
  case_run v7rt-$s $RUNARGS --rt --culprit-cpu 0 --victim-cpus 1-7 --release $s --repeat 2 --every 50ms
done
case_run v7rt-membarrier $RUNARGS --rt --culprit-cpu 0 --victim-cpus 1-7 --release membarrier --repeat 4 --every 20ms
case_run hugetlb $RUNARGS --pages hugetlb --culprit-cpu 0 --victim-cpus 2 --release munmap --repeat 2 --every 50ms
case_run unprivileged --as nobody $RUNARGS --trace auto --culprit-cpu 0 --victim-cpus 2 --release munmap --no-mlock
