// SPDX-License-Identifier: Apache-2.0
#include "sys/bpf_flush_counter.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <algorithm>
#include <cctype>
#include <iterator>

#include "sys/fs.hpp"
#include "sys/meminfo.hpp"

// The object file src/bpf/flush_count.bpf.c compiles to, embedded at build
// time (src/bpf/CMakeLists.txt).
extern "C" const unsigned char shootdown_flush_count_bpf[];
extern "C" const unsigned long shootdown_flush_count_bpf_size;

namespace shootdown::sys {

namespace {

constexpr std::uint32_t kSlotFull = 7;  // flush_count.bpf.c SLOT_FULL
constexpr std::uint64_t kTaskTableBytes = 16ULL << 20;

struct TaskKey {  // flush_count.bpf.c struct task_key
  std::uint32_t tgid;
  std::uint32_t reason;
};
struct TaskValue {  // flush_count.bpf.c struct task_value
  std::uint64_t count;
  std::uint64_t ns;
  std::uint64_t inflicted_ns;
  std::uint64_t inflicted_other_ns;
};
struct TaskName {  // flush_count.bpf.c struct task_name
  std::uint64_t cgroup_id;
  char comm[16];
};

// libbpf prints the verifier's and its own messages through one callback:
// keep, for the error instead of printing them, the last non-empty line of
// the load and, where a program was refused, which one and the verifier's
// last word on it (its last line that is not an instruction, a source line
// or a register state, before the "processed N insns" summary).
thread_local std::string* g_last_line = nullptr;
thread_local bool g_refusal_kept = false;
int keep_last_line(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || !g_last_line) return 0;
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  std::string text(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
  va_end(again);
  std::string verdict;  // the verifier's last line before its summary
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (line.empty() || line.rfind("-- ", 0) == 0 || line.find("-- END PROG LOAD LOG --") != std::string::npos)
      continue;
    if (line.rfind("processed ", 0) == 0 || line.rfind("verification time", 0) == 0 ||
        line.rfind("stack depth", 0) == 0)
      break;
    // Instructions ("12: (85) call ..."), source (";"), register states:
    // the trace that led there, not the verdict.
    const bool trace = std::isdigit(static_cast<unsigned char>(line[0])) || line[0] == ';' ||
                       line.rfind("cur state", 0) == 0 || line.rfind("old state", 0) == 0 ||
                       line.rfind("new state", 0) == 0 || line.rfind("from ", 0) == 0;
    if (!trace) verdict = line;
  }
  if (verdict.empty() || g_refusal_kept) return 0;
  // The refused program's line, then its verifier log: keep both, and
  // nothing after (libbpf's own "failed to load" lines say less).
  if (g_last_line->find("load failed") != std::string::npos && verdict.rfind("libbpf:", 0) != 0) {
    *g_last_line += ": " + verdict;
    g_refusal_kept = true;
    return 0;
  }
  *g_last_line = verdict;
  return 0;
}

}  // namespace

std::uint32_t task_slots(int ncpus) {
  // One entry: the hash element (~64 bytes with its key) and a 16-byte value per possible CPU.
  const std::uint64_t per_entry = 64 + 16 * static_cast<std::uint64_t>(std::max(1, ncpus));
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(kTaskTableBytes / per_entry, 256, 8192));
}

struct BpfFlushCounter::Impl {
  bpf_object* obj = nullptr;
  std::vector<bpf_link*> links;
  int reasons_fd = -1;
  int tasks_fd = -1;
  int names_fd = -1;
  int times_fd = -1;
  std::string attach_point;
  std::string wait_method;
  std::string wait_unmeasured;
  std::string unlinked;
  bool csd_attached = false;
  std::string csd_unattached;
  int ncpus = 0;
  void close() {
    for (bpf_link* l : links) bpf_link__destroy(l);
    links.clear();
    if (obj) bpf_object__close(obj);
    obj = nullptr;
  }
  ~Impl() { close(); }
};

