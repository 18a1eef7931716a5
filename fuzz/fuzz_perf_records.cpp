// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: perf ring decoding. The input is the content of one
// synthetic perf ring (records of any type, any size, wrapping the end);
// the decoders of `blame` (FlushSampler) and of the kernel trace (Tracer)
// must stay in bounds and terminate whatever the ring holds.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <linux/perf_event.h>
#include <vector>

#include "sys/perf_fuzz.hpp"

namespace sys = shootdown::sys;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const bool tracer = data[0] & 1;
  const std::size_t tail = data[1] | (std::size_t{data[2]} << 8);  // start offset: records wrap
  data += 3;
  size -= 3;
  // Ring size: the input rounded up to 8 bytes, at least 64.
  const std::size_t ring = std::max<std::size_t>(64, (size + 7) & ~std::size_t{7});
  std::vector<std::uint8_t> mem(sizeof(perf_event_mmap_page) + ring, 0);
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(mem.data());
  std::uint8_t* ring_data = mem.data() + sizeof(perf_event_mmap_page);
  const std::size_t start = tail % ring;
  for (std::size_t i = 0; i < size; ++i) ring_data[(start + i) % ring] = data[i];
  meta->data_tail = tail;
  meta->data_head = tail + size;
  if (tracer)
    (void)sys::decode_tracer_ring(mem.data(), sizeof(perf_event_mmap_page), ring);
  else
    (void)sys::decode_sampler_ring(mem.data(), sizeof(perf_event_mmap_page), ring);
  return 0;
}
