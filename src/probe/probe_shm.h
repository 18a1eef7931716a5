// SPDX-License-Identifier: Apache-2.0
/* Shared memory between `shootdown probe` and the preloaded probe library
 * (src/probe/probe.c). Plain C, fixed-size fields: the tool (C++) and the
 * library (C) both include it.
 *
 * The tool creates a memfd (mode 0600, size sealed), sizes it to
 * sd_probe_layout(ncpus, nslots, capacity) (version 3: the CPU list, the
 * holders, the slots and the rings follow the header at the offsets it
 * computes, so any number of probe CPUs fits), fills the config and passes
 * the fd number in SHOOTDOWN_PROBE_FD (inherited, not close-on-exec). The
 * library recomputes the layout from ncpus, nslots and capacity and refuses a
 * region whose offsets or size disagree.
 *
 * Every process image of the target that loads the library claims a slot
 * (CAS pid 0 -> getpid()): the command itself, each image after an exec (a
 * wrapper such as env, taskset or nice execs the real program; the new image
 * loads the library again), each child that execs, and each child of fork()
 * (pthread_atfork child handler). A probe CPU (cpus[k]) is held by one slot
 * at a time (holder[k]); a newcomer gets, in order:
 *   - the CPU of its own previous image (exec: the old slot becomes EXECED),
 *   - a free CPU of the list,
 *   - its parent's CPU when the parent runs nothing but its main thread and
 *     the probe (a shell or a wrapper waiting for its child): the parent's
 *     probe stops (stop = SD_PROBE_STOP_HANDOVER),
 *   - none: state SD_PROBE_NO_CPU (counted, reported, not measured).
 * The tool frees the CPU of a slot whose probe thread is gone (process
 * exited, killed, exec'd into an image without the library).
 *
 * Each slot has its own ring of `capacity` entries: the fenced TSC value at
 * the end of each timed batch; entry i is at ring[i % capacity]. Single
 * producer (the slot's probe thread), single consumer (tool): the probe
 * publishes `count` with release order and never overwrites entries the tool
 * has not consumed (`consumed`); when the ring is full it stops measuring and
 * sets SD_PROBE_OVERRUN (gapless or nothing). */
#ifndef SHOOTDOWN_PROBE_SHM_H
#define SHOOTDOWN_PROBE_SHM_H

#include <stdint.h>

#define SD_PROBE_MAGIC 0x53445052u /* "SDPR" */
#define SD_PROBE_VERSION 3u
#define SD_PROBE_ENV_FD "SHOOTDOWN_PROBE_FD"
/* Slots besides one per probe CPU: wrappers, exec'd images, processes that
 * found no CPU free. */
#define SD_PROBE_SPARE_SLOTS 16
/* CONFIG_NR_CPUS of Debian's amd64 kernels: the most CPUs a list can name. */
#define SD_PROBE_MAX_CPUS 8192

enum sd_probe_state {
  SD_PROBE_INIT = 0, /* unclaimed, or claimed and not yet started */
  SD_PROBE_PREPARING = 1,
  SD_PROBE_RUNNING = 2, /* start_tsc valid, samples flowing */
  SD_PROBE_DONE = 3,    /* stopped (see stop) or at exit */
  SD_PROBE_OVERRUN = 4, /* ring full: measurement ended early */
  SD_PROBE_FAILED = 5,  /* error[] says why */
  SD_PROBE_EXECED = 6,  /* the process exec'd: its next image has its own slot */
  SD_PROBE_NO_CPU = 7,  /* no probe CPU was free for this process */
  SD_PROBE_GONE = 8     /* the tool found the probe thread gone (exit, kill, exec) */
};

enum sd_probe_stop {
  SD_PROBE_STOP_NONE = 0,
  SD_PROBE_STOP_TOOL = 1,    /* the tool ends the measurement */
  SD_PROBE_STOP_HANDOVER = 2 /* a child took this CPU */
};

