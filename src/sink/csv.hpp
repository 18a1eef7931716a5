// SPDX-License-Identifier: Apache-2.0
// timeline.csv: one row per report interval per victim (docs/formats.md).
#pragma once

#include <string>

#include "core/result.hpp"

namespace shootdown::sink {

std::string timeline_csv(const Result& r);

}  // namespace shootdown::sink
