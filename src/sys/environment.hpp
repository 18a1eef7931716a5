// SPDX-License-Identifier: Apache-2.0
// Facts about this machine recorded with every result.
#pragma once

#include "core/result.hpp"

namespace shootdown::sys {

Environment read_environment();

}  // namespace shootdown::sys
