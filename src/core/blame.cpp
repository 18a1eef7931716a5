// SPDX-License-Identifier: Apache-2.0
#include "core/blame.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <unordered_map>

namespace shootdown {

namespace {

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// "__GI___munmap" / "__munmap" / "munmap64" -> "munmap"
std::string bare(std::string f) {
  if (starts_with(f, "__GI_")) f = f.substr(5);
  while (!f.empty() && f[0] == '_') f.erase(0, 1);
  if (f.size() > 2 && f.compare(f.size() - 2, 2, "64") == 0) f.resize(f.size() - 2);
  return f;
}

bool is_libc(const std::string& module) {
  return starts_with(module, "libc.so") || starts_with(module, "libc-");
}

// The libc syscall stubs at the top of a user stack say nothing the syscall
// column does not: drop them so the call site starts at the caller.
// Consecutive [jit] frames (a JIT's or interpreter's own frames) are one.
std::vector<const UserFrame*> site_frames(const FlushSample& s, const std::string& sys, int max_frames) {
  std::vector<const UserFrame*> out;
  std::size_t i = 0;
  while (i < s.user.size() && is_libc(s.user[i].module)) {
    const std::string b = bare(s.user[i].function);
    if (b != sys && b != "syscall" && b != "posix_madvise") break;
    ++i;
  }
  if (i == s.user.size()) i = 0;  // only the stub: keep it rather than nothing
  for (; i < s.user.size() && static_cast<int>(out.size()) < max_frames; ++i) {
    if (s.user[i].jit && !out.empty() && out.back()->jit) continue;
    out.push_back(&s.user[i]);
  }
  return out;
}

bool chain_has(const std::vector<std::string>& k, std::initializer_list<const char*> names) {
  for (const auto& f : k)
    for (const char* n : names)
      if (f == n) return true;
  return false;
}

}  // namespace

std::string UserFrame::label() const {
  if (!function.empty()) return function;
  if (jit) return "[jit]";
  if (!module.empty() && function_start) return "fn@" + module + "+" + hex(function_start);
  if (!module.empty()) return module + "+" + hex(offset);
  return hex(ip);
}

const char* UserFrame::kind() const {
  if (!function.empty()) return "symbol";
  if (jit) return "jit";
  if (!module.empty() && function_start) return "function-start";
  if (!module.empty()) return "module-offset";
  return "raw";
}

std::vector<RawFrame> user_frames(const std::vector<std::uint64_t>& ips, const std::uint64_t* sp_word,
                                  const std::function<bool(std::uint64_t)>& executable, bool* cut) {
  std::vector<RawFrame> out;
  for (std::size_t i = 0; i < ips.size(); ++i) {
    if (i > 0 && !executable(ips[i])) {
      if (cut) *cut = true;
      break;
    }
    out.push_back(RawFrame{ips[i], i > 0, false});
    if (i == 0 && sp_word && executable(*sp_word) && (ips.size() < 2 || ips[1] != *sp_word))
      out.push_back(RawFrame{*sp_word, true, true});
  }
  return out;
}

std::string strip_parameters(const std::string& d) {
  std::string s = d;
  // trailing cv/ref qualifiers of member functions
  for (const char* q : {" const", " volatile", " &&", " &", " noexcept"}) {
    const std::string qs(q);
    while (s.size() > qs.size() && s.compare(s.size() - qs.size(), qs.size(), qs) == 0) s.resize(s.size() - qs.size());
  }
  if (s.empty() || s.back() != ')') return s;
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')')
      ++depth;
    else if (s[i] == '(') {
      if (--depth == 0) {
        // "operator()(int)": the parameter list is the last group; keep "operator()"
        return s.substr(0, i);
      }
    }
  }
  return s;
}

