// SPDX-License-Identifier: Apache-2.0
// Thread pinning (sched_setaffinity on the calling thread).
#pragma once

#include <string>

#include "core/expected.hpp"

namespace shootdown::sys {

// The error: strerror of sched_setaffinity.
Status pin_this_thread(int cpu);

}  // namespace shootdown::sys

namespace shootdown::sys {

// The calling thread's memory policy set to "preferred: node" for its
// lifetime, the previous policy restored after (threads created meanwhile
// inherit it). A task policy set by set_mempolicy lacks MPOL_F_MOF, so NUMA
// balancing's scanner skips every mapping without a policy of its own
// (kernel/sched/fair.c task_numa_work: `!vma_policy_mof(vma)` -> skip;
// mm/mempolicy.c vma_policy_mof falls back to the task's policy), and the
// chunks are mbind-ed without it: the scanner's change_prot_numa then sends
// no TLB flush of our own to the victims. Without a policy the default
// (preferred_node_policy, MOF set) lets it scan the heap and stacks about once
// a second on a multi-node machine with kernel.numa_balancing=1.
class PreferredNode {
 public:
  explicit PreferredNode(int node);
  ~PreferredNode();
  PreferredNode(const PreferredNode&) = delete;
  PreferredNode& operator=(const PreferredNode&) = delete;
  bool active() const { return active_; }
  const std::string& why() const { return why_; }  // when not active

 private:
  bool active_ = false;
  int old_mode_ = 0;
  unsigned long old_mask_[16] = {};  // 1024 nodes
  std::string why_;
};

}  // namespace shootdown::sys
