// Thread pinning (sched_setaffinity on the calling thread).
#pragma once

#include <string>

namespace shootdown::sys {

bool pin_this_thread(int cpu, std::string* why = nullptr);
int current_cpu();  // sched_getcpu()

}  // namespace shootdown::sys
