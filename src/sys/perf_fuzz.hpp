// SPDX-License-Identifier: Apache-2.0
#pragma once
// Entry points for fuzzing the perf ring decoders (fuzz/fuzz_perf_records.cpp)
// and for unit tests: each builds the decoder of FlushSampler / Tracer with
// every record kind registered under a fixed sample id (1, 2, ...) and fixed
// tracepoint field offsets, attaches a synthetic ring (no perf_event_open, no
// root) and drains it. The ring is `page` (a perf_event_mmap_page with
// data_head / data_tail set by the caller) followed by data_size bytes.
#include <cstddef>
#include <cstdint>

#include "sys/perf_sampler.hpp"

namespace shootdown::sys {

// Sample ids: 1 flush send (with callchain, regs, stack), 2 flush receive,
// 3 ipi_send_cpu, 4 ipi_send_cpumask, 5 csd_queue_cpu, 6 dummy.
// Raw field layout: offset 8 (8 bytes) pages / cpu / cpumask (__data_loc),
// 16 callsite, 24 callback.
SamplerData decode_sampler_ring(void* page, std::size_t data_offset, std::size_t data_size);

// Sample id k+1 = the k-th tracepoint of the tracer's table; fields a, b, c at
// raw offsets 8, 16, 24 (8 bytes each; a is a __data_loc for ipi_send_cpumask).
// Returns the number of events decoded; every callchain is materialized.
std::size_t decode_tracer_ring(void* page, std::size_t data_offset, std::size_t data_size);

}  // namespace shootdown::sys
