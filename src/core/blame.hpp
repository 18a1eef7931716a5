// SPDX-License-Identifier: Apache-2.0
// shootdown blame: which call sites of a process initiate TLB shootdowns.
// Pure aggregation (standard library only): symbolized samples of the
// target's tlb:tlb_flush reason-4 events ("about to send flush IPIs", fired
// in the initiator's task context, so its user stack is the call site), its
// ipi_send_cpu/cpumask events, and the reason-1 flushes its other threads
// received. src/sys/ collects and symbolizes; src/sink/ formats.
//
// Rules (docs/blame-probe.md):
//  - A call site is the collapsed user stack of a reason-4 flush, innermost
//    first, with the libc syscall stub frames (munmap, madvise, ...) dropped,
//    truncated to max_frames, plus the syscall named by the kernel callchain
//    (__x64_sys_munmap -> munmap; a page-fault path -> "page fault").
//  - Flush IPIs delivered: csd:csd_queue_cpu records with func
//    flush_tlb_func (one per CPU the flush is queued to), each paired with
//    the same thread's latest reason-4 flush no more than pair_window_ns
//    earlier (the tracepoints fire back to back in native_flush_tlb_multi);
//    their CPUs are that site's receivers. Without csd_queue_cpu, the
//    ipi_send_* records paired with a flush stand in for them.
//  - ipi_send_* records (hardware IPIs) paired with a flush count as flush
//    IPI sends; unpaired ones as other IPIs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/cpulist.hpp"

namespace shootdown {

struct UserFrame {
  std::uint64_t ip = 0;
  std::string function;  // demangled, parameters stripped; "" when unknown
  std::string file;      // source file where debug info exists, else ""
  int line = 0;
  std::string module;        // ELF basename ("libc.so.6"), "" when no mapping covers ip
  std::string module_path;   // the mapped file ("/usr/lib/x86_64-linux-gnu/libc.so.6"), "" when none
  std::uint64_t offset = 0;  // ELF virtual address (what addr2line takes)
  // ELF address of the function holding ip, from the module's call-frame
  // information (.eh_frame), when it has no symbol; 0 when unknown.
  std::uint64_t function_start = 0;
  bool jit = false;        // in anonymous executable memory (a JIT's code cache, a JVM interpreter)
  bool recovered = false;  // read from the user stack copy (the caller a syscall stub hides)

