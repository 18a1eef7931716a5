// SPDX-License-Identifier: Apache-2.0
// Outputs of `shootdown blame`: console text (under 80 columns except the
// stack lines), JSON (docs/blame-probe.md, FIELDS) and the folded
// collapsed-stack format (core/blame.hpp folded_stacks) for flame graphs.
#pragma once

#include <string>

#include "core/blame.hpp"

namespace shootdown::sink {

std::string blame_text(const BlameReport& r, const BlameOptions& opts);
std::string blame_json(const BlameReport& r);

}  // namespace shootdown::sink