BpfFlushCounter::~BpfFlushCounter() = default;

namespace {

// Which programs of the object load together: the tracepoints typed by BTF
// ("_btf") or plain ("_raw"), the fexit that ends a wait, the csd link.
struct Variant {
  const char* suffix;
  bool fexit, csd;
};

// Opens the embedded object with one variant's programs set to load and
// target_tgid (the one variable of .rodata, frozen at load) and the task
// table's size set; the error says what is wrong with the object.
Status open_variant(bpf_object*& obj, const Variant& want, int only_tgid, std::vector<bpf_program*>& progs) {
  bpf_object_open_opts opts{};
  opts.sz = sizeof opts;
  opts.object_name = "shootdown_flush_count";
  obj = bpf_object__open_mem(shootdown_flush_count_bpf, shootdown_flush_count_bpf_size, &opts);
  if (!obj) return Error{fmt::format("BPF object: {}", std::strerror(errno))};
  bpf_program* p = nullptr;
  bpf_object__for_each_program(p, obj) {
    const std::string name = bpf_program__name(p);
    const bool mine = name == "wait_end_fexit" ? want.fexit
                      : name.rfind("link_", 0) == 0
                          ? want.csd
                          : name.size() > 4 && name.compare(name.size() - 4, 4, want.suffix) == 0;
    bpf_program__set_autoload(p, mine);
    if (mine) progs.push_back(p);
  }
  if (progs.empty()) return Error{fmt::format("BPF object: programs *{} missing", want.suffix)};
  bool set = false;
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, obj) {
    const std::string name = bpf_map__name(m);
    std::size_t size = 0;
    const void* init = nullptr;
    if (name.size() >= 7 && name.compare(name.size() - 7, 7, ".rodata") == 0 &&
        (init = bpf_map__initial_value(m, &size)) != nullptr && size >= sizeof(std::uint32_t)) {
      std::vector<unsigned char> data(static_cast<const unsigned char*>(init),
                                      static_cast<const unsigned char*>(init) + size);
      const auto t = static_cast<std::uint32_t>(std::max(0, only_tgid));
      std::memcpy(data.data(), &t, sizeof t);
      set = bpf_map__set_initial_value(m, data.data(), data.size()) == 0;
    }
  }
  if (!set) return Error{"BPF object: .rodata (target_tgid) missing"};
  // The per-process table's memory grows with the CPU count (a per-CPU
  // value per entry): task_slots bounds it.
  if (bpf_map* t = bpf_object__find_map_by_name(obj, "tasks"))
    bpf_map__set_max_entries(t, task_slots(libbpf_num_possible_cpus()));
  return Ok{};
}

// Loads, writes the config map (flush_count.bpf.c CFG_FLUSH_TLB_FUNC,
// CFG_CSD_ENDS_WAIT, CFG_KFLUSH_FIRST..) and attaches every program; the
// error says what failed (*eperm: the load was refused for want of privilege).
Status load_attach(bpf_object* obj, const std::vector<bpf_program*>& progs, const Variant& want,
                   std::uint64_t flush_tlb_func, const KernelFlushFuncs& kflush, std::vector<bpf_link*>& links,
                   const std::string& last, bool* eperm) {
  if (bpf_object__load(obj) != 0) {
    const int e = errno;
    *eperm = e == EPERM;
    return Error{fmt::format("{}{}", std::strerror(e), last.empty() ? "" : " (" + last + ")")};
  }
  bpf_map* config = bpf_object__find_map_by_name(obj, "config");
  const std::uint32_t k_func = 0, k_ends = 1;
  const std::uint64_t ends_wait = want.csd && !want.fexit && flush_tlb_func != 0 ? 1 : 0;
  if (!config || bpf_map_update_elem(bpf_map__fd(config), &k_func, &flush_tlb_func, BPF_ANY) != 0 ||
      bpf_map_update_elem(bpf_map__fd(config), &k_ends, &ends_wait, BPF_ANY) != 0)
    return Error{"BPF object: config map missing"};
  const std::uint64_t funcs[] = {kflush.do_kernel_range_flush, kflush.do_flush_tlb_all, kflush.cpa_flush_tlb};
  for (std::uint32_t i = 0; i < 3; ++i) {
    const std::uint32_t k = 2 + i;
    if (bpf_map_update_elem(bpf_map__fd(config), &k, &funcs[i], BPF_ANY) != 0)
      return Error{"BPF object: config map has no kernel-flush slots"};
  }
  for (bpf_program* prog : progs) {
    bpf_link* l = bpf_program__attach(prog);
    if (!l) return Error{fmt::format("attach {}: {}", bpf_program__section_name(prog), std::strerror(errno))};
    links.push_back(l);
  }
  return Ok{};
}

}  // namespace

