// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
// In-kernel aggregation of tlb:tlb_flush for `shootdown monitor`: a fleet
// agent that runs all the time must not move one record per flush to user
// space. Counts and the time they cost, in four maps read by
// sys/bpf_flush_counter.cpp:
//   by_reason  per-CPU array: flushes by reason on the CPU that traced them
//              (slot 7: reason-1/4 flushes `tasks` had no room for)
//   cpu_time   per-CPU array: [0] ns spent in call-function IPI handlers
//              that ran a shootdown flush (entry -> exit of the interrupt),
//              [1] those interrupts, [2] ns initiators waited in
//              native_flush_tlb_multi, [3] those waits, [5] [6] handlers
//              whose only flush was for an mm the CPU no longer ran
//              (reason 5: another process's flush, 6.14+), [7] [8]
//              call-function interrupts that ran a kernel-range flush
//              function (ns entry -> exit, interrupts), [9] kernel-range
//              flushes initiated on this CPU, [10] csds those queued for
//              other CPUs (one per target: the IPIs), [11] kernel-range
//              flush functions run from a csd outside a call-function
//              interrupt (an idle CPU polling its queue)
//   tasks      per-CPU hash {tgid, reason 1|4|8|9} -> {count, ns}: who
//              initiated (reason 4, in the sender's context; ns: its wait)
//              and who was interrupted (reason 1, in the IPI handler; ns:
//              handler time; tgid 0 = the idle task). Keys 8 and 9 are not
//              tlb_flush reasons: 8 = interrupted by a kernel-range flush
//              (count: interrupts, ns: their handler time), 9 = initiated
//              kernel-range flushes (count: flushes, ns: NOT time but the
//              csds queued for other CPUs, the IPIs)
//   names      hash tgid -> cgroup v2 id and comm when first counted, so a
//              process that exits before user space looks is still named
// Victim time: irq_vectors:call_function(_single)_entry opens a bracket on
// its CPU, a tlb_flush reason 1 inside marks it a shootdown (so does a run
// of flush_tlb_func seen by csd_function_entry that traced no reason 5: it
// may return before its tracepoint), the matching
// exit charges exit - entry to the CPU and to the task it interrupted
// (handlers run with interrupts off: one bracket per CPU). The same span
// `run` reports as its IPI handler time. Initiator wait: tlb_flush reason 4
// is traced first thing in native_flush_tlb_multi (arch/x86/mm/tlb.c); the
// fexit of that function ends the wait (send, the local flush if any, and
// the spin until every target ran flush_tlb_func). The fexit program needs
// BTF and BPF trampolines, and a kernel not locked down.
// The csd link (kernels with csd tracepoints, 6.5+): csd_queue_cpu (sender)
// names each target's csd; the receiver's csd_function_entry/exit of that
// csd times flush_tlb_func there and charges it to the initiator
// (inflicted, and the part on a task of another cgroup), and counts the
// sender's outstanding targets down. Where fexit cannot load, the last
// target's exit ends the wait (the sender sees the csd unlocked just after;
// its own local flush runs meanwhile). Without either the wait is not
// measured and user space says so; without csd tracepoints nothing links a
// receiver to its sender.
// Kernel-range flushes (csd tracepoints, 6.5+): flush_tlb_kernel_range()
// and flush_tlb_all() (vfree's lazy purge, BPF JIT, module load and unload,
// set_memory_* through CPA's cpa_flush) run on_each_cpu() with
// do_kernel_range_flush, do_flush_tlb_all or __cpa_flush_tlb: an IPI to
// every other online CPU and no tlb_flush tracepoint, so /proc/interrupts
// shows them in CAL only. User space writes those functions' addresses
// (kallsyms) into config[2..4]; 0 = not watched. The sender's
// csd_queue_cpu with such a function counts a csd (an IPI) per target, its
// own run of it (csd_function_entry with csd NULL) one flush initiated by
// the current task; a receiver's run (csd not NULL) inside a call-function
// interrupt makes that interrupt a kernel-flush one: exit - entry goes to
// the CPU and to the task it interrupted (key 8), as the shootdown handler
// time does (an interrupt that also ran flush_tlb_func counts in both).
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

