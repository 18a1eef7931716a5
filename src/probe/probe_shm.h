/* Shared memory between `shootdown probe` and the preloaded probe library
 * (src/probe/probe.c). Plain C, fixed-size fields: the tool (C++) and the
 * library (C) both include it. The tool creates a memfd, sizes it to
 * sizeof(struct sd_probe_shm) + capacity * 8, fills the config fields and
 * passes the fd number in SHOOTDOWN_PROBE_FD. The library's constructor maps
 * it; the first process to claim it (CAS on `claimed`, i.e. the command the
 * tool started, before its main) starts the probe thread. The ring holds the
 * fenced TSC value at the end of each timed batch; entry i is at
 * ring[i % capacity]. Single producer (probe), single consumer (tool): the
 * probe publishes `count` with release order and never overwrites entries
 * the tool has not consumed (`consumed`); when the ring is full it stops
 * measuring and sets state to SD_PROBE_OVERRUN (gapless or nothing). */
#ifndef SHOOTDOWN_PROBE_SHM_H
#define SHOOTDOWN_PROBE_SHM_H

#include <stdint.h>

#define SD_PROBE_MAGIC 0x53445052u /* "SDPR" */
#define SD_PROBE_VERSION 1u
#define SD_PROBE_ENV_FD "SHOOTDOWN_PROBE_FD"

enum sd_probe_state {
  SD_PROBE_INIT = 0, /* written by the tool */
  SD_PROBE_PREPARING = 1,
  SD_PROBE_RUNNING = 2, /* start_tsc valid, samples flowing */
  SD_PROBE_DONE = 3,    /* stopped on request or at exit */
  SD_PROBE_OVERRUN = 4, /* ring full: measurement ended early */
  SD_PROBE_FAILED = 5   /* error[] says why */
};

struct sd_probe_shm {
  /* config (tool) */
  uint32_t magic;
  uint32_t version;
  int32_t cpu;          /* pin the probe thread here */
  uint32_t batch_pages; /* 4 KiB pages written per timed batch */
  uint64_t arena_bytes; /* private arena, mlocked when allowed */
  uint64_t capacity;    /* ring entries */
  uint32_t sched_fifo;  /* 1: the probe thread runs SCHED_FIFO 1 (--rt) */
  uint32_t reserved;
  /* claim and control */
  int32_t claimed; /* pid of the process that runs the probe (CAS 0 -> pid) */
  uint32_t stop;   /* tool -> probe: finish */
  /* status (probe) */
  uint32_t state;
  int32_t tid;      /* probe thread id */
  uint32_t mlocked; /* 1 when arena and ring are mlocked */
  int32_t error_errno;
  uint64_t start_tsc; /* timestamp before the first batch */
  uint64_t count;     /* samples published */
  uint64_t consumed;  /* tool: samples copied out */
  char error[160];
  /* the ring follows: capacity uint64_t entries (sd_probe_ring) */
};

static inline uint64_t* sd_probe_ring(struct sd_probe_shm* s) {
  return (uint64_t*)(void*)(s + 1);
}

#endif
