// SPDX-License-Identifier: Apache-2.0
// Failures that end a command, thrown from any layer above sys/ and mapped to
// an exit code in one place, the driver (cmd/driver.cpp): UsageError for bad
// input (exit 2, before anything is acquired), RuntimeError for a failure at
// run time (exit 1). A failure the caller handles is an Expected<T>
// (core/expected.hpp) instead.
#pragma once

#include <stdexcept>

namespace shootdown {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace shootdown