#define REASONS 6      /* enum tlb_flush_reason: 0..5 (TLB_REMOTE_WRONG_CPU, 5.10+) */
#define SLOT_FULL 7    /* by_reason slot: flushes `tasks` had no room for */
#define TASKS_MAX 8192 /* bounded: user space erases processes that are gone; sets fewer on many CPUs */

struct task_key {
  __u32 tgid;
  __u32 reason;
};

struct task_value {
  __u64 count;
  __u64 ns;                  // reason 1: handler time suffered; 4: wait
  __u64 inflicted_ns;        // reason 4, csd link: the targets' flush_tlb_func time for its flushes
  __u64 inflicted_other_ns;  // ... of it on CPUs running a task of another cgroup
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
  __type(value, struct task_value);
} tasks SEC(".maps");

#define T_HANDLER_NS 0
#define T_HANDLER_IRQS 1
#define T_WAIT_NS 2
#define T_WAITS 3
#define T_WAITS_UNENDED 4  // csd method: a wait whose targets' exits were not all seen
#define T_WRONG_NS 5       // call-function IPIs whose only flush was reason 5 (another mm loaded)
#define T_WRONG_IRQS 6
#define T_KFLUSH_NS 7  // call-function IPIs that ran a kernel-range flush function
#define T_KFLUSH_IRQS 8
#define T_KFLUSH_INIT 9     // kernel-range flushes initiated on this CPU (the sender's own run)
#define T_KFLUSH_QUEUED 10  // csds of them queued for other CPUs
#define T_KFLUSH_NOIRQ 11   // a csd's kernel-range flush run outside a call-function interrupt
#define T_SLOTS 12

#define KEY_KFLUSH_HIT 8   // tasks key: interrupted by a kernel-range flush
#define KEY_KFLUSH_INIT 9  // tasks key: initiated kernel-range flushes (ns: csds queued)

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, T_SLOTS);
  __type(key, __u32);
  __type(value, __u64);
} cpu_time SEC(".maps");

// Per CPU: the open call-function bracket and the open initiator wait.
struct cpu_state {
  __u64 irq_entry_ns;   // 0: no bracket open
  __u64 irq_tlb;        // bit 0: a reason-1 flush ran inside it; bit 1: a reason-5 one;
                        // bit 2: flush_tlb_func ran inside it (csd tracepoints);
                        // bit 3: a kernel-range flush function ran inside it
  __u64 wait_start_ns;  // 0: no wait open
  __u64 csd_entry_ns;   // csd link: flush_tlb_func of another CPU's csd running here since
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct cpu_state);
} state SEC(".maps");

// csd method: the open wait of each sending CPU (index = CPU), written by
// the sender and counted down by its targets.
#define MAX_CPUS 8192
struct pending_wait {
  __u64 start_ns;   // 0: none open
  __u64 cgroup_id;  // the initiator's
  __u32 tgid;
  __s32 outstanding;  // targets queued whose flush_tlb_func has not exited
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, MAX_CPUS);
  __type(key, __u32);
  __type(value, struct pending_wait);
} pending SEC(".maps");

// csd pointer -> the CPU that queued it. One csd per (sender, target) pair,
// reused: LRU bounds the table on machines with many CPUs (a pair evicted
// and missed ends its wait unseen: counted in T_WAITS_UNENDED).
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, __u32);
} csd_owner SEC(".maps");

// Written by user space before the programs attach: [0] the address of
// flush_tlb_func (from /proc/kallsyms; 0: the csd link is off), [1] 1 when
// the csd link also ends the initiators' wait (no fexit), [2..4] the
// addresses of do_kernel_range_flush, do_flush_tlb_all and __cpa_flush_tlb
// (0: not watched).
#define CFG_FLUSH_TLB_FUNC 0
#define CFG_CSD_ENDS_WAIT 1
#define CFG_KFLUSH_FIRST 2
#define KFLUSH_FUNCS 3
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, CFG_KFLUSH_FIRST + KFLUSH_FUNCS);
  __type(key, __u32);
  __type(value, __u64);
} config SEC(".maps");

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