std::string syscall_from_kernel(const std::vector<std::string>& k) {
  for (const auto& f : k) {
    for (const char* p : {"__x64_sys_", "__ia32_sys_", "__do_sys_", "__se_sys_", "ksys_"}) {
      if (starts_with(f, p)) return f.substr(std::char_traits<char>::length(p));
    }
  }
  // The syscall wrapper inlined or tail-called away (Linux 6.18:
  // do_syscall_64 -> vm_mmap_pgoff -> do_mmap -> __mmap_region): its body names it.
  if (chain_has(k, {"vm_mmap_pgoff", "do_mmap", "mmap_region", "__mmap_region"})) return "mmap";
  if (chain_has(k, {"__vm_munmap", "vm_munmap", "do_vmi_munmap"}) && !chain_has(k, {"do_mremap", "mremap_to"}))
    return "munmap";
  if (chain_has(k, {"do_mremap", "mremap_to", "move_vma"})) return "mremap";
  if (chain_has(k, {"do_mprotect_pkey", "mprotect_fixup"})) return "mprotect";
  if (chain_has(k, {"do_madvise", "madvise_vma_behavior", "madvise_dontneed_free"})) return "madvise";
  if (chain_has(k, {"exc_page_fault", "handle_mm_fault", "do_user_addr_fault"})) {
    // Which fault path flushed (mm/memory.c, mm/huge_memory.c, mm/migrate.c).
    if (chain_has(k, {"do_numa_page", "do_huge_pmd_numa_page"})) return "page fault: NUMA hinting";
    if (chain_has(k, {"migrate_pages", "migrate_folio", "move_to_new_folio"})) return "page fault: migration";
    if (chain_has(k, {"try_to_unmap", "shrink_folio_list", "shrink_page_list"})) return "page fault: reclaim";
    if (chain_has(k, {"do_huge_pmd_wp_page", "__split_huge_pmd", "split_huge_page_to_list"}))
      return "page fault: THP split";
    if (chain_has(k, {"do_wp_page", "wp_page_copy"})) return "page fault: write to a read-only page";
    return "page fault";
  }
  if (chain_has(k, {"do_exit", "exit_mmap", "mmput"})) return "exit";
  if (chain_has(k, {"task_numa_work", "change_prot_numa"})) return "numa balancing";
  if (chain_has(k, {"migrate_pages"})) return "migration";
  return k.empty() ? "kernel" : "kernel (" + k.back() + ")";
}