struct sd_probe_slot {
  int32_t pid;  /* claimed by (CAS 0 -> pid) */
  int32_t ppid; /* its parent at claim time */
  uint32_t state;
  int32_t tid;   /* probe thread id */
  int32_t cpu;   /* probe CPU, -1 none */
  uint32_t stop; /* enum sd_probe_stop: tool or a child -> probe */
  uint32_t mlocked;
  int32_t error_errno;
  uint32_t seq;       /* claim order (0 = the command's first image) */
  int32_t successor;  /* slot that took this slot's CPU (handover, exec), -1 none */
  uint64_t start_tsc; /* timestamp before the first batch */
  uint64_t end_tsc;   /* probe thread's last timestamp (0 when it did not stop by itself) */
  uint64_t count;     /* samples published */
  uint64_t consumed;  /* tool: samples copied out */
  char comm[16];      /* PR_GET_NAME at claim: the program's name after exec */
  char error[128];
};

struct sd_probe_shm {
  /* config (tool) */
  uint32_t magic;
  uint32_t version;
  uint32_t batch_pages; /* 4 KiB pages written per timed batch */
  uint32_t sched_fifo;  /* 1: probe threads run SCHED_FIFO 1 (--rt) */
  uint64_t arena_bytes; /* private arena per probe, mlocked when allowed */
  uint64_t capacity;    /* ring entries per slot */
  uint32_t ncpus;       /* probe CPUs (1 .. SD_PROBE_MAX_CPUS) */
  uint32_t nslots;      /* ncpus + SD_PROBE_SPARE_SLOTS */
  /* shared state */
  uint32_t next_seq;  /* claim order counter */
  uint32_t claimed;   /* processes that claimed a slot */
  uint32_t unslotted; /* processes that found every slot taken */
  uint32_t reserved;
  /* where the arrays are: byte offsets from the start (sd_probe_layout) */
  uint64_t cpus_off;   /* int32_t cpus[ncpus]: the probe CPUs */
  uint64_t holder_off; /* int32_t holder[ncpus]: slot index holding cpus[k], -1 free */
  uint64_t slots_off;  /* struct sd_probe_slot slots[nslots] */
  uint64_t rings_off;  /* nslots x capacity uint64_t entries, page-aligned */
};

/* Fills the offsets of `s` (when not NULL) for this many CPUs, slots and
 * ring entries, and returns the region's size in bytes (0: too large). */
static inline uint64_t sd_probe_layout(struct sd_probe_shm* s, uint32_t ncpus, uint32_t nslots, uint64_t capacity) {
  if (ncpus < 1 || ncpus > SD_PROBE_MAX_CPUS || nslots < 1 || nslots > SD_PROBE_MAX_CPUS + SD_PROBE_SPARE_SLOTS ||
      capacity < 1 || capacity > ((uint64_t)1 << 40) / nslots)
    return 0;
  const uint64_t arr = ((uint64_t)ncpus * 4 + 7) & ~(uint64_t)7;
  const uint64_t cpus_off = sizeof(struct sd_probe_shm);
  const uint64_t holder_off = cpus_off + arr;
  const uint64_t slots_off = holder_off + arr;
  const uint64_t rings_off = (slots_off + (uint64_t)nslots * sizeof(struct sd_probe_slot) + 4095) & ~(uint64_t)4095;
  if (s) {
    s->cpus_off = cpus_off;
    s->holder_off = holder_off;
    s->slots_off = slots_off;
    s->rings_off = rings_off;
  }
  return rings_off + (uint64_t)nslots * capacity * 8;
}

static inline int32_t* sd_probe_cpus(struct sd_probe_shm* s) {
  return (int32_t*)(void*)((char*)s + s->cpus_off);
}
static inline int32_t* sd_probe_holders(struct sd_probe_shm* s) {
  return (int32_t*)(void*)((char*)s + s->holder_off);
}
static inline struct sd_probe_slot* sd_probe_slots(struct sd_probe_shm* s) {
  return (struct sd_probe_slot*)(void*)((char*)s + s->slots_off);
}
static inline uint64_t* sd_probe_ring(struct sd_probe_shm* s, int slot) {
  return (uint64_t*)(void*)((char*)s + s->rings_off) + (uint64_t)slot * s->capacity;
}

#endif
