// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the ELF/DWARF symbol reader `blame` and `probe` use on a
// target's binaries (UserSymbols over libdwfl). The input is the binary: a
// malicious file mapped by the target must not crash the (root) tool, and
// names read from it must not carry terminal control bytes into its output.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sys/user_symbols.hpp"

namespace sys = shootdown::sys;

namespace {
std::string g_path;
unsigned long long g_ino = 0;

void check_printable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::unsetenv("DEBUGINFOD_URLS");  // never reach out to the network
  g_path = "/tmp/fuzz_elf_symbols." + std::to_string(::getpid()) + ".so";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = ::open(g_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  const bool written = ::write(fd, data, size) == static_cast<ssize_t>(size);
  struct stat st {};
  ::fstat(fd, &st);
  ::close(fd);
  if (!written) return 0;
  g_ino = st.st_ino;
  sys::UserSymbols syms;
  char line[512];
  std::snprintf(line, sizeof line,
                "400000-500000 r--p 00000000 %02x:%02x %llu %s\n500000-600000 r-xp 00001000 %02x:%02x %llu %s\n",
                major(st.st_dev), minor(st.st_dev), g_ino, g_path.c_str(), major(st.st_dev), minor(st.st_dev), g_ino,
                g_path.c_str());
  syms.add_maps_text(1, line);
  for (std::uint64_t ip : {std::uint64_t{0x400000}, std::uint64_t{0x401000}, std::uint64_t{0x500010},
                           std::uint64_t{0x5fffff}, std::uint64_t{0x400000} + size / 2}) {
    const auto f = syms.symbolize(1, ip, true);
    check_printable(f.function);
    check_printable(f.file);
    check_printable(f.module);
  }
  return 0;
}