std::string advice_for(const std::string& sys, const std::vector<std::string>& frames) {
  auto has = [&](std::initializer_list<const char*> names) {
    for (const auto& f : frames)
      for (const char* n : names)
        if (f.find(n) != std::string::npos) return true;
    return false;
  };
  if (sys == "munmap" && has({"free", "munmap_chunk", "_int_free", "operator delete"}))
    return "glibc free() of an mmap-backed block: raise M_MMAP_THRESHOLD (mallopt, "
           "GLIBC_TUNABLES=glibc.malloc.mmap_threshold) or reuse the buffer";
  if (sys == "madvise" && has({"je_", "jemalloc", "pages_purge", "arena_decay", "extent_"}))
    return "jemalloc purging: raise dirty_decay_ms/muzzy_decay_ms (MALLOC_CONF) or disable background purging for this "
           "arena";
  if (sys == "madvise" && has({"tcmalloc", "ReleaseToSystem", "SystemRelease", "ReleasePages"}))
    return "tcmalloc releasing pages: lower the release rate (TCMALLOC_RELEASE_RATE / SetBackgroundReleaseRate)";
  // _int_free calls madvise only through heap_trim/shrink_heap (inlined in Debian's glibc).
  if (sys == "madvise" && has({"malloc_trim", "mtrim", "heap_trim", "shrink_heap", "_int_free"}))
    return "glibc trimming a thread arena's heap on free (MADV_DONTNEED): raise M_TRIM_THRESHOLD "
           "(GLIBC_TUNABLES=glibc.malloc.trim_threshold) or avoid malloc_trim on the hot path";
  // glibc's start_thread frees the stack of a thread that is exiting (advise_stack_range).
  if (sys == "madvise" && !frames.empty() && frames.front() == "start_thread")
    return "a thread exiting: glibc releases its stack with madvise(MADV_DONTNEED); keep threads (a pool) instead "
           "of starting one per task";
  if (sys == "madvise")
    return "madvise(DONTNEED/FREE) of memory other threads ran on: release less often, in larger batches, or keep and "
           "reuse it";
  if (sys == "munmap")
    return "munmap of touched memory: every call shoots down all CPUs running this process; batch unmaps or reuse the "
           "mapping";
  if (sys == "mprotect" || sys == "pkey_mprotect")
    return "mprotect toggling: each permission downgrade needs a shootdown; keep permissions stable or use separate "
           "mappings";
  if (sys == "mmap" && has({"uncommit"}))
    return "the JVM uncommitting heap (mmap(MAP_FIXED) over it after GC shrank the heap): set -Xms equal to -Xmx "
           "(a fixed heap is never uncommitted) or raise -XX:MaxHeapFreeRatio";
  if (sys == "mmap")
    return "mmap(MAP_FIXED) over memory in use unmaps it first (how runtimes and allocators uncommit): keep the "
           "mapping and reuse it";
  if (sys == "mremap") return "mremap moving/shrinking mappings: preallocate capacity instead of growing by remapping";
  if (sys == "page fault: write to a read-only page")
    return "first write to a page mapped read-only (do_wp_page): the shared zero page after a read of fresh memory "
           "(calloc/mmap read before written), a MAP_PRIVATE file mapping written, or copy-on-write after fork; "
           "pre-fault by writing (memset) or "
           "MAP_POPULATE before other threads run, and spawn children with posix_spawn instead of fork";
  if (sys == "page fault: NUMA hinting")
    return "NUMA balancing unmaps pages to sample access (do_numa_page): bind threads and memory to one node "
           "(numactl --membind/--cpunodebind) or set kernel.numa_balancing=0";
  if (sys == "page fault: migration") return "page migration on fault: keep memory on the node its threads run on";
  if (sys == "page fault: reclaim")
    return "direct reclaim in a fault unmaps pages: leave memory headroom (min_free_kbytes, cgroup memory.high) or "
           "mlock the hot set";
  if (sys == "page fault: THP split")
    return "a transparent huge page split on write: allocate with madvise(MADV_NOHUGEPAGE) where it is partly freed, "
           "or keep THP regions whole";
  if (sys == "page fault")
    return "flushes from a fault path the callchain does not name: see the kernel frames (--json, --folded)";
  if (sys == "exit" || sys == "exit_group") return "address-space teardown: expected once at exit";
  return "";
}

