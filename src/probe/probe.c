/* LD_PRELOAD probe for `shootdown probe`: one pinned victim thread inside the
 * target process, timing its own page writes (the run victim's scheme:
 * fenced TSC after every batch, gapless) into a shared-memory ring.
 *
 * Only a thread of the same mm feels the target's TLB shootdowns, hence a
 * thread inside it. What it does NOT do, on purpose: interpose any function
 * (no malloc/free/mmap wrappers), install signal handlers (every signal is
 * blocked in the probe thread, so the target's handlers keep running on its
 * own threads), allocate from the target's heap, or free its arena (munmap
 * would itself shoot down the target's threads; the arena lives until exit).
 * Plain C, no libstdc++: nothing to initialize before the target's own
 * constructors. Without SHOOTDOWN_PROBE_FD in the environment it does nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include "probe_shm.h"

static struct sd_probe_shm* g_shm;
static pthread_t g_thread;
static int g_started;

static inline uint64_t tsc_fenced(void) {
  _mm_lfence();
  uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

static void fail(struct sd_probe_shm* s, const char* what, int err) {
  s->error_errno = err;
  snprintf(s->error, sizeof s->error, "%s: %s", what, strerror(err));
  __atomic_store_n(&s->state, SD_PROBE_FAILED, __ATOMIC_RELEASE);
}

static void* probe_main(void* arg) {
  struct sd_probe_shm* s = arg;
  __atomic_store_n(&s->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((size_t)s->cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    fail(s, "pinning the probe thread", errno ? errno : EINVAL);
    return NULL;
  }
  pthread_setname_np(pthread_self(), "shootdown-probe");
  if (s->sched_fifo) {
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    sp.sched_priority = 1;
    const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc != 0) {
      fail(s, "SCHED_FIFO for the probe thread (--rt)", rc);
      return NULL;
    }
  }
  const size_t page = 4096;
  const size_t len = (size_t)s->arena_bytes;
  const size_t pages = len / page;
  /* Own arena: MAP_POPULATE faults it in now, so the loop takes no faults. */
  char* arena = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (arena == MAP_FAILED) {
    fail(s, "mapping the probe arena", errno);
    return NULL;
  }
  uint64_t* ring = sd_probe_ring(s);
  const size_t ring_bytes = (size_t)s->capacity * sizeof(uint64_t);
  s->mlocked = mlock(arena, len) == 0 && mlock(ring, ring_bytes) == 0;
  /* Touch everything once: the ring's pages and the arena's TLB entries. */
  for (size_t i = 0; i < ring_bytes; i += page) ((volatile char*)ring)[i] = 0;
  for (size_t i = 0; i < pages; ++i) ((volatile char*)arena)[i * page] = 1;
  const uint64_t cap = s->capacity;
  const size_t batch = s->batch_pages ? s->batch_pages : 1;
  size_t cursor = 0;
  uint64_t n = 0;
  uint32_t end_state = SD_PROBE_DONE;
  uint64_t prev = tsc_fenced();
  s->start_tsc = prev;
  __atomic_store_n(&s->state, SD_PROBE_RUNNING, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
    for (size_t b = 0; b < batch; ++b) {
      ((volatile char*)arena)[cursor * page]++;
      if (++cursor == pages) cursor = 0;
    }
    const uint64_t now = tsc_fenced();
    if (n - __atomic_load_n(&s->consumed, __ATOMIC_ACQUIRE) >= cap) {
      end_state = SD_PROBE_OVERRUN;
      break;
    }
    ring[n % cap] = now;
    ++n;
    __atomic_store_n(&s->count, n, __ATOMIC_RELEASE);
    prev = now;
  }
  (void)prev;
  __atomic_store_n(&s->state, end_state, __ATOMIC_RELEASE);
  return NULL; /* the arena stays mapped: see the header comment */
}

__attribute__((constructor)) static void sd_probe_init(void) {
  const char* fds = getenv(SD_PROBE_ENV_FD);
  if (!fds || !*fds) return;
  char* end = NULL;
  const long fd = strtol(fds, &end, 10);
  if (!end || *end || fd < 0) return;
  struct stat st;
  if (fstat((int)fd, &st) != 0 || (size_t)st.st_size < sizeof(struct sd_probe_shm)) return;
  /* Only what the tool set up: a memfd (sealable) of this user, mode 0600,
   * whose size is sealed (it cannot shrink under the probe: no SIGBUS).
   * A file, a pipe, someone else's or a group/world-accessible fd is refused. */
  const int seals = fcntl((int)fd, F_GET_SEALS);
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0 || seals < 0 ||
      (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
    return;
  void* p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
  if (p == MAP_FAILED) return;
  struct sd_probe_shm* s = p;
  int32_t zero = 0;
  if (s->magic != SD_PROBE_MAGIC || s->version != SD_PROBE_VERSION ||
      sizeof(struct sd_probe_shm) + s->capacity * sizeof(uint64_t) > (uint64_t)st.st_size ||
      !__atomic_compare_exchange_n(&s->claimed, &zero, (int32_t)getpid(), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    /* Not ours (a child of the target that inherited the environment). The
     * unmap is of a page never touched by another thread: no shootdown. */
    munmap(p, (size_t)st.st_size);
    return;
  }
  close((int)fd); /* the mapping keeps the memfd alive; the target's fd table is its own again */
  g_shm = s;
  __atomic_store_n(&s->state, SD_PROBE_PREPARING, __ATOMIC_RELEASE);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread inherits "everything blocked" */
  const int rc = pthread_create(&g_thread, NULL, probe_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    fail(s, "starting the probe thread", rc);
    return;
  }
  g_started = 1;
}

/* Normal exit (exit() or return from main): stop and join so the last
 * samples are published before the process goes. */
__attribute__((destructor)) static void sd_probe_fini(void) {
  if (!g_started || !g_shm) return;
  __atomic_store_n(&g_shm->stop, 1, __ATOMIC_RELAXED);
  pthread_join(g_thread, NULL);
  g_started = 0;
}
