// SPDX-License-Identifier: Apache-2.0
#include "sys/affinity.hpp"

#include <cerrno>
#include <cstring>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace shootdown::sys {

Status pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return Error{std::strerror(errno)};
  return Ok{};
}

}  // namespace shootdown::sys

namespace shootdown::sys {

PreferredNode::PreferredNode(int node) {
  constexpr unsigned long kMaxNode = sizeof(old_mask_) * 8;
  if (node < 0 || static_cast<unsigned long>(node) >= kMaxNode) {
    why_ = "node " + std::to_string(node) + " out of range";
    return;
  }
  if (syscall(SYS_get_mempolicy, &old_mode_, old_mask_, kMaxNode, nullptr, 0UL) != 0) {
    why_ = std::string("get_mempolicy: ") + std::strerror(errno);
    return;
  }
  unsigned long mask[sizeof(old_mask_) / sizeof(unsigned long)] = {};
  mask[static_cast<unsigned>(node) / (8 * sizeof(unsigned long))] =
      1UL << (static_cast<unsigned>(node) % (8 * sizeof(unsigned long)));
  if (syscall(SYS_set_mempolicy, MPOL_PREFERRED, mask, kMaxNode) != 0) {
    why_ = std::string("set_mempolicy: ") + std::strerror(errno);
    return;
  }
  active_ = true;
}

PreferredNode::~PreferredNode() {
  if (!active_) return;
  constexpr unsigned long kMaxNode = sizeof(old_mask_) * 8;
  const bool no_nodes = old_mode_ == MPOL_DEFAULT || old_mode_ == MPOL_LOCAL;
  (void)syscall(SYS_set_mempolicy, old_mode_, no_nodes ? nullptr : old_mask_, no_nodes ? 0UL : kMaxNode);
}

}  // namespace shootdown::sys
