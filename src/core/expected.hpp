// SPDX-License-Identifier: Apache-2.0
// The project's one way to report a failure the caller handles: a function
// that can fail returns Expected<T>, the value or one clear error message
// (C++20 has no std::expected). A failure that ends the command is thrown as
// UsageError or RuntimeError (core/errors.hpp) and mapped to an exit code by
// the driver only. docs/ARCHITECTURE.md "Errors" says where each one is used.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace shootdown {

struct Error {
  std::string message;
};

struct Ok {};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit on purpose
  Expected(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT
  bool ok() const noexcept { return state_.index() == 0; }
  bool has_value() const noexcept { return ok(); }  // as std::expected
  explicit operator bool() const noexcept { return ok(); }
  // Preconditions: ok() for value(), !ok() for error().
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(state_).message; }
  // The value, or `fallback` on an error (as std::expected).
  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }
  // Holds a value equal to v (as std::expected's comparison with a value).
  template <typename U>
  friend bool operator==(const Expected& e, const U& v) {
    return e.ok() && e.value() == v;
  }

 private:
  std::variant<T, Error> state_;
};

// A step that yields nothing but can fail.
using Status = Expected<Ok>;

}  // namespace shootdown
