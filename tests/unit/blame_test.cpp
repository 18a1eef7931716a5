// core/blame: call-site aggregation, IPI pairing, syscall names, folded output.
#include <gtest/gtest.h>

#include "core/blame.hpp"

namespace shootdown {
namespace {

FlushSample flush(std::int64_t t, int tid, std::int64_t pages, std::string sys_frame, std::vector<std::string> user) {
  FlushSample f;
  f.mono_ns = t;
  f.cpu = 0;
  f.pid = 100;
  f.tid = tid;
  f.pages = pages;
  f.kernel = {"native_flush_tlb_multi", "flush_tlb_mm_range", std::move(sys_frame), "do_syscall_64"};
  for (auto& u : user) {
    UserFrame fr;
    fr.function = u;
    fr.module = u == "__munmap" || u == "__madvise" ? "libc.so.6" : "app";
    f.user.push_back(fr);
  }
  return f;
}

TEST(Blame, StripParameters) {
  EXPECT_EQ(strip_parameters("Journal::roll(int) const"), "Journal::roll");
  EXPECT_EQ(strip_parameters("f<int>(std::vector<int, std::allocator<int> > const&)"), "f<int>");
  EXPECT_EQ(strip_parameters("main"), "main");
  EXPECT_EQ(strip_parameters("Foo::operator()(int)"), "Foo::operator()");
}

TEST(Blame, SyscallFromKernel) {
  EXPECT_EQ(syscall_from_kernel({"native_flush_tlb_multi", "__x64_sys_munmap", "do_syscall_64"}), "munmap");
  EXPECT_EQ(syscall_from_kernel({"flush_tlb_mm_range", "do_madvise", "__do_sys_madvise"}), "madvise");
  EXPECT_EQ(syscall_from_kernel({"flush_tlb_mm_range", "handle_mm_fault", "exc_page_fault"}), "page fault");
  // xz -T2 on Linux 6.18: every flush came this way (a zero page written after a read).
  EXPECT_EQ(syscall_from_kernel({"native_flush_tlb_multi", "flush_tlb_mm_range", "ptep_clear_flush", "do_wp_page",
                                 "__handle_mm_fault", "handle_mm_fault", "exc_page_fault", "asm_exc_page_fault"}),
            "page fault: write to a read-only page");
  EXPECT_EQ(syscall_from_kernel({"flush_tlb_mm_range", "do_numa_page", "handle_mm_fault", "exc_page_fault"}),
            "page fault: NUMA hinting");
  EXPECT_NE(advice_for("page fault: write to a read-only page", {}).find("MAP_POPULATE"), std::string::npos);
  EXPECT_EQ(advice_for("page fault", {}).find("fork"), std::string::npos);  // no guess without evidence
  EXPECT_EQ(syscall_from_kernel({}), "kernel");
}

TEST(Blame, SitesPagesAndPairedIpis) {
  BlameInput in;
  in.pid = 100;
  in.has_csd = true;
  for (int i = 0; i < 5; ++i)
    in.flushes.push_back(flush(1000 + i * 100, 101, 16, "__x64_sys_munmap", {"__munmap", "Journal::roll", "main"}));
  in.flushes.push_back(flush(5000, 102, -1, "__x64_sys_madvise", {"__madvise", "Arena::purge", "worker"}));
  for (int i = 0; i < 5; ++i) {  // csd queue: one per flush to cpu1, 10 ns after it
    IpiSend q;
    q.mono_ns = 1010 + i * 100;
    q.tid = 101;
    q.targets = 1u << 1;
    q.queued = true;
    q.tlb = true;
    in.ipis.push_back(q);
    IpiSend s = q;  // the hardware IPI
    s.queued = false;
    s.tlb = false;
    in.ipis.push_back(s);
  }
  IpiSend other;  // membarrier-like IPI with no flush before it on that thread
  other.mono_ns = 9000;
  other.tid = 103;
  other.targets = 0b110;
  in.ipis.push_back(other);
  in.received_by_target = {{1, 5}};
  const BlameReport r = blame(in, BlameOptions{});
  ASSERT_EQ(r.sites.size(), 2u);
  EXPECT_EQ(r.flushes, 6);
  EXPECT_EQ(r.pages, 80);
  EXPECT_EQ(r.full_flushes, 1);
  EXPECT_EQ(r.ipis, 5);
  EXPECT_EQ(r.ipi_sends, 5);
  EXPECT_EQ(r.other_ipis, 2);
  EXPECT_EQ(r.received, 5);
  const CallSite& s = r.sites[0];
  EXPECT_EQ(s.stack, "Journal::roll ← main");  // the libc stub is dropped
  EXPECT_EQ(s.syscall, "munmap");
  EXPECT_EQ(s.flushes, 5);
  EXPECT_EQ(s.ipis, 5);
  EXPECT_EQ(s.receiving_cpus.at(1), 5);
  EXPECT_NE(s.advice.find("munmap"), std::string::npos);
  EXPECT_EQ(r.sites[1].stack, "Arena::purge ← worker");
  EXPECT_EQ(r.sites[1].full_flushes, 1);
}

TEST(Blame, FreeOfMmapBlockAdvice) {
  EXPECT_NE(advice_for("munmap", {"free", "Buffer::release", "main"}).find("M_MMAP_THRESHOLD"), std::string::npos);
  EXPECT_NE(advice_for("mprotect", {"Jit::seal"}).find("mprotect"), std::string::npos);
  EXPECT_EQ(advice_for("kernel", {"x"}), "");
}

TEST(Blame, Folded) {
  BlameInput in;
  in.flushes.push_back(flush(1, 1, 16, "__x64_sys_munmap", {"__munmap", "Journal::roll", "main"}));
  in.flushes.push_back(flush(2, 1, 16, "__x64_sys_munmap", {"__munmap", "Journal::roll", "main"}));
  EXPECT_EQ(folded_stacks(in, BlameOptions{}),
            "main;Journal::roll;__munmap;do_syscall_64_[k];__x64_sys_munmap_[k];flush_tlb_mm_range_[k];native_flush_"
            "tlb_multi_[k] 2\n");
}

}  // namespace
}  // namespace shootdown
