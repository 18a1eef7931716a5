// SPDX-License-Identifier: Apache-2.0
#include "experiment/allocator_arm.hpp"

#include <algorithm>
#include <cstring>
#include <gnu/libc-version.h>
#include <malloc.h>

#include "core/units.hpp"
#include "sys/signals.hpp"

namespace shootdown::exp {

// Entry points of one allocator. glibc: the process's own functions; the
// others: looked up in the privately loaded library (its malloc is not
// the process's malloc).
struct AllocatorChurn::Api {
  void* (*malloc)(std::size_t) = nullptr;
  void (*free)(void*) = nullptr;
  int (*mallctl)(const char*, void*, std::size_t*, void*, std::size_t) = nullptr;  // jemalloc
  void (*tc_release)() = nullptr;                                                  // tcmalloc
  int (*tc_property)(const char*, std::size_t*) = nullptr;
  const char* (*tc_version)(int*, int*, const char**) = nullptr;
  void (*mi_collect)(bool) = nullptr;  // mimalloc
  int (*mi_version)() = nullptr;
};

namespace {

struct Lib {
  const char* soname;
  const char* package;  // the Debian package that ships it
};

Lib library_of(ReleaseStrategy s) {
  switch (s) {
    case ReleaseStrategy::kJemalloc:
      return {"libjemalloc.so.2", "libjemalloc2"};
    case ReleaseStrategy::kTcmalloc:
      return {"libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"};
    case ReleaseStrategy::kMimalloc:
      return {"libmimalloc.so.2", "libmimalloc2.0"};
    default:
      return {"", ""};
  }
}

// Looks up entry points in turn, up to the first one missing, which is the
// error: Lookup(lib)("malloc", &a.malloc)("free", &a.free).status().
class Lookup {
 public:
  explicit Lookup(const sys::SharedLibrary& lib) : lib_(lib) {}
  template <typename F>
  Lookup& operator()(const char* name, F* out) {
    if (!missing_.empty()) return *this;
    *out = reinterpret_cast<F>(lib_.symbol(name));
    if (*out == nullptr) missing_ = lib_.path() + " has no " + name;
    return *this;
  }
  Status status() const { return missing_.empty() ? Status(Ok{}) : Status(Error{missing_}); }

