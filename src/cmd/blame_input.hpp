// SPDX-License-Identifier: Apache-2.0
// One rule for turning a FlushSampler session into core::BlameInput, used by
// `blame` and by `probe` (its "who sent them" call sites): the target and the
// processes it started (fork records), user frames that are real code
// addresses (core user_frames), symbolized; kernel frames named; IPI sends
// and received flushes; the /proc/interrupts TLB delta per CPU.
#pragma once

#include <string>

#include "core/blame.hpp"
#include "sys/interrupts.hpp"
#include "sys/perf_sampler.hpp"
#include "sys/user_symbols.hpp"

namespace shootdown::cmd {

// data.forks is sorted in place; syms gets the session's mappings.
BlameInput blame_input(int target, const std::string& command, sys::SamplerData& data, sys::UserSymbols& syms,
                       const sys::InterruptsSnapshot* irq0, const sys::InterruptsSnapshot* irq1);

}  // namespace shootdown::cmd
