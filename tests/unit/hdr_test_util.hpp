// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the hdr_*_test.cpp files.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace shootdown::hdr::test {

inline std::string fixture_path(const std::string& name) {
  return std::string(SHOOTDOWN_FIXTURES) + "/hdr/" + name;
}

inline std::string read_text(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::uint8_t> read_bytes(const std::string& name) {
  const std::string s = read_text(name);
  return {s.begin(), s.end()};
}

}  // namespace shootdown::hdr::test
