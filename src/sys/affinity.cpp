#include "sys/affinity.hpp"

#include <cerrno>
#include <cstring>
#include <sched.h>

namespace shootdown::sys {

bool pin_this_thread(int cpu, std::string* why) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    if (why) *why = std::strerror(errno);
    return false;
  }
  return sched_getcpu() == cpu || true;
}

int current_cpu() {
  return sched_getcpu();
}

}  // namespace shootdown::sys
