# SPDX-License-Identifier: Apache-2.0
cmake_minimum_required(VERSION 3.25)
# Per-layer include boundaries, checked on every build (target check_layers,
# part of ALL): a file may include project headers only from the layers its
# library links (docs/ARCHITECTURE.md). Run: cmake -DSRC=<src dir> -P check_layers.cmake
#
#   core/hdr    core/hdr
#   core        core            (standard library only, no OS headers)
#   sys         sys core
#   experiment  experiment sys core probe  (probe_shm.h: the protocol
#                                          the probe session speaks)
#   sink        sink core       and none of the analysis headers that compute
#                               (sinks format what core computed: they read
#                               core/analysis_types.hpp, not core/analysis.hpp)
#   cli         cli sys core
#   cmd         everything
#   probe       probe
set(allowed_core_hdr "core/hdr")
set(allowed_core "core")
set(allowed_sys "sys;core")
set(allowed_experiment "experiment;sys;core;probe")
set(allowed_sink "sink;core")
set(allowed_cli "cli;sys;core")
set(allowed_cmd "cmd;cli;experiment;sink;sys;core;probe")
set(allowed_probe "probe")
# Standalone core headers (standard library only, no other project header)
# every C++ layer may include: the project's error types.
set(everywhere "core/expected.hpp;core/errors.hpp")
# Core headers whose functions compute analysis: never included by a sink.
set(sink_forbidden "core/analysis.hpp;core/attribution.hpp;core/event_counts.hpp;core/overhead.hpp;core/plan_warnings.hpp;core/timeline.hpp")
# System headers core may not include (it is pure: no OS access).
set(core_forbidden_system "unistd.h;sys/;linux/;fcntl.h;pthread.h;sched.h;numa.h;spawn.h;signal.h;dirent.h")

set(errors "")
foreach(layer core_hdr core sys experiment sink cli cmd probe)
  string(REPLACE "_" "/" dir "${layer}")
  file(GLOB_RECURSE files "${SRC}/${dir}/*.cpp" "${SRC}/${dir}/*.hpp" "${SRC}/${dir}/*.c" "${SRC}/${dir}/*.h")
  foreach(f ${files})
    if(layer STREQUAL "core" AND f MATCHES "/core/hdr/")
      continue()  # checked as core/hdr
    endif()
    file(STRINGS "${f}" lines REGEX "^#include [\"<]")
    foreach(line ${lines})
      if(line MATCHES "^#include \"([a-z_]+(/hdr)?)/([^\"]+)\"")
        set(inc_layer "${CMAKE_MATCH_1}")
        set(path "${CMAKE_MATCH_1}/${CMAKE_MATCH_3}")
        if(inc_layer STREQUAL "core" AND path MATCHES "^core/hdr/")
          set(inc_layer "core/hdr")
        endif()
        set(ok FALSE)
        foreach(a ${allowed_${layer}})
          if(inc_layer STREQUAL a OR (a STREQUAL "core" AND inc_layer STREQUAL "core/hdr"))
            set(ok TRUE)
          endif()
        endforeach()
        if(path IN_LIST everywhere AND NOT layer STREQUAL "probe")
          set(ok TRUE)
        endif()
        if(layer STREQUAL "sink" AND path IN_LIST sink_forbidden)
          set(ok FALSE)
        endif()
        if(NOT ok)
          string(APPEND errors "  ${f}: ${line} (layer ${dir} may include: ${allowed_${layer}})\n")
        endif()
      elseif((layer STREQUAL "core" OR layer STREQUAL "core_hdr") AND line MATCHES "^#include <([^>]+)>")
        set(h "${CMAKE_MATCH_1}")
        foreach(bad ${core_forbidden_system})
          string(FIND "${h}" "${bad}" pos)
          if(pos EQUAL 0)
            string(APPEND errors "  ${f}: ${line} (core is pure: no OS headers)\n")
          endif()
        endforeach()
      endif()
    endforeach()
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "layer boundaries violated:\n${errors}")
endif()
