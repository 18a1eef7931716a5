// SPDX-License-Identifier: Apache-2.0
/* LD_PRELOAD probe for `shootdown probe`: one pinned victim thread inside each
 * process image of the target, timing its own page writes (the run victim's
 * scheme: fenced TSC after every batch, gapless) into its slot's ring of a
 * shared-memory region (probe_shm.h says how slots and probe CPUs are shared
 * between the images a wrapper execs and the children a process forks).
 *
 * Only a thread of the same mm feels the target's TLB shootdowns, hence a
 * thread inside it. What it does NOT do, on purpose: interpose any function
 * (no malloc/free/mmap wrappers), install signal handlers (every signal is
 * blocked in the probe thread, so the target's handlers keep running on its
 * own threads), allocate from the target's heap, or free its arena (munmap
 * would itself shoot down the target's threads; the arena lives until exit).
 * It keeps SHOOTDOWN_PROBE_FD open so the images it execs and the children it
 * starts find the region. Its arena is MADV_DONTFORK: a fork() of the target
 * does not make the probe's pages copy-on-write (no faults in the timed loop).
 * Plain C, no libstdc++: nothing to initialize before the target's own
 * constructors. Without SHOOTDOWN_PROBE_FD in the environment it does nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "probe_shm.h"

/* The layout is shared with the tool and with tests/cli/probe_env.sh. */
_Static_assert(offsetof(struct sd_probe_shm, claimed) == 44, "probe_shm layout");
_Static_assert(offsetof(struct sd_probe_shm, cpus_off) == 56, "probe_shm layout");
_Static_assert(sizeof(struct sd_probe_slot) == 216, "probe_slot layout");
_Static_assert(sizeof(struct sd_probe_shm) == 88, "probe_shm size");

static struct sd_probe_shm* g_shm;
static int g_slot = -1;
static pthread_t g_thread;
static int g_started;

static inline uint64_t tsc_fenced(void) {
  _mm_lfence();
  uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

static void fail(struct sd_probe_slot* sl, const char* what, int err) {
  sl->error_errno = err;
  snprintf(sl->error, sizeof sl->error, "%s: %s", what, strerror(err));
  __atomic_store_n(&sl->state, SD_PROBE_FAILED, __ATOMIC_RELEASE);
}

static uint32_t load_state(const struct sd_probe_slot* sl) {
  return __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void* probe_main(void* arg) {
  struct sd_probe_shm* s = g_shm;
  const int idx = (int)(intptr_t)arg;
  struct sd_probe_slot* sl = &sd_probe_slots(s)[idx];
  __atomic_store_n(&sl->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((size_t)sl->cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    fail(sl, "pinning the probe thread", errno ? errno : EINVAL);
    return NULL;
  }
  pthread_setname_np(pthread_self(), "shootdown-probe");
  if (s->sched_fifo) {
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    sp.sched_priority = 1;
    const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc != 0) {
      fail(sl, "SCHED_FIFO for the probe thread (--rt)", rc);
      return NULL;
    }
  }
  const size_t page = 4096;
  const size_t len = (size_t)s->arena_bytes;
  const size_t pages = len / page;
  /* Own arena: MAP_POPULATE faults it in now, so the loop takes no faults. */
  char* arena = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (arena == MAP_FAILED) {
    fail(sl, "mapping the probe arena", errno);
    return NULL;
  }
  /* Not copied into a child of fork(): the target forking must not turn the
   * probe's pages copy-on-write (that would time our own faults). */
  (void)madvise(arena, len, MADV_DONTFORK);
  uint64_t* ring = sd_probe_ring(s, idx);
  const size_t ring_bytes = (size_t)s->capacity * sizeof(uint64_t);
  sl->mlocked = mlock(arena, len) == 0 && mlock(ring, ring_bytes) == 0;
  /* Touch everything once: the ring's pages and the arena's TLB entries. */
  for (size_t i = 0; i < ring_bytes; i += page) ((volatile char*)ring)[i] = 0;
  for (size_t i = 0; i < pages; ++i) ((volatile char*)arena)[i * page] = 1;
  /* A parent handing its CPU over stops at its next batch: wait for it
   * (bounded) so two probes never time each other. */
  struct sd_probe_slot* slots = sd_probe_slots(s);
  for (int k = 0; k < (int)s->nslots; ++k) {
    if (k == idx || slots[k].successor != idx) continue;
    for (int w = 0; w < 200 && load_state(&slots[k]) == SD_PROBE_RUNNING; ++w) sleep_ms(1);
  }
  const uint64_t cap = s->capacity;
  const size_t batch = s->batch_pages ? s->batch_pages : 1;
  size_t cursor = 0;
  uint64_t n = 0;
  uint32_t end_state = SD_PROBE_DONE;
  uint64_t now = tsc_fenced();
  sl->start_tsc = now;
  __atomic_store_n(&sl->state, SD_PROBE_RUNNING, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&sl->stop, __ATOMIC_RELAXED)) {
    for (size_t b = 0; b < batch; ++b) {
      ((volatile char*)arena)[cursor * page]++;
      if (++cursor == pages) cursor = 0;
    }
    now = tsc_fenced();
    if (n - __atomic_load_n(&sl->consumed, __ATOMIC_ACQUIRE) >= cap) {
      end_state = SD_PROBE_OVERRUN;
      break;
    }
    ring[n % cap] = now;
    ++n;
    __atomic_store_n(&sl->count, n, __ATOMIC_RELEASE);
  }
  sl->end_tsc = now;
  __atomic_store_n(&sl->state, end_state, __ATOMIC_RELEASE);
  return NULL; /* the arena stays mapped: see the header comment */
}

/* Threads of process `pid` from /proc/PID/status (0 when unknown). */
static int threads_of(pid_t pid) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t r = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (r <= 0) return 0;
  buf[r] = 0;
  const char* t = strstr(buf, "\nThreads:");
  return t ? atoi(t + 9) : 0;
}