static __always_inline void add_time(__u32 slot, __u64 ns) {
  __u64* t = bpf_map_lookup_elem(&cpu_time, &slot);
  if (t) *t += ns;
  slot += 1;  // the count beside it
  t = bpf_map_lookup_elem(&cpu_time, &slot);
  if (t) *t += 1;
}

static __always_inline void add_one(__u32 slot) {
  __u64* t = bpf_map_lookup_elem(&cpu_time, &slot);
  if (t) *t += 1;
}

static __always_inline void add_unended(void) {
  add_one(T_WAITS_UNENDED);
}

static __always_inline struct cpu_state* cpu_state(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&state, &zero);
}

static __always_inline __u32 current_tgid(void) {
  return (__u32)(bpf_get_current_pid_tgid() >> 32);
}

// Adds (count, ns) to {tgid, reason}; the first count names the process
// (in its own context only: may_name).
static __always_inline void charge(__u32 tgid, __u32 reason, __u64 count, __u64 ns, int may_name) {
  struct task_key k = {.tgid = tgid, .reason = reason};
  struct task_value* v = bpf_map_lookup_elem(&tasks, &k);
  if (v) {  // this CPU's slot
    v->count += count;
    v->ns += ns;
    return;
  }
  struct task_value init = {.count = count, .ns = ns};
  if (bpf_map_update_elem(&tasks, &k, &init, BPF_NOEXIST) != 0) {
    v = bpf_map_lookup_elem(&tasks, &k);  // another CPU inserted it first
    if (v) {
      v->count += count;
      v->ns += ns;
    } else if (count) {
      bump(SLOT_FULL);
    }
    return;
  }
  if (!may_name) return;
  struct task_name nm = {.cgroup_id = bpf_get_current_cgroup_id()};
  bpf_get_current_comm(nm.comm, sizeof nm.comm);
  bpf_map_update_elem(&names, &k.tgid, &nm, BPF_NOEXIST);
}

static __always_inline int count(int reason) {
  if (reason < 0 || reason >= REASONS) return 0;
  const __u32 tgid = current_tgid();
  if (target_tgid && tgid != target_tgid) return 0;
  bump((__u32)reason);
  struct cpu_state* st = cpu_state();
  if (st && reason == 1 && st->irq_entry_ns) st->irq_tlb |= 1;
  if (st && reason == 5 && st->irq_entry_ns) st->irq_tlb |= 2;
  if (st && reason == 4) {
    st->wait_start_ns = bpf_ktime_get_ns();
    __u32 cpu = bpf_get_smp_processor_id();
    struct pending_wait* p = bpf_map_lookup_elem(&pending, &cpu);
    if (p) {
      if (p->start_ns && p->outstanding > 0) add_unended();
      p->start_ns = st->wait_start_ns;
      p->cgroup_id = bpf_get_current_cgroup_id();
      p->tgid = tgid;
      p->outstanding = 0;
    }
  }
  if (reason == 1 || reason == 4) charge(tgid, (__u32)reason, 1, 0, 1);
  return 0;
}

static __always_inline int irq_entry(void) {
  struct cpu_state* st = cpu_state();
  if (st) {
    st->irq_entry_ns = bpf_ktime_get_ns();
    st->irq_tlb = 0;
  }
  return 0;
}

static __always_inline int irq_exit(void) {
  struct cpu_state* st = cpu_state();
  if (!st || !st->irq_entry_ns) return 0;
  const __u64 ns = bpf_ktime_get_ns() - st->irq_entry_ns;
  const __u64 tlb = st->irq_tlb;
  st->irq_entry_ns = 0;
  st->irq_tlb = 0;
  // A shootdown for this CPU's mm: a reason-1 flush, or flush_tlb_func
  // with no flush traced (it returns before the tracepoint when the TLB is
  // already at the requested generation, and /proc/interrupts counts it in
  // TLB all the same) unless it traced reason 5. Else one for an mm the CPU
  // no longer runs (reason 5, 6.14+). The interrupted task pays either way.
  // The rule `run`'s attribution applies to its trace.
  const int shootdown = (tlb & 1) || ((tlb & 4) && !(tlb & 2));
  const int kflush = (tlb & 8) != 0;
  if (!shootdown && !(tlb & 2) && !kflush) return 0;
  const __u32 tgid = current_tgid();  // the task the interrupt stopped
  if (target_tgid && tgid != target_tgid) return 0;
  if (kflush) {
    add_time(T_KFLUSH_NS, ns);
    charge(tgid, KEY_KFLUSH_HIT, 1, ns, 1);
  }
  if (!shootdown && !(tlb & 2)) return 0;
  add_time(shootdown ? T_HANDLER_NS : T_WRONG_NS, ns);
  charge(tgid, 1, 0, ns, 1);
  return 0;
}