Expected<std::unique_ptr<BpfFlushCounter>> BpfFlushCounter::open(int only_tgid, std::uint64_t flush_tlb_func,
                                                                 const KernelFlushFuncs& kernel_flush) {
  std::string last;
  g_last_line = &last;
  g_refusal_kept = false;
  libbpf_set_print(keep_last_line);
  auto fail = [&](const std::string& what) -> Expected<std::unique_ptr<BpfFlushCounter>> {
    g_last_line = nullptr;
    return Error{last.empty() ? what : fmt::format("{} ({})", what, last)};
  };
  std::unique_ptr<BpfFlushCounter> c(new BpfFlushCounter());
  c->impl_ = std::make_unique<Impl>();
  Impl& im = *c->impl_;
  // The BTF-typed raw tracepoints first, the plain raw tracepoints where
  // the kernel has no BTF. With each, the csd link where the kernel has csd
  // tracepoints (6.5+), and the fexit that ends the initiators' wait where
  // the kernel allows it (BTF, trampolines, not locked down); else the csd
  // link ends the wait; else it is not measured.
  const Variant variants[] = {{"_btf", true, true},   {"_btf", true, false}, {"_btf", false, true},
                              {"_btf", false, false}, {"_raw", false, true}, {"_raw", false, false}};
  std::string btf_failure, fexit_failure, csd_failure, both_failure;
  for (const Variant& want : variants) {
    if (want.csd && flush_tlb_func == 0 && !kernel_flush.any()) {
      csd_failure = "flush_tlb_func and the kernel-range flush functions not in /proc/kallsyms";
      continue;
    }
    im.close();
    std::vector<bpf_program*> progs;
    if (const Status opened = open_variant(im.obj, want, only_tgid, progs); !opened) return fail(opened.error());
    last.clear();
    g_refusal_kept = false;
    bool eperm = false;
    const Status loaded = load_attach(im.obj, progs, want, flush_tlb_func, kernel_flush, im.links, last, &eperm);
    if (loaded) {
      im.attach_point = bpf_program__section_name(progs.front());
      im.attach_point = im.attach_point.substr(0, im.attach_point.find('/'));
      const bool linked = want.csd && flush_tlb_func != 0;
      im.wait_method = want.fexit ? "fexit" : linked ? "csd" : "";
      const std::string fexit_why = fexit_failure.empty() ? "the kernel has no BTF" : fexit_failure;
      const std::string csd_why = !want.csd             ? (!csd_failure.empty()    ? csd_failure
                                                           : !both_failure.empty() ? both_failure
                                                                                   : "not loaded")
                                  : flush_tlb_func == 0 ? "flush_tlb_func not in /proc/kallsyms"
                                                        : "";
      if (!want.fexit && !linked)
        im.wait_unmeasured = fmt::format("fexit/native_flush_tlb_multi: {}; csd tracepoints: {}", fexit_why, csd_why);
      if (!linked) im.unlinked = "no csd tracepoints to link a receiver to its sender (" + csd_why + ")";
      im.csd_attached = want.csd;
      if (!want.csd) im.csd_unattached = csd_why;
      break;
    }
    const std::string& failure = loaded.error();
    if (eperm && !want.fexit && !want.csd)
      return fail("BPF load: not permitted (needs root, or CAP_BPF and CAP_PERFMON)");
    if (want.fexit && want.csd)
      both_failure = failure;  // either part may be what failed: the next variants tell
    else if (want.fexit)
      fexit_failure = failure;
    else if (want.csd)
      csd_failure = csd_failure.empty() ? failure : csd_failure;
    else if (btf_failure.empty())
      btf_failure = failure;
    else
      return fail(fmt::format("BPF load: tp_btf: {}; raw_tp: {}", btf_failure, failure));
  }
  bpf_map* reasons = bpf_object__find_map_by_name(im.obj, "by_reason");
  bpf_map* tasks = bpf_object__find_map_by_name(im.obj, "tasks");
  bpf_map* names = bpf_object__find_map_by_name(im.obj, "names");
  bpf_map* times = bpf_object__find_map_by_name(im.obj, "cpu_time");
  if (!reasons || !tasks || !names || !times) return fail("BPF object: maps missing");
  im.times_fd = bpf_map__fd(times);
  im.names_fd = bpf_map__fd(names);
  im.reasons_fd = bpf_map__fd(reasons);
  im.tasks_fd = bpf_map__fd(tasks);
  im.ncpus = libbpf_num_possible_cpus();
  if (im.ncpus <= 0) return fail("libbpf: cannot count the possible CPUs");
  g_last_line = nullptr;
  return c;
}