  // "function"; else "[jit]"; else "fn@module+0xSTART" (the function that
  // holds ip, from .eh_frame: every address of one function is one label);
  // else "module+0xoff"; else "0x..." (no mapping known).
  std::string label() const;
  // What label() is made of: "symbol", "jit", "function-start", "module-offset", "raw".
  const char* kind() const;
};

struct FlushSample {  // one tlb:tlb_flush reason 4 of a target thread
  std::int64_t mono_ns = 0;
  int cpu = -1;
  int pid = 0;
  int tid = 0;
  std::int64_t pages = 0;           // -1: full flush (TLB_FLUSH_ALL)
  std::vector<std::string> kernel;  // kernel function names, innermost first
  std::vector<UserFrame> user;      // innermost first
};

struct IpiSend {  // ipi:ipi_send_cpu / ipi_send_cpumask of a target thread
  std::int64_t mono_ns = 0;
  int cpu = -1;
  int tid = 0;
  CpuMask targets;
  bool queued = false;   // csd:csd_queue_cpu (else ipi:ipi_send_*)
  bool tlb = false;      // queued function is flush_tlb_func
  std::string callback;  // kernel function queued / IPI handler
};

// What blame learns about its target and span besides the samples: gathered
// into BlameInput, carried into BlameReport as it is.
struct BlameScope {
  int pid = 0;
  std::string command;
  std::map<int, std::int64_t> received_by_target;  // cpu -> reason-1 flushes that interrupted a target thread
  std::map<int, std::int64_t> received_all;        // cpu -> reason-1 flushes on that CPU (any task)
  std::map<int, std::int64_t> interrupts_tlb;      // cpu -> /proc/interrupts TLB delta (all processes)
  std::int64_t lost = 0;                           // samples the kernel dropped
  int processes = 1;                               // target plus descendants followed
  int threads = 0;                                 // threads seen (samples or clone records)
  std::vector<std::string> notes;                  // caveats, missing evidence
};

struct BlameInput : BlameScope {
  std::int64_t start_ns = 0, end_ns = 0;  // mono ns: sampling enabled / disabled
  std::vector<FlushSample> flushes;
  std::vector<IpiSend> ipis;
  bool has_csd = false;  // csd:csd_queue_cpu was traced
};

struct BlameOptions {
  int max_frames = 6;
  std::int64_t pair_window_ns = 2'000'000;
  int top = 10;  // formatting hint: how many sites the console shows
};

struct FrameAddress {    // where a site's frame is, from the first sample of the site
  std::string kind;      // UserFrame::kind()
  std::string module;    // mapped file path, "" for jit/raw
  std::uint64_t offset;  // ELF address in module (the sample's, not the function start); the ip for jit/raw
};

struct CallSite {
  std::string stack;                           // "leaf ← caller ← ..." (innermost first)
  std::vector<std::string> frames;             // labels, innermost first
  std::vector<FrameAddress> addresses;         // one per frame
  std::string location;                        // file:line of the innermost frame with debug info
  std::string syscall;                         // munmap, madvise, mprotect, page fault, ...
  std::int64_t flushes = 0;                    // reason-4 flushes
  std::int64_t pages = 0;                      // sum of ranged flushes' pages
  std::int64_t full_flushes = 0;               // flushes of the whole TLB (pages = all)
  std::int64_t ipis = 0;                       // flush IPIs delivered (target CPUs of paired sends)
  std::map<int, std::int64_t> receiving_cpus;  // cpu -> IPIs
  std::string advice;                          // one line, "" when the pattern is not known
};

struct BlameReport : BlameScope {
  std::int64_t duration_ns = 0;
  std::int64_t flushes = 0;  // shootdowns initiated (reason 4)
  std::int64_t pages = 0;
  std::int64_t full_flushes = 0;
  std::int64_t ipis = 0;                 // TLB IPIs delivered (all target CPUs of TLB sends)
  std::int64_t ipis_unpaired = 0;        // ... of sends with no reason-4 flush before them
  std::int64_t ipi_sends = 0;            // hardware IPIs sent for those flushes (ipi_send_* paired with a flush)
  std::int64_t other_ipis = 0;           // other function-call IPIs the target sent
  std::int64_t received = 0;             // reason-1 flushes received by target threads
  std::map<int, std::int64_t> ipi_cpus;  // cpu -> TLB IPIs sent there
  std::vector<CallSite> sites;           // by flushes, descending
};

BlameReport blame(const BlameInput& in, const BlameOptions& opts);

// Which user addresses of a sample are frames (rules in docs/blame-probe.md):
//  - ips[0] is the interrupted instruction: always kept;
//  - a frame-pointer walk through code without frame pointers reads data as
//    return addresses: the stack ends at the first address outside every
//    executable mapping (`executable`), and *cut is set;
//  - sp_word (the word at the user stack pointer) is the caller that a
//    function without a frame of its own hides (a libc syscall stub; memset
//    or memcpy faulting on fresh memory): kept when it is executable and the
//    walk did not already find it. A fault in a function that has a frame
//    can leave a stale code address there (not detected: see CAVEATS).
struct RawFrame {
  std::uint64_t ip = 0;
  bool return_address = false;  // symbolize ip - 1 (the call)
  bool recovered = false;       // from sp_word
};
std::vector<RawFrame> user_frames(const std::vector<std::uint64_t>& ips, const std::uint64_t* sp_word,
                                  const std::function<bool(std::uint64_t)>& executable, bool* cut);

// "munmap" from "__x64_sys_munmap"/"__do_sys_munmap"/"__se_sys_munmap";
// "page fault" when the chain holds exc_page_fault/handle_mm_fault; else the
// outermost non-generic kernel function, or "kernel" when the chain is empty.
std::string syscall_from_kernel(const std::vector<std::string>& kernel);

// The one-line advice for a known pattern, "" otherwise.
std::string advice_for(const std::string& syscall, const std::vector<std::string>& frames);

// "Journal::roll(int) const" -> "Journal::roll"; templates and operator() kept.
std::string strip_parameters(const std::string& demangled);

// Collapsed-stack lines ("main;Writer::append;Journal::roll;munmap;[k] ... N"),
// outermost first, user frames then kernel frames suffixed "_[k]" (the
// flamegraph.pl convention), one line per distinct stack, count = flushes.
std::string folded_stacks(const BlameInput& in, const BlameOptions& opts);

}  // namespace shootdown
