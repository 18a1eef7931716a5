// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
// In-kernel aggregation of tlb:tlb_flush for `shootdown monitor`: a fleet
// agent that runs all the time must not move one record per flush to user
// space. Three maps, read by sys/bpf_flush_counter.cpp:
//   by_reason  per-CPU array: flushes by reason on the CPU that traced them
//              (slot 7: reason-1/4 flushes `tasks` had no room for)
//   tasks      per-CPU hash {tgid, reason 1|4} -> count: who initiated
//              (reason 4, in the sender's context) and who was interrupted
//              (reason 1, in the IPI handler; tgid 0 = the idle task)
//   names      hash tgid -> cgroup v2 id and comm when first counted, so a
//              process that exits before user space looks is still named
// Per-CPU values: no atomic and no shared cache line on the flush path, the
// cost of a bpftrace count() map. The program runs at the raw tracepoint
// (no trace record is built): tp_btf, typed by the running kernel's BTF, or
// raw_tp where the kernel has no BTF (user space picks). Licensed "Dual
// BSD/GPL" (BSD-2-Clause OR GPL-2.0-only, as bcc's libbpf-tools are), so a
// program may call GPL-only helpers such as bpf_get_stackid.
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define REASONS 6       /* enum tlb_flush_reason: 0..5 (TLB_REMOTE_WRONG_CPU, 5.10+) */
#define SLOT_FULL 7     /* by_reason slot: flushes `tasks` had no room for */
#define TASKS_MAX 8192  /* bounded: user space erases processes that are gone */

struct task_key {
  __u32 tgid;
  __u32 reason;
};

struct task_name {
  __u64 cgroup_id;
  char comm[16];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 8);
  __type(key, __u32);
  __type(value, __u64);
} by_reason SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, TASKS_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct task_key);
  __type(value, __u64);
} tasks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, TASKS_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct task_name);
} names SEC(".maps");

// --pid: count only flushes whose current task belongs to this process (set
// by user space before load; 0 = every process).
volatile const __u32 target_tgid = 0;

static __always_inline void bump(__u32 slot) {
  __u64* n = bpf_map_lookup_elem(&by_reason, &slot);
  if (n) *n += 1;
}

static __always_inline int count(int reason) {
  if (reason < 0 || reason >= REASONS) return 0;
  const __u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  if (target_tgid && tgid != target_tgid) return 0;
  bump((__u32)reason);
  if (reason != 1 && reason != 4) return 0;
  struct task_key k = {.tgid = tgid, .reason = (__u32)reason};
  __u64* n = bpf_map_lookup_elem(&tasks, &k);
  if (n) {
    *n += 1;  // this CPU's slot
    return 0;
  }
  __u64 one = 1;
  if (bpf_map_update_elem(&tasks, &k, &one, BPF_NOEXIST) != 0) {
    n = bpf_map_lookup_elem(&tasks, &k);  // another CPU inserted it first
    if (n)
      *n += 1;
    else
      bump(SLOT_FULL);
    return 0;
  }
  struct task_name nm = {.cgroup_id = bpf_get_current_cgroup_id()};
  bpf_get_current_comm(nm.comm, sizeof nm.comm);
  bpf_map_update_elem(&names, &k.tgid, &nm, BPF_NOEXIST);
  return 0;
}

// TP_PROTO(int reason, unsigned long pages)
SEC("tp_btf/tlb_flush")
int BPF_PROG(count_tlb_flush_btf, int reason, unsigned long pages) { return count(reason); }

SEC("raw_tp/tlb_flush")
int BPF_PROG(count_tlb_flush_raw, int reason, unsigned long pages) { return count(reason); }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
