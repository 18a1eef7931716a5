#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Idempotent: installs only the Debian packages that are missing.
# Usage: scripts/install-deps.sh [--with-integration | --with-bench]
#   default             build + unit/CLI test dependencies, and the allocators
#                       of the allocator arms (jemalloc, tcmalloc, mimalloc)
#   --with-integration  also the real parts the integration tier uses
#                       (HdrHistogram Java reference, InfluxDB, Chromium,
#                       Prometheus + promtool, lintian for the .deb; xz-utils,
#                       zstd, binutils and the JDK for blame on real programs)
#   --with-bench        also the observers bench/observer_overhead.sh compares
#                       (perf, bpftrace)
#                       and QEMU and busybox-static for the lab: tests/lab/)
set -euo pipefail

base=(
  cmake g++ make pkg-config
  libcli11-dev libfmt-dev nlohmann-json3-dev libnuma-dev zlib1g-dev
  libcpp-httplib-dev libtraceevent-dev libdw-dev libelf-dev libbpf-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev ccache jq
  clang-format-14 clang-tidy-14
  libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
)
integration=(
  default-jre-headless default-jdk-headless libhdrhistogram-java
  influxdb
  prometheus bpftool
  lintian
  chromium
  curl procps jq python3 python3-jsonschema
  xz-utils zstd binutils
  qemu-system-x86 busybox-static
)

bench=(linux-perf bpftrace python3)

want=("${base[@]}")
if [[ "${1:-}" == "--with-bench" ]]; then
  want+=("${bench[@]}")
fi
if [[ "${1:-}" == "--with-integration" ]]; then
  want+=("${integration[@]}")
  # npm for playwright-core (HTML report test); a nodejs from elsewhere brings its own.
  command -v npm >/dev/null 2>&1 || want+=(npm)
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
