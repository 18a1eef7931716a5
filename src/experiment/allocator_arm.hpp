// SPDX-License-Identifier: Apache-2.0
// The allocator arms: the culprit's workload is an allocation churn
// (core/churn_plan.hpp) through one allocator, loaded so that only this workload
// uses it (dlopen RTLD_LOCAL and the allocator's own entry points; glibc
// malloc is the process's own). A release frees 7/8 of the live blocks in a
// shuffled order and, unless --allocator-purge off, calls the allocator's
// "give free memory back now" entry point. What stays resident afterwards is
// the memory the allocator kept.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/churn_plan.hpp"
#include "core/expected.hpp"
#include "core/result.hpp"
#include "sys/dl.hpp"

namespace shootdown::exp {

class AllocatorChurn {
 public:
  // Loads the allocator of s with plan.allocator_conf; an error when it is
  // not installed or refuses the settings.
  static Expected<std::unique_ptr<AllocatorChurn>> open(ReleaseStrategy s, const Plan& plan);
  ~AllocatorChurn();
  AllocatorChurn(const AllocatorChurn&) = delete;
  AllocatorChurn& operator=(const AllocatorChurn&) = delete;

  // Allocates and writes the whole live set (outside the timed window);
  // an error on allocation failure or a stop signal.
  Status build();
  // The timed part: frees the planned blocks, then the purge call.
  // Allocates nothing of its own.
  Status release();
  // Allocates and writes the freed blocks again (between repeats).
  Status rearm();
  // Reads the allocator's own free bytes now (the release settled).
  void settle();
  const AllocatorReport& report() const { return report_; }

  struct Api;  // the allocator's entry points (churn.cpp)

 private:
  AllocatorChurn(ReleaseStrategy s, const Plan& plan);
  // The loaded library's entry points, then its version and settings as
  // the allocator reports them (after its first call).
  Status resolve_api();
  void describe(const Plan& plan);
  Status fill(const std::vector<std::uint32_t>& which);

  ReleaseStrategy strategy_;
  bool purge_ = true;
  ChurnPlan plan_;
  std::vector<void*> blocks_;
  std::vector<std::uint32_t> freed_;  // free_order sorted: what rearm allocates again
  std::optional<sys::SharedLibrary> lib_;
  std::unique_ptr<Api> api_;
  AllocatorReport report_;
};

}  // namespace shootdown::exp
