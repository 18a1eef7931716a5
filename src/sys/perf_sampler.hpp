// SPDX-License-Identifier: Apache-2.0
// Per-CPU samplers for `shootdown blame`: who initiates TLB shootdowns, with
// kernel and user callchains. Separate from sys::Tracer (which serves the
// victim-side analysis of run/probe and never copies user stacks).
//
// Per online CPU, all redirected into one ring (PERF_EVENT_IOC_SET_OUTPUT):
//  - tlb:tlb_flush filtered "reason == 4" (PERF_EVENT_IOC_SET_FILTER): the
//    initiator, in task context. PERF_SAMPLE_CALLCHAIN (kernel + user frame
//    pointers) plus PERF_SAMPLE_REGS_USER (ip, sp, bp) and a small
//    PERF_SAMPLE_STACK_USER copy: glibc's syscall stubs do not push a frame,
//    so the frame-pointer walk skips the function that called munmap(); its
//    return address is the word at the user sp, which we return separately.
//  - tlb:tlb_flush filtered "reason == 1": shootdowns received, counted per
//    (cpu, interrupted tgid).
//  - ipi:ipi_send_cpu / ipi_send_cpumask: IPIs sent. Their callback names
//    the generic handler (generic_smp_call_function_single_interrupt), not
//    the work: csd:csd_queue_cpu does (func = flush_tlb_func), one record per
//    target CPU a function call is queued to, IPI needed or already pending.
//  - a software dummy event with mmap/mmap2/mmap_data/task: PERF_RECORD_MMAP2
//    (file mappings, for symbolizing after the target exited) and
//    PERF_RECORD_FORK (descendant processes and threads).
// Events are CPU-wide (pid = -1), so a process started after open() is fully
// covered, including its exec mappings. Nothing is filtered by process here:
// callers pick their target from the records (sys/ never decides policy).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/cpulist.hpp"
#include "core/expected.hpp"

namespace shootdown::sys {

struct SamplerOptions {
  std::vector<int> cpus;
  int ring_pages = 256;   // per CPU, power of two
  int stack_bytes = 128;  // PERF_SAMPLE_STACK_USER copy (multiple of 8)
  int poll_interval_us = 10000;
  std::size_t max_flush_samples = 2'000'000;  // beyond: counted in dropped()
};

// A distinct callchain of reason-4 flushes (with the word at the user stack
// pointer): stored once, however many flushes share it (a storm repeats one
// call site hundreds of thousands of times a second).
struct SampledStack {
  int pid = 0;                            // the process whose addresses these are
  std::vector<std::uint64_t> kernel_ips;  // innermost first
  std::vector<std::uint64_t> user_ips;    // innermost first (user_ips[0] = ip at syscall entry)
  std::uint64_t sp_word = 0;              // *(u64*)user_sp from the stack copy
  bool has_sp_word = false;
};

struct SampledFlush {  // tlb_flush reason 4
  std::int64_t mono_ns = 0;
  int cpu = -1, pid = 0, tid = 0;
  std::int64_t pages = 0;   // -1 = all
  std::uint32_t stack = 0;  // index into SamplerData::stacks
};

struct SampledIpi {
  std::int64_t mono_ns = 0;
  int cpu = -1, pid = 0, tid = 0;
  bool single = false;  // ipi_send_cpu
  bool queued = false;  // csd:csd_queue_cpu (callback = the function queued)
  CpuMask targets;      // target CPUs (any number)
  std::uint64_t callsite = 0, callback = 0;
};

struct MmapRecord {  // PERF_RECORD_MMAP2 (file-backed only)
  std::int64_t mono_ns = 0;
  int pid = 0;
  std::uint64_t start = 0, len = 0, pgoff = 0;
  std::uint32_t maj = 0, min = 0;
  std::uint64_t ino = 0;
  std::uint32_t prot = 0;
  std::string path;
};

struct ForkRecord {  // PERF_RECORD_FORK
  std::int64_t mono_ns = 0;
  int pid = 0, ppid = 0, tid = 0;
};

struct SamplerData {
  std::vector<SampledFlush> flushes;
  std::vector<SampledStack> stacks;  // the distinct callchains flushes point to
  std::vector<SampledIpi> ipis;
  std::vector<MmapRecord> mmaps;
  std::vector<ForkRecord> forks;
  std::map<std::pair<int, int>, std::int64_t> received;  // (cpu, tgid) -> reason-1 flushes
  std::int64_t lost = 0;                                 // kernel-side drops (PERF_RECORD_LOST[_SAMPLES])
  std::int64_t dropped = 0;                              // flush samples over max_flush_samples
  std::int64_t start_ns = 0, stop_ns = 0;
  std::vector<std::string> missing;  // what could not be opened
};

class FlushSampler {
 public:
  // Opens and enables everything (an error when impossible).
  static Expected<std::unique_ptr<FlushSampler>> open(const SamplerOptions& opts);
  ~FlushSampler();
  FlushSampler(const FlushSampler&) = delete;
  FlushSampler& operator=(const FlushSampler&) = delete;

  void start_reader();  // polling thread (no perf wakeups)
  // Disable, final drain, close. Idempotent (a second call returns empty data).
  SamplerData stop();

  struct Impl;

 private:
  FlushSampler();
  std::unique_ptr<Impl> impl_;
};

}  // namespace shootdown::sys