static __always_inline int config_is(__u32 k, __u64 func) {
  __u64* addr = bpf_map_lookup_elem(&config, &k);
  return addr && *addr && *addr == func;
}

static __always_inline int is_flush_tlb_func(__u64 func) {
  return config_is(CFG_FLUSH_TLB_FUNC, func);
}

// Written out, not a loop: 6.12's verifier took the loop over the config
// slots for an infinite one ("infinite loop detected") and refused the program.
_Static_assert(KFLUSH_FUNCS == 3, "is_kernel_flush reads three config slots");
static __always_inline int is_kernel_flush(__u64 func) {
  return func && (config_is(CFG_KFLUSH_FIRST, func) || config_is(CFG_KFLUSH_FIRST + 1, func) ||
                  config_is(CFG_KFLUSH_FIRST + 2, func));
}

static __always_inline int csd_ends_wait(void) {
  __u32 k = CFG_CSD_ENDS_WAIT;
  __u64* v = bpf_map_lookup_elem(&config, &k);
  return v && *v;
}

// TP_PROTO(int reason, unsigned long pages)
SEC("tp_btf/tlb_flush")
int BPF_PROG(count_tlb_flush_btf, int reason, unsigned long pages) {
  return count(reason);
}

SEC("raw_tp/tlb_flush")
int BPF_PROG(count_tlb_flush_raw, int reason, unsigned long pages) {
  return count(reason);
}

// irq_vectors: TP_PROTO(int vector)
SEC("tp_btf/call_function_entry")
int BPF_PROG(cf_entry_btf, int vector) {
  return irq_entry();
}
SEC("tp_btf/call_function_exit")
int BPF_PROG(cf_exit_btf, int vector) {
  return irq_exit();
}
SEC("tp_btf/call_function_single_entry")
int BPF_PROG(cfs_entry_btf, int vector) {
  return irq_entry();
}
SEC("tp_btf/call_function_single_exit")
int BPF_PROG(cfs_exit_btf, int vector) {
  return irq_exit();
}
SEC("raw_tp/call_function_entry")
int BPF_PROG(cf_entry_raw, int vector) {
  return irq_entry();
}
SEC("raw_tp/call_function_exit")
int BPF_PROG(cf_exit_raw, int vector) {
  return irq_exit();
}
SEC("raw_tp/call_function_single_entry")
int BPF_PROG(cfs_entry_raw, int vector) {
  return irq_entry();
}
SEC("raw_tp/call_function_single_exit")
int BPF_PROG(cfs_exit_raw, int vector) {
  return irq_exit();
}

// The initiator's wait ends when native_flush_tlb_multi returns (its
// arguments are not read: no kernel type is needed).
SEC("fexit/native_flush_tlb_multi")
int BPF_PROG(wait_end_fexit) {
  struct cpu_state* st = cpu_state();
  if (!st || !st->wait_start_ns) return 0;
  const __u64 ns = bpf_ktime_get_ns() - st->wait_start_ns;
  st->wait_start_ns = 0;
  const __u32 tgid = current_tgid();
  if (target_tgid && tgid != target_tgid) return 0;
  add_time(T_WAIT_NS, ns);
  charge(tgid, 4, 0, ns, 1);
  return 0;
}