 private:
  const sys::SharedLibrary& lib_;
  std::string missing_;
};

int mallopt_param(const std::string& name) {
  if (name == "M_MMAP_THRESHOLD") return M_MMAP_THRESHOLD;
  if (name == "M_TRIM_THRESHOLD") return M_TRIM_THRESHOLD;
  if (name == "M_TOP_PAD") return M_TOP_PAD;
  if (name == "M_ARENA_MAX") return M_ARENA_MAX;
  return M_MMAP_MAX;
}

template <typename T>
bool jectl(const AllocatorChurn::Api& a, const char* name, T* out) {
  std::size_t len = sizeof(T);
  return a.mallctl(name, out, &len, nullptr, 0) == 0;
}

}  // namespace

AllocatorChurn::AllocatorChurn(ReleaseStrategy s, const Plan& plan)
    : strategy_(s), purge_(plan.allocator_purge), plan_(make_churn(plan.chunk_size)), api_(std::make_unique<Api>()) {
  freed_ = plan_.free_order;
  std::sort(freed_.begin(), freed_.end());
  blocks_.assign(plan_.sizes.size(), nullptr);
  report_.name = std::string(strategy_name(s));
  report_.conf = plan.allocator_conf;
  report_.blocks = static_cast<std::int64_t>(plan_.sizes.size());
  report_.live_bytes = plan_.live_bytes;
  report_.freed_bytes = plan_.freed_bytes;
}

AllocatorChurn::~AllocatorChurn() {
  // What is still allocated goes back to its allocator (not to glibc's free).
  if (api_ && api_->free)
    for (void* p : blocks_)
      if (p) api_->free(p);
}

Expected<std::unique_ptr<AllocatorChurn>> AllocatorChurn::open(ReleaseStrategy s, const Plan& plan) {
  auto conf = parse_allocator_conf(s, plan.allocator_conf);
  if (!conf) return Error{conf.error()};
  const std::vector<AllocatorSetting>& settings = *conf;
  std::unique_ptr<AllocatorChurn> c(new AllocatorChurn(s, plan));
  Api& a = *c->api_;
  AllocatorReport& r = c->report_;
  if (s == ReleaseStrategy::kGlibcMalloc) {
    for (const auto& set : settings)
      if (mallopt(mallopt_param(set.name), static_cast<int>(std::stoll(set.value))) != 1)
        return Error{"mallopt(" + set.name + ", " + set.value + ") refused"};
    a.malloc = &::malloc;
    a.free = &::free;
    r.version = std::string("glibc ") + gnu_get_libc_version();
    r.settings = settings.empty() ? "glibc defaults (M_MMAP_THRESHOLD dynamic from 128 KiB, M_TRIM_THRESHOLD 128 KiB)"
                                  : "mallopt " + plan.allocator_conf;
    r.purge_call = c->purge_ ? "malloc_trim(0)" : "";
    return c;
  }

  // The settings travel the allocator's own way (its environment variables,
  // read when it initializes): set for the load and the first call, then
  // restored. Unset ones are unset, so the user's environment does not
  // change an arm behind its back.
  const Lib lib = library_of(s);
  std::vector<std::unique_ptr<sys::ScopedEnv>> env;
  if (s == ReleaseStrategy::kJemalloc) {
    env.push_back(std::make_unique<sys::ScopedEnv>(
        "MALLOC_CONF", plan.allocator_conf.empty() ? std::nullopt : std::optional<std::string>(plan.allocator_conf)));
  } else {
    for (const auto& set : settings) env.push_back(std::make_unique<sys::ScopedEnv>(set.name, set.value));
  }
  auto opened = sys::SharedLibrary::open(lib.soname);
  if (!opened) {
    const std::string& lwhy = opened.error();
    std::string error = std::string(strategy_name(s)) + " arm: cannot load " + lib.soname + " (" + lwhy + ")";
    if (lwhy.find("No such file") != std::string::npos || lwhy.find("cannot open") != std::string::npos)
      error += "; install Debian's " + std::string(lib.package) + " (scripts/install-deps.sh does)";
    return Error{error};
  }
  c->lib_ = std::move(*opened);
  r.library = c->lib_->path();
  if (Status resolved = c->resolve_api(); !resolved) return Error{resolved.error()};
  // The first call initializes the allocator while its settings are set.
  a.free(a.malloc(64));
  env.clear();
  c->describe(plan);
  return c;
}

Status AllocatorChurn::resolve_api() {
  const sys::SharedLibrary& l = *lib_;
  Api& a = *api_;
  switch (strategy_) {
    case ReleaseStrategy::kJemalloc:
      return Lookup(l)("malloc", &a.malloc)("free", &a.free)("mallctl", &a.mallctl).status();
    case ReleaseStrategy::kTcmalloc:
      return Lookup(l)("tc_malloc", &a.malloc)("tc_free", &a.free)("MallocExtension_ReleaseFreeMemory", &a.tc_release)(
                 "MallocExtension_GetNumericProperty", &a.tc_property)("tc_version", &a.tc_version)
          .status();
    default:
      return Lookup(l)("mi_malloc", &a.malloc)("mi_free", &a.free)("mi_collect", &a.mi_collect)("mi_version",
                                                                                                &a.mi_version)
          .status();
  }
}

void AllocatorChurn::describe(const Plan& plan) {
  const Api& a = *api_;
  AllocatorReport& r = report_;
  switch (strategy_) {
    case ReleaseStrategy::kJemalloc: {
      const char* v = nullptr;
      r.version = jectl(a, "version", &v) && v ? std::string("jemalloc ") + v : "jemalloc";
      ssize_t dirty = 0, muzzy = 0;
      bool bg = false, retain = false;
      unsigned narenas = 0;
      r.settings = "dirty_decay_ms:" + (jectl(a, "opt.dirty_decay_ms", &dirty) ? std::to_string(dirty) : "?") +
                   ",muzzy_decay_ms:" + (jectl(a, "opt.muzzy_decay_ms", &muzzy) ? std::to_string(muzzy) : "?") +
                   ",background_thread:" + (jectl(a, "opt.background_thread", &bg) ? (bg ? "true" : "false") : "?") +
                   ",retain:" + (jectl(a, "opt.retain", &retain) ? (retain ? "true" : "false") : "?") +
                   ",narenas:" + (jectl(a, "opt.narenas", &narenas) ? std::to_string(narenas) : "?");
      r.purge_call = purge_ ? "mallctl(\"arena.4096.purge\")" : "";
      break;
    }
    case ReleaseStrategy::kTcmalloc: {
      int major = 0, minor = 0;
      const char* patch = nullptr;
      const char* v = a.tc_version(&major, &minor, &patch);
      r.version = v ? v : "gperftools " + std::to_string(major) + "." + std::to_string(minor);
      std::size_t aggressive = 0;
      r.settings = "tcmalloc.aggressive_memory_decommit=" +
                   (a.tc_property("tcmalloc.aggressive_memory_decommit", &aggressive) ? std::to_string(aggressive)
                                                                                      : std::string("?"));
      r.settings += plan.allocator_conf.empty() ? ", TCMALLOC_RELEASE_RATE default (1.0)" : ", " + plan.allocator_conf;
      r.purge_call = purge_ ? "MallocExtension_ReleaseFreeMemory()" : "";
      break;
    }
    default: {
      const int v = a.mi_version();
      r.version =
          "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
      r.settings = plan.allocator_conf.empty() ? "mimalloc defaults" : plan.allocator_conf;
      r.purge_call = purge_ ? "mi_collect(true)" : "";
      break;
    }
  }
}

Status AllocatorChurn::fill(const std::vector<std::uint32_t>& which) {
  std::size_t n = 0;
  for (std::uint32_t i : which) {
    const std::size_t size = plan_.sizes[i];
    void* p = api_->malloc(size);
    if (p == nullptr) return Error{report_.name + ": malloc(" + std::to_string(size) + ") returned NULL"};
    std::memset(p, 0x5a, size);  // resident, as a live object's memory is
    blocks_[i] = p;
    if (++n % 4096 == 0 && sys::StopSignals::pending()) return Error{"interrupted while building the live set"};
  }
  return Ok{};
}

Status AllocatorChurn::build() {
  std::vector<std::uint32_t> all(plan_.sizes.size());
  for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  return fill(all);
}

Status AllocatorChurn::release() {
  for (std::uint32_t i : plan_.free_order) {
    api_->free(blocks_[i]);
    blocks_[i] = nullptr;
  }
  if (!purge_) return Ok{};
  switch (strategy_) {
    case ReleaseStrategy::kGlibcMalloc:
      malloc_trim(0);
      return Ok{};
    case ReleaseStrategy::kJemalloc:
      if (api_->mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) != 0)
        return Error{"mallctl(\"arena.4096.purge\") failed"};
      return Ok{};
    case ReleaseStrategy::kTcmalloc:
      api_->tc_release();
      return Ok{};
    default:
      api_->mi_collect(true);
      return Ok{};
  }
}

