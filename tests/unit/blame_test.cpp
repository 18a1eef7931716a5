// SPDX-License-Identifier: Apache-2.0
// core/blame: call-site aggregation, IPI pairing, syscall names, folded output.
#include <gtest/gtest.h>

#include "core/blame.hpp"
#include "core/eh_frame.hpp"

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
    q.targets = CpuMask::of({1});
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
  other.targets = CpuMask::of({1, 2});
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

// Targets above CPU 63 count like any other (a 72-CPU machine: victims on
// both sides of the first cpumask word).
TEST(Blame, TargetsAboveCpu63AreCounted) {
  BlameInput in;
  in.pid = 100;
  in.has_csd = false;
  in.flushes.push_back(flush(1000, 101, 1, "__x64_sys_munmap", {"__munmap", "Pool::trim", "main"}));
  IpiSend s;
  s.mono_ns = 1010;
  s.tid = 101;
  s.targets = CpuMask::of({3, 65, 70});
  in.ipis.push_back(s);
  const BlameReport r = blame(in, BlameOptions{});
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.ipis, 3);
  EXPECT_EQ(r.ipi_cpus, (std::map<int, std::int64_t>{{3, 1}, {65, 1}, {70, 1}}));
  EXPECT_EQ(r.sites[0].ipis, 3);
  EXPECT_EQ(r.sites[0].receiving_cpus.at(70), 1);
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

// OpenJDK 17 on Linux 6.18: G1 uncommitting heap regions. The syscall wrapper
// is gone from the chain (do_syscall_64 -> vm_mmap_pgoff): named from its body,
// not "kernel (entry_SYSCALL_64_after_hwframe)".
TEST(Blame, SyscallFromItsBodyWhenTheWrapperIsInlined) {
  const std::vector<std::string> jvm_uncommit = {
      "native_flush_tlb_multi", "flush_tlb_mm_range", "tlb_flush_mmu_tlbonly",
      "tlb_finish_mmu",         "__mmap_region",      "do_mmap",
      "vm_mmap_pgoff",          "do_syscall_64",      "entry_SYSCALL_64_after_hwframe"};
  EXPECT_EQ(syscall_from_kernel(jvm_uncommit), "mmap");
  EXPECT_NE(advice_for("mmap", {"__mmap", "os::pd_uncommit_memory", "G1PageBasedVirtualSpace::uncommit"}).find("-Xms"),
            std::string::npos);
  EXPECT_NE(advice_for("mmap", {"Pool::release"}).find("MAP_FIXED"), std::string::npos);
  EXPECT_EQ(syscall_from_kernel(
                {"flush_tlb_mm_range", "change_protection", "mprotect_fixup", "do_mprotect_pkey", "do_syscall_64"}),
            "mprotect");
  EXPECT_EQ(syscall_from_kernel({"flush_tlb_mm_range", "do_vmi_munmap", "move_vma", "do_mremap", "do_syscall_64"}),
            "mremap");
}

// glibc's own releases, named (OpenJDK/node on Debian 12).
TEST(Blame, GlibcThreadExitAndArenaTrimAdvice) {
  EXPECT_NE(advice_for("madvise", {"start_thread"}).find("thread"), std::string::npos);
  EXPECT_NE(advice_for("madvise", {"_int_free"}).find("M_TRIM_THRESHOLD"), std::string::npos);
  EXPECT_NE(advice_for("page fault: write to a read-only page", {}).find("MAP_PRIVATE"), std::string::npos);
}

// The frames of a sample: the leaf always, the walk cut at the first
// non-code address (xz: 0x7c300000003), the stack word when it is code.
TEST(Blame, UserFramesKeepCodeAddressesOnly) {
  auto code = [](std::uint64_t ip) { return ip >= 0x1000 && ip < 0x2000; };
  bool cut = false;
  const std::uint64_t sp = 0x1800;
  auto f = user_frames({0x1100, 0x1200, 0x7c300000003, 0x1300}, &sp, code, &cut);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].ip, 0x1100u);
  EXPECT_FALSE(f[0].return_address);
  EXPECT_EQ(f[1].ip, 0x1800u);
  EXPECT_TRUE(f[1].recovered);
  EXPECT_EQ(f[2].ip, 0x1200u);
  EXPECT_TRUE(f[2].return_address);
  EXPECT_TRUE(cut);
  // A stack word that is not code (a spilled pointer, a counter) is no frame.
  cut = false;
  const std::uint64_t data = 0x7c300000003;
  f = user_frames({0x1100, 0x1200}, &data, code, &cut);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_FALSE(f[1].recovered);
  EXPECT_FALSE(cut);
  // The walk already found it: not twice.
  f = user_frames({0x1100, 0x1800}, &sp, code, &cut);
  EXPECT_EQ(f.size(), 2u);
  // The leaf (the interrupted instruction) is kept whatever the mappings say.
  f = user_frames({0x9000}, nullptr, code, &cut);
  EXPECT_EQ(f.size(), 1u);
}