// The csd link (kernels with csd tracepoints, 6.5+). Raw tracepoints
// only: the arguments are plain words here.
// TP_PROTO(const unsigned int cpu, unsigned long callsite, smp_call_func_t func, call_single_data_t *csd)
SEC("raw_tp/csd_queue_cpu")
int BPF_PROG(link_queue_csd, unsigned int cpu, unsigned long callsite, void* func, void* csd) {
  if (is_kernel_flush((__u64)func)) {  // one csd (an IPI) to a target of a kernel-range flush
    const __u32 tgid = current_tgid();
    if (target_tgid && tgid != target_tgid) return 0;
    add_one(T_KFLUSH_QUEUED);
    charge(tgid, KEY_KFLUSH_INIT, 0, 1, 1);
    return 0;
  }
  if (!is_flush_tlb_func((__u64)func) || !csd) return 0;
  __u32 me = bpf_get_smp_processor_id();
  struct pending_wait* p = bpf_map_lookup_elem(&pending, &me);
  if (!p || !p->start_ns) return 0;  // not inside a traced remote flush (or filtered by --pid)
  __u64 key = (__u64)csd;
  bpf_map_update_elem(&csd_owner, &key, &me, BPF_ANY);
  __sync_fetch_and_add(&p->outstanding, 1);
  return 0;
}

// TP_PROTO(smp_call_func_t func, call_single_data_t *csd): csd is NULL for a
// function the CPU ran for itself.
SEC("raw_tp/csd_function_entry")
int BPF_PROG(link_entry_csd, void* func, void* csd) {
  if (is_kernel_flush((__u64)func)) {
    if (!csd) {  // the initiator's own run: one kernel-range flush
      const __u32 tgid = current_tgid();
      if (target_tgid && tgid != target_tgid) return 0;
      add_one(T_KFLUSH_INIT);
      charge(tgid, KEY_KFLUSH_INIT, 1, 0, 1);
      return 0;
    }
    struct cpu_state* kst = cpu_state();
    if (kst && kst->irq_entry_ns)
      kst->irq_tlb |= 8;
    else
      add_one(T_KFLUSH_NOIRQ);
    return 0;
  }
  if (!csd || !is_flush_tlb_func((__u64)func)) return 0;
  struct cpu_state* st = cpu_state();
  if (!st) return 0;
  st->csd_entry_ns = bpf_ktime_get_ns();
  if (st->irq_entry_ns) st->irq_tlb |= 4;
  return 0;
}

SEC("raw_tp/csd_function_exit")
int BPF_PROG(link_exit_csd, void* func, void* csd) {
  if (!csd || !is_flush_tlb_func((__u64)func)) return 0;
  const __u64 now = bpf_ktime_get_ns();
  struct cpu_state* st = cpu_state();
  const __u64 ran_ns = st && st->csd_entry_ns ? now - st->csd_entry_ns : 0;
  if (st) st->csd_entry_ns = 0;
  __u64 key = (__u64)csd;
  __u32* owner = bpf_map_lookup_elem(&csd_owner, &key);
  if (!owner) return 0;
  __u32 sender = *owner;
  struct pending_wait* p = bpf_map_lookup_elem(&pending, &sender);
  if (!p || !p->start_ns) return 0;
  // The sender spins until this csd is unlocked, after this program: its
  // pending entry is this flush's.
  const __u32 tgid = p->tgid;
  const int other = bpf_get_current_cgroup_id() != p->cgroup_id;
  struct task_key k = {.tgid = tgid, .reason = 4};
  struct task_value* v = bpf_map_lookup_elem(&tasks, &k);  // this CPU's slot of the initiator's entry
  if (v) {
    v->inflicted_ns += ran_ns;
    if (other) v->inflicted_other_ns += ran_ns;
  }
  if (__sync_fetch_and_add(&p->outstanding, -1) != 1 || !csd_ends_wait()) return 0;
  const __u64 start = p->start_ns;
  p->start_ns = 0;
  const __u64 ns = now - start;
  // The sender's CPU slots, written from here.
  __u32 slot = T_WAIT_NS;
  __u64* t = bpf_map_lookup_percpu_elem(&cpu_time, &slot, sender);
  if (t) __sync_fetch_and_add(t, ns);
  slot = T_WAITS;
  t = bpf_map_lookup_percpu_elem(&cpu_time, &slot, sender);
  if (t) __sync_fetch_and_add(t, 1);
  charge(tgid, 4, 0, ns, 0);
  return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
