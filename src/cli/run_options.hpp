// SPDX-License-Identifier: Apache-2.0
// `shootdown run` options: raw strings as typed, then validated into a Plan.
// Validation throws shootdown::UsageError (core/errors.hpp, exit 2) with one
// line naming the option, the value and what is accepted.
#pragma once

#include <string>

#include "core/result.hpp"

namespace CLI {
class App;
}

namespace shootdown::cli {

struct RunOptions {
  std::string culprit_cpu;
  std::string victim_cpus;
  std::string chunk_size = "4GiB";
  std::string batch = "64KiB";
  std::string report_every = "10ms";  // a duration (wall time) or a size (writes) per interval
  std::string pages = "4k";
  std::string release = "free";
  std::string pace;             // --pace SIZE/DURATION for paced / chunked ("" = the strategy's default)
  std::string allocator_conf;   // --allocator-conf for the allocator arms (core/churn_plan.hpp)
  std::string allocator_purge;  // --allocator-purge on|off ("" = on)
  std::string trigger;          // "" = enter on a TTY, else after=2s
  int repeat = 1;
  std::string every = "500ms";
  std::string baseline = "1s";
  std::string settle = "1ms";
  std::string after = "1s";
  std::string trace = "auto";
  std::string stall_threshold;  // "" = auto
  double stall_factor = 8.0;
  bool no_mlock = false;
  bool rt = false;
  std::string memory_limit;  // --memory-limit SIZE ("" = automatic)
  bool json = false;
  std::string out;
  bool open = false;   // --open: print the report's file:// URL (no browser is started)
  std::string influx;  // --influx URL ("" = none)
  bool quiet = false;
  bool verbose = false;  // -v: every tuning warning on its own line
  bool chunk_size_given = false;
};

// Adds the run options to app (also used by `compare`, which runs many).
void add_run_options(CLI::App& app, RunOptions& o, bool for_compare = false);

// Facts the validation needs, read by the caller (sys/) so this stays testable.
struct MachineFacts {
  std::vector<int> online;
  std::vector<int> default_cpus;               // choose_cpus result (culprit first)
  std::string default_cpus_why;                // why these CPUs, or why defaults are impossible
  std::vector<std::pair<int, int>> smt_pairs;  // sibling pairs among online CPUs
  std::vector<int> isolated;
  std::vector<int> cpu_node;  // node of each CPU, indexed by CPU number
  std::int64_t mem_available = 0;
  // The memory cgroup's limit and usage (sys::read_cgroup_memory): -1 = no limit.
  std::int64_t cgroup_limit = -1;
  std::int64_t cgroup_usage = 0;
  std::string cgroup_path;
  std::int64_t hugepages_free = 0;
  std::int64_t hugepage_size = 2 << 20;
  bool stdin_is_tty = false;
};

MachineFacts read_machine_facts();

// The CPUs of an experiment from --culprit-cpu and --victim-cpus (either may
// be empty: the default choice fills it) and why they were chosen. Shared by
// run, compare and trace. Throws UsageError (one line).
struct CpuPlan {
  int culprit = -1;
  std::vector<int> victims;
  std::string choice;  // "given", "default: ...", ...
};
CpuPlan resolve_cpus(const std::string& culprit, const std::string& victims, const MachineFacts& m);

// A duration option that must be > 0 (--duration of trace, probe, blame).
// Throws UsageError (one line).
std::int64_t positive_duration(const std::string& name, const std::string& v);

// Throws UsageError (one line) on bad input.
Plan validate_run_options(const RunOptions& o, const MachineFacts& m, std::vector<std::string>* warnings);

}  // namespace shootdown::cli
