// SPDX-License-Identifier: Apache-2.0
#include "cmd/run_support.hpp"

#include "core/errors.hpp"
#include "cmd/trace_session.hpp"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <random>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "cmd/commands.hpp"
#include "cmd/influx_out.hpp"
#include "core/timeline.hpp"
#include "core/units.hpp"
#include "sink/console.hpp"
#include "sink/csv.hpp"
#include "sink/html_report.hpp"
#include "sink/hdr_out.hpp"
#include "sink/json.hpp"
#include "sys/fs.hpp"

namespace shootdown::cmd {

std::string report_file_url(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(std::filesystem::path(dir) / "report.html", ec);
  if (ec) p = std::filesystem::path(dir) / "report.html";
  std::string url = "file://";
  for (unsigned char c : p.lexically_normal().string()) {
    if (std::isalnum(c) || std::strchr("/-._~", c))
      url += static_cast<char>(c);
    else
      url += fmt::format("%{:02X}", c);
  }
  return url;
}

exp::Hooks make_run_hooks(bool progress, bool quiet) {
  exp::Hooks h;
  auto phase = std::make_shared<std::string>("preparing");
  phase->reserve(256);  // a later phase name fits: the hook allocates nothing while the run measures
  h.on_phase = [phase, progress, quiet](const std::string& p) {
    *phase = p;
    if (quiet) return;
    if (progress)
      std::fprintf(stderr, "\r\033[K[%s]", p.c_str());
    else
      std::fprintf(stderr, "shootdown: %s\n", p.c_str());
  };
  if (progress) {
    h.on_tick = [phase](std::int64_t elapsed, std::size_t samples) {
      std::fprintf(stderr, "\r\033[K[%s] %.1f s, %zu samples", phase->c_str(), static_cast<double>(elapsed) / 1e9,
                   samples);
    };
  }
  h.prompt = [](const std::string& text) { std::fprintf(stderr, "\n%s\n", text.c_str()); };
  // Kernel evidence, honours --trace.
  h.open_trace = open_kernel_trace;
  return h;
}

void write_result_files(const Result& r, const Analysis& a, sink::OutputDir& out, bool with_result_json) {
  if (with_result_json) out.write("result.json", sink::result_to_string(r, a));
  out.write("timeline.csv", sink::timeline_csv(r));
  out.write("report.html", sink::html_report(r, a, build_timeline(r, a)));
  out.write("victim.hlog", sink::victim_hlog(r));
  out.write("victim.hgrm", sink::victim_hgrm(r));
}

std::string write_result_files_or_error(const Result& r, const Analysis& a, sink::OutputDir* out) {
  if (!out) return {};
  try {
    write_result_files(r, a, *out);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

void finish_run_outputs(const Result& r, const Analysis& a, sink::OutputDir* out, bool json,
                        const std::optional<influx::Url>& influx, bool quiet, bool verbose) {
  const std::string file_error = write_result_files_or_error(r, a, out);
  if (json) {
    std::fputs(sink::result_to_string(r, a).c_str(), stdout);
  } else {
    std::fputs(sink::console_summary(r, a, verbose).c_str(), stdout);
    if (out && file_error.empty()) std::printf("results: %s/\n", out->path().c_str());
  }
  std::fflush(stdout);
  if (influx) send_to_influx_or_warn(r, a, *influx, out && file_error.empty() ? out->path() : std::string(), quiet);
  if (!file_error.empty()) throw RuntimeError("writing results: " + file_error);
}

void check_output_file(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  if (sys::is_directory(path))
    throw UsageError(fmt::format("{} '{}': is a directory (give a file name)", option, path));
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (const Status writable = sys::writable_directory(dir); !writable)
    throw UsageError(fmt::format("{} '{}': cannot write in {}: {} (give a file in a writable directory)", option, path,
                                 dir, writable.error()));
}

void emit_report(const std::string& text, const std::string& path, std::FILE* fallback) {
  if (path.empty()) {
    std::fputs(text.c_str(), fallback);
    std::fflush(fallback);
    return;
  }
  try {
    sink::write_file_atomic(path, text);
  } catch (const std::exception& e) {
    // Nothing measured is lost because a sink failed: the report goes to stderr.
    std::fputs(text.c_str(), stderr);
    throw RuntimeError(fmt::format("writing {}: {} (the report is on stderr above)", path, e.what()));
  }
}

}  // namespace shootdown::cmd