// One function of a stripped library is one frame: xz -T2 wrote liblzma's
// match-finder hash table at +0x1626e and +0x1626b (2888 and 120 flushes),
// two "call sites" until the .eh_frame function start named both.
TEST(Blame, FramesOfOneFunctionWithoutSymbolAreOneSite) {
  BlameInput in;
  for (std::uint64_t off : {0x1626eull, 0x1626bull, 0x1626eull}) {
    FlushSample s;
    s.pid = 1;
    s.tid = 2;
    s.pages = 1;
    s.kernel = {"native_flush_tlb_multi", "flush_tlb_mm_range", "ptep_clear_flush", "do_wp_page",
                "handle_mm_fault",        "exc_page_fault"};
    UserFrame u;
    u.ip = 0x7f0000000000 + off;
    u.module = "liblzma.so.5.4.1";
    u.module_path = "/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1";
    u.offset = off;
    u.function_start = 0x161c0;
    s.user.push_back(u);
    in.flushes.push_back(s);
  }
  const BlameReport r = blame(in, BlameOptions{});
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.sites[0].flushes, 3);
  EXPECT_EQ(r.sites[0].frames.at(0), "fn@liblzma.so.5.4.1+0x161c0");
  EXPECT_EQ(r.sites[0].addresses.at(0).kind, "function-start");
  EXPECT_EQ(r.sites[0].addresses.at(0).module, "/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1");
  EXPECT_EQ(r.sites[0].addresses.at(0).offset, 0x1626eu);
  EXPECT_EQ(r.sites[0].syscall, "page fault: write to a read-only page");
}

// JIT/interpreter code (anonymous executable memory) is marked, and a run of
// such frames is one: OpenJDK's interpreter split one site by bytecode address.
TEST(Blame, JitFramesMarkedAndMerged) {
  BlameInput in;
  for (std::uint64_t jit_ip : {0x7fd0c8950513ull, 0x7fd0c8950521ull}) {
    FlushSample s;
    s.kernel = {"flush_tlb_mm_range", "do_wp_page", "handle_mm_fault", "exc_page_fault"};
    UserFrame a;
    a.function = "ConstantPoolCacheEntry::set_field";
    a.module = "libjvm.so";
    UserFrame j1;
    j1.ip = jit_ip;
    j1.jit = true;
    UserFrame j2 = j1;
    j2.ip = 0x7fd0c8938cc9;
    UserFrame b;
    b.function = "JavaCalls::call_helper";
    b.module = "libjvm.so";
    s.user = {a, j1, j2, b};
    in.flushes.push_back(s);
  }
  const BlameReport r = blame(in, BlameOptions{});
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.sites[0].stack, "ConstantPoolCacheEntry::set_field ← [jit] ← JavaCalls::call_helper");
  EXPECT_EQ(r.sites[0].addresses.at(1).kind, "jit");
  EXPECT_EQ(r.sites[0].flushes, 2);
}

// .eh_frame_hdr as GNU ld writes it (version 1, eh_frame_ptr pcrel sdata4,
// count udata4, table datarel sdata4) over two FDEs: [0x1000, 0x1100) and
// [0x1200, 0x1250), the second with a gap before it.
TEST(Blame, EhFrameFunctionStart) {
  auto put32 = [](std::vector<std::uint8_t>& b, std::size_t at, std::int64_t v) {
    for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((v >> (8 * i)) & 0xff);
  };
  const std::uint64_t hdr_addr = 0x4000, eh_addr = 0x5000;
  std::vector<std::uint8_t> eh(64, 0);
  // FDE at +0 and +24: length 20, CIE pointer, pc_begin (pcrel), pc_range.
  for (auto [at, begin, range] : {std::tuple{0ull, 0x1000ull, 0x100ull}, std::tuple{24ull, 0x1200ull, 0x50ull}}) {
    put32(eh, at, 20);
    put32(eh, at + 4, 8);
    put32(eh, at + 8, static_cast<std::int64_t>(begin) - static_cast<std::int64_t>(eh_addr + at + 8));
    put32(eh, at + 12, static_cast<std::int64_t>(range));
  }
  std::vector<std::uint8_t> hdr(12 + 16, 0);
  hdr[0] = 1;
  hdr[1] = 0x1b;
  hdr[2] = 0x03;
  hdr[3] = 0x3b;
  put32(hdr, 4, static_cast<std::int64_t>(eh_addr) - static_cast<std::int64_t>(hdr_addr + 4));
  put32(hdr, 8, 2);
  put32(hdr, 12, 0x1000 - static_cast<std::int64_t>(hdr_addr));
  put32(hdr, 16, static_cast<std::int64_t>(eh_addr) - static_cast<std::int64_t>(hdr_addr));
  put32(hdr, 20, 0x1200 - static_cast<std::int64_t>(hdr_addr));
  put32(hdr, 24, static_cast<std::int64_t>(eh_addr + 24) - static_cast<std::int64_t>(hdr_addr));
  const EhSection h{hdr, hdr_addr}, e{eh, eh_addr};
  EXPECT_EQ(eh_frame_function_start(h, e, 0x1000), 0x1000u);
  EXPECT_EQ(eh_frame_function_start(h, e, 0x10ae), 0x1000u);
  EXPECT_EQ(eh_frame_function_start(h, e, 0x1234), 0x1200u);
  EXPECT_FALSE(eh_frame_function_start(h, e, 0x0fff));  // before every FDE
  EXPECT_FALSE(eh_frame_function_start(h, e, 0x1150));  // in the gap: no function claimed
  EXPECT_FALSE(eh_frame_function_start(h, e, 0x1250));  // past the last
  std::vector<std::uint8_t> other = hdr;
  other[3] = 0x1b;  // a table encoding we do not read
  EXPECT_FALSE(eh_frame_function_start(EhSection{other, hdr_addr}, e, 0x1010));
  EXPECT_FALSE(eh_frame_function_start(EhSection{std::span(hdr).first(10), hdr_addr}, e, 0x1010));  // truncated
}

}  // namespace
}  // namespace shootdown