static int live(uint32_t st) {
  return st == SD_PROBE_INIT || st == SD_PROBE_PREPARING || st == SD_PROBE_RUNNING;
}

/* Claim a slot for this process image and, if a probe CPU is to be had,
 * start its probe thread (see probe_shm.h for the rules). */
static void start_probe(void) {
  struct sd_probe_shm* s = g_shm;
  const int32_t pid = (int32_t)getpid(), ppid = (int32_t)getppid();
  const int nslots = (int)s->nslots, ncpus = (int)s->ncpus;
  struct sd_probe_slot* slots = sd_probe_slots(s);
  int32_t* holder = sd_probe_holders(s);
  /* An earlier image of this pid exec'd into us: its slot still looks alive,
   * or the tool already found its probe thread gone (exec ends every thread
   * but the caller before the new image's constructors run). */
  int prev = -1;
  for (int k = 0; k < nslots; ++k) {
    const uint32_t st = load_state(&slots[k]);
    if (__atomic_load_n(&slots[k].pid, __ATOMIC_ACQUIRE) == pid && slots[k].successor < 0 &&
        (live(st) || st == SD_PROBE_GONE))
      prev = k;
  }
  int idx = -1;
  for (int k = 0; k < nslots && idx < 0; ++k) {
    int32_t zero = 0;
    if (__atomic_compare_exchange_n(&slots[k].pid, &zero, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) idx = k;
  }
  if (prev >= 0) {
    slots[prev].successor = idx;
    __atomic_store_n(&slots[prev].state, SD_PROBE_EXECED, __ATOMIC_RELEASE);
  }
  if (idx < 0) {
    __atomic_add_fetch(&s->unslotted, 1, __ATOMIC_ACQ_REL);
    /* Release the CPU of the exec'd image: the tool may give it to none. */
    for (int c = 0; prev >= 0 && c < ncpus; ++c) {
      int32_t h = prev;
      __atomic_compare_exchange_n(&holder[c], &h, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    return;
  }
  struct sd_probe_slot* sl = &sd_probe_slots(s)[idx];
  g_slot = idx;
  sl->ppid = ppid;
  sl->successor = -1;
  sl->cpu = -1;
  sl->seq = __atomic_fetch_add(&s->next_seq, 1, __ATOMIC_ACQ_REL);
  prctl(PR_GET_NAME, sl->comm, 0, 0, 0);
  sl->comm[sizeof sl->comm - 1] = 0;
  __atomic_add_fetch(&s->claimed, 1, __ATOMIC_ACQ_REL);

  int cpu = -1;
  for (int c = 0; c < ncpus && cpu < 0 && prev >= 0; ++c) {
    int32_t h = prev;
    if (__atomic_compare_exchange_n(&holder[c], &h, idx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) cpu = c;
  }
  for (int c = 0; c < ncpus && cpu < 0; ++c) {
    int32_t h = -1;
    if (__atomic_compare_exchange_n(&holder[c], &h, idx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) cpu = c;
  }
  for (int c = 0; c < ncpus && cpu < 0; ++c) {
    int32_t h = __atomic_load_n(&holder[c], __ATOMIC_ACQUIRE);
    if (h < 0 || h >= nslots || slots[h].pid != ppid || threads_of(ppid) > 2) continue;
    /* The parent runs its main thread and its probe only (a shell, a
     * wrapper waiting for us): its probe hands this CPU over. */
    if (__atomic_compare_exchange_n(&holder[c], &h, idx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      slots[h].successor = idx;
      __atomic_store_n(&slots[h].stop, SD_PROBE_STOP_HANDOVER, __ATOMIC_RELEASE);
      cpu = c;
    }
  }
  if (cpu < 0) {
    __atomic_store_n(&sl->state, SD_PROBE_NO_CPU, __ATOMIC_RELEASE);
    return;
  }
  sl->cpu = sd_probe_cpus(s)[cpu];
  __atomic_store_n(&sl->state, SD_PROBE_PREPARING, __ATOMIC_RELEASE);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread inherits "everything blocked" */
  const int rc = pthread_create(&g_thread, NULL, probe_main, (void*)(intptr_t)idx);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    fail(sl, "starting the probe thread", rc);
    return;
  }
  g_started = 1;
}

/* fork() without exec: the child is a process of the target with its own mm
 * and no probe thread (only the forking thread survives): give it one. */
static void sd_probe_atfork_child(void) {
  if (!g_shm) return;
  g_started = 0;
  g_slot = -1;
  start_probe();
}

__attribute__((constructor)) static void sd_probe_init(void) {
  const char* fds = getenv(SD_PROBE_ENV_FD);
  if (!fds || !*fds) return;
  char* end = NULL;
  const long fd = strtol(fds, &end, 10);
  if (!end || *end || fd < 0 || fd > 1 << 20) return;
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
  struct sd_probe_shm layout = *s;
  const uint64_t need = sd_probe_layout(&layout, s->ncpus, s->nslots, s->capacity);
  if (s->magic != SD_PROBE_MAGIC || s->version != SD_PROBE_VERSION || need == 0 || need > (uint64_t)st.st_size ||
      s->nslots != s->ncpus + SD_PROBE_SPARE_SLOTS || layout.cpus_off != s->cpus_off ||
      layout.holder_off != s->holder_off || layout.slots_off != s->slots_off || layout.rings_off != s->rings_off) {
    /* Not ours. The unmap is of a page never touched by another thread: no shootdown. */
    munmap(p, (size_t)st.st_size);
    return;
  }
  g_shm = s;
  start_probe();
  pthread_atfork(NULL, NULL, sd_probe_atfork_child);
}

/* Normal exit (exit() or return from main): stop and join so the last
 * samples are published before the process goes. */
__attribute__((destructor)) static void sd_probe_fini(void) {
  if (!g_started || !g_shm || g_slot < 0) return;
  struct sd_probe_slot* sl = &sd_probe_slots(g_shm)[g_slot];
  uint32_t none = SD_PROBE_STOP_NONE;
  __atomic_compare_exchange_n(&sl->stop, &none, SD_PROBE_STOP_TOOL, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  pthread_join(g_thread, NULL);
  g_started = 0;
  /* The CPU is free for the next process at once. */
  for (int c = 0; c < (int)g_shm->ncpus; ++c) {
    int32_t h = g_slot;
    __atomic_compare_exchange_n(&sd_probe_holders(g_shm)[c], &h, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
}