Status AllocatorChurn::rearm() {
  return fill(freed_);
}

void AllocatorChurn::settle() {
  AllocatorReport& r = report_;
  switch (strategy_) {
    case ReleaseStrategy::kGlibcMalloc: {
      const struct mallinfo2 mi = mallinfo2();
      r.allocator_free_bytes = static_cast<std::int64_t>(mi.fordblks);
      r.allocator_free_source = "mallinfo2().fordblks (free bytes in malloc's arenas, resident or not)";
      break;
    }
    case ReleaseStrategy::kJemalloc: {
      std::uint64_t epoch = 1;
      std::size_t len = sizeof epoch;
      api_->mallctl("epoch", &epoch, &len, &epoch, sizeof epoch);
      std::size_t resident = 0, allocated = 0;
      if (jectl(*api_, "stats.resident", &resident) && jectl(*api_, "stats.allocated", &allocated)) {
        r.allocator_free_bytes = static_cast<std::int64_t>(resident) - static_cast<std::int64_t>(allocated);
        r.allocator_free_source = "stats.resident - stats.allocated (resident pages not in use: dirty, metadata)";
      }
      break;
    }
    case ReleaseStrategy::kTcmalloc: {
      std::int64_t sum = 0;
      bool ok = true;
      for (const char* name : {"tcmalloc.pageheap_free_bytes", "tcmalloc.central_cache_free_bytes",
                               "tcmalloc.transfer_cache_free_bytes", "tcmalloc.thread_cache_free_bytes"}) {
        std::size_t v = 0;
        ok = ok && api_->tc_property(name, &v) != 0;
        sum += static_cast<std::int64_t>(v);
      }
      if (ok) {
        r.allocator_free_bytes = sum;
        r.allocator_free_source = "tcmalloc pageheap + central + transfer + thread cache free bytes";
      }
      break;
    }
    default:
      r.allocator_free_source = "mimalloc's API exposes no per-heap free-bytes count";
      break;
  }
}

}  // namespace shootdown::exp