BlameReport blame(const BlameInput& in, const BlameOptions& opts) {
  BlameReport r;
  static_cast<BlameScope&>(r) = in;
  r.duration_ns = in.end_ns > in.start_ns ? in.end_ns - in.start_ns : 0;
  for (const auto& [cpu, n] : in.received_by_target) r.received += n;

  std::unordered_map<std::string, std::size_t> index;  // site key -> r.sites
  std::vector<std::size_t> site_of(in.flushes.size());
  for (std::size_t i = 0; i < in.flushes.size(); ++i) {
    const FlushSample& s = in.flushes[i];
    const std::string sys = syscall_from_kernel(s.kernel);
    const auto frames = site_frames(s, sys, std::max(1, opts.max_frames));
    std::string key = sys;
    for (const UserFrame* f : frames) key += "\n" + f->label();
    auto [it, fresh] = index.emplace(key, r.sites.size());
    if (fresh) {
      CallSite c;
      c.syscall = sys;
      for (const UserFrame* f : frames) {
        c.frames.push_back(f->label());
        const bool in_module = !f->module_path.empty() && !f->jit;
        c.addresses.push_back(FrameAddress{f->kind(), in_module ? f->module_path : "", in_module ? f->offset : f->ip});
        c.stack += (c.stack.empty() ? "" : " ← ") + f->label();
        if (c.location.empty() && !f->file.empty()) c.location = f->file + ":" + std::to_string(f->line);
      }
      if (c.stack.empty()) c.stack = "[no user stack]";
      c.advice = advice_for(sys, c.frames);
      r.sites.push_back(std::move(c));
    }
    site_of[i] = it->second;
    CallSite& c = r.sites[it->second];
    ++c.flushes;
    ++r.flushes;
    if (s.pages < 0) {
      ++c.full_flushes;
      ++r.full_flushes;
    } else {
      c.pages += s.pages;
      r.pages += s.pages;
    }
  }

  // Pair TLB IPI sends with the same thread's latest reason-4 flush.
  std::unordered_map<int, std::vector<std::size_t>> by_tid;  // tid -> flush indices in time order
  for (std::size_t i = 0; i < in.flushes.size(); ++i) by_tid[in.flushes[i].tid].push_back(i);
  for (auto& [tid, v] : by_tid)
    std::stable_sort(v.begin(), v.end(),
                     [&](std::size_t a, std::size_t b) { return in.flushes[a].mono_ns < in.flushes[b].mono_ns; });
  auto paired_flush = [&](const IpiSend& ipi) -> std::ptrdiff_t {
    auto it = by_tid.find(ipi.tid);
    if (it == by_tid.end()) return -1;
    const auto& v = it->second;
    auto pos = std::upper_bound(v.begin(), v.end(), ipi.mono_ns,
                                [&](std::int64_t t, std::size_t i) { return t < in.flushes[i].mono_ns; });
    if (pos == v.begin()) return -1;
    const std::size_t i = *std::prev(pos);
    if (ipi.mono_ns - in.flushes[i].mono_ns > opts.pair_window_ns) return -1;
    return static_cast<std::ptrdiff_t>(i);
  };
  for (const IpiSend& ipi : in.ipis) {
    const std::vector<int> to = ipi.targets.cpus();
    const auto n = static_cast<std::int64_t>(to.size());
    const std::ptrdiff_t f = paired_flush(ipi);
    bool delivered = false;
    if (ipi.queued) {
      delivered = ipi.tlb;
    } else if (f >= 0) {
      r.ipi_sends += n;
      delivered = !in.has_csd;
    } else {
      r.other_ipis += n;
    }
    if (!delivered) continue;
    r.ipis += n;
    for (int c : to) ++r.ipi_cpus[c];
    if (f < 0) {
      r.ipis_unpaired += n;
      continue;
    }
    CallSite& c = r.sites[site_of[static_cast<std::size_t>(f)]];
    c.ipis += n;
    for (int cpu : to) ++c.receiving_cpus[cpu];
  }
  std::stable_sort(r.sites.begin(), r.sites.end(),
                   [](const CallSite& a, const CallSite& b) { return a.flushes > b.flushes; });
  return r;
}

std::string folded_stacks(const BlameInput& in, const BlameOptions& opts) {
  std::map<std::string, std::int64_t> lines;
  for (const FlushSample& s : in.flushes) {
    std::string line;
    const int max_user = std::max(opts.max_frames, 64);
    const std::size_t nu = std::min<std::size_t>(s.user.size(), static_cast<std::size_t>(max_user));
    for (std::size_t i = nu; i-- > 0;) {
      std::string l = s.user[i].label();
      std::replace(l.begin(), l.end(), ';', ':');
      std::replace(l.begin(), l.end(), ' ', '_');
      line += (line.empty() ? "" : ";") + l;
    }
    for (std::size_t i = s.kernel.size(); i-- > 0;) line += (line.empty() ? "" : ";") + s.kernel[i] + "_[k]";
    if (line.empty()) line = "[unknown]";
    ++lines[line];
  }
  std::string out;
  for (const auto& [l, n] : lines) out += l + " " + std::to_string(n) + "\n";
  return out;
}

}  // namespace shootdown