std::vector<BpfFlushCounter::Reasons> BpfFlushCounter::read_reasons() const {
  const Impl& im = *impl_;
  std::vector<Reasons> out(static_cast<std::size_t>(im.ncpus), Reasons{});
  std::vector<std::uint64_t> v(static_cast<std::size_t>(im.ncpus));
  for (std::uint32_t r = 0; r < static_cast<std::uint32_t>(kTlbFlushReasons); ++r) {
    if (bpf_map_lookup_elem(im.reasons_fd, &r, v.data()) != 0) continue;
    for (std::size_t cpu = 0; cpu < v.size(); ++cpu) out[cpu][r] = static_cast<std::int64_t>(v[cpu]);
  }
  return out;
}

std::int64_t BpfFlushCounter::unattributed() const {
  const Impl& im = *impl_;
  std::vector<std::uint64_t> v(static_cast<std::size_t>(im.ncpus));
  std::uint32_t slot = kSlotFull;
  if (bpf_map_lookup_elem(im.reasons_fd, &slot, v.data()) != 0) return 0;
  std::int64_t n = 0;
  for (auto x : v) n += static_cast<std::int64_t>(x);
  return n;
}

std::vector<BpfTaskCount> BpfFlushCounter::tasks() const {
  const Impl& im = *impl_;
  std::vector<BpfTaskCount> out;
  std::vector<TaskValue> per_cpu(static_cast<std::size_t>(im.ncpus));
  TaskKey key{}, next{};
  const TaskKey* prev = nullptr;
  while (bpf_map_get_next_key(im.tasks_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(im.tasks_fd, &key, per_cpu.data()) != 0) continue;  // erased meanwhile
    BpfTaskCount t;
    t.tgid = static_cast<int>(key.tgid);
    t.reason = static_cast<int>(key.reason);
    for (const TaskValue& v : per_cpu) {
      t.count += static_cast<std::int64_t>(v.count);
      t.ns += static_cast<std::int64_t>(v.ns);
      t.inflicted_ns += static_cast<std::int64_t>(v.inflicted_ns);
      t.inflicted_other_ns += static_cast<std::int64_t>(v.inflicted_other_ns);
    }
    TaskName nm{};
    if (bpf_map_lookup_elem(im.names_fd, &key.tgid, &nm) == 0) {
      t.cgroup_id = nm.cgroup_id;
      t.comm.assign(nm.comm, strnlen(nm.comm, sizeof nm.comm));
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<BpfCpuTime> BpfFlushCounter::read_times() const {
  const Impl& im = *impl_;
  std::vector<BpfCpuTime> out(static_cast<std::size_t>(im.ncpus));
  std::vector<std::uint64_t> v(static_cast<std::size_t>(im.ncpus));
  // flush_count.bpf.c T_* slots 0..11 (4: not read).
  std::int64_t BpfCpuTime::*slots[] = {&BpfCpuTime::handler_ns,
                                       &BpfCpuTime::handler_irqs,
                                       &BpfCpuTime::wait_ns,
                                       &BpfCpuTime::waits,
                                       nullptr,
                                       &BpfCpuTime::wrong_ns,
                                       &BpfCpuTime::wrong_irqs,
                                       &BpfCpuTime::kflush_ns,
                                       &BpfCpuTime::kflush_irqs,
                                       &BpfCpuTime::kflush_initiated,
                                       &BpfCpuTime::kflush_queued,
                                       &BpfCpuTime::kflush_noirq};
  for (std::uint32_t i = 0; i < std::size(slots); ++i) {
    if (!slots[i] || bpf_map_lookup_elem(im.times_fd, &i, v.data()) != 0) continue;
    for (std::size_t cpu = 0; cpu < v.size(); ++cpu) out[cpu].*slots[i] = static_cast<std::int64_t>(v[cpu]);
  }
  return out;
}

const std::string& BpfFlushCounter::attach_point() const {
  return impl_->attach_point;
}

const std::string& BpfFlushCounter::wait_method() const {
  return impl_->wait_method;
}

const std::string& BpfFlushCounter::wait_unmeasured() const {
  return impl_->wait_unmeasured;
}

const std::string& BpfFlushCounter::unlinked() const {
  return impl_->unlinked;
}

bool BpfFlushCounter::csd_attached() const {
  return impl_->csd_attached;
}

const std::string& BpfFlushCounter::csd_unattached() const {
  return impl_->csd_unattached;
}

void BpfFlushCounter::erase(int tgid) {
  for (std::uint32_t reason : {1u, 4u, 8u, 9u}) {
    TaskKey k{static_cast<std::uint32_t>(tgid), reason};
    bpf_map_delete_elem(impl_->tasks_fd, &k);
  }
  const auto t = static_cast<std::uint32_t>(tgid);
  bpf_map_delete_elem(impl_->names_fd, &t);
}

std::string cgroup_v2_path_of_id(std::uint64_t id) {
  std::string root, mnt;
  for (const MountInfo& m : parse_mountinfo(read_file_or("/proc/self/mountinfo", "")))
    if (m.fstype == "cgroup2") {
      root = m.root;
      mnt = m.mountpoint;
      break;
    }
  if (mnt.empty()) return "";
  const int mfd = ::open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mfd < 0) return "";
  // A kernfs file handle is the 64-bit id (FILEID_KERNFS, 0xfe).
  alignas(file_handle) unsigned char buf[sizeof(file_handle) + sizeof id];
  auto* fh = reinterpret_cast<file_handle*>(buf);
  fh->handle_bytes = sizeof id;
  fh->handle_type = 0xfe;
  std::memcpy(fh->f_handle, &id, sizeof id);
  const int fd = ::open_by_handle_at(mfd, fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ::close(mfd);
  if (fd < 0) return "";
  char path[4096];
  const ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), path, sizeof path - 1);
  ::close(fd);
  if (n <= 0) return "";
  std::string p(path, static_cast<std::size_t>(n));
  if (p.rfind(mnt, 0) != 0) return "";
  p = p.substr(mnt.size());
  if (root != "/") p = root + p;
  return p.empty() ? "/" : p;
}

}  // namespace shootdown::sys
