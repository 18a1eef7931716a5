// SPDX-License-Identifier: Apache-2.0
// Test helper for tests/integration/hdr_java.sh: writes a deterministic
// multi-interval .hlog/.hgrm from synthetic data with our HdrHistogram code,
// and prints what our decoder reads back, so the script can compare both with
// the Java reference (HistogramLogProcessor and HdrCheck.java).
//
//   hdr_tool gen DIR          DIR/synthetic.hlog, synthetic.hgrm (untagged sum),
//                             synthetic.victim1.hgrm (tag victim1 sum),
//                             synthetic.stats (per interval, from the data)
//   hdr_tool stats FILE.hlog  per-interval stats decoded by our reader
//   hdr_tool hgrm FILE.hlog [TAG]  distribution of the sum of TAG's intervals
//                             (default: untagged), as .hgrm text
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/hdr/hgrm.hpp"
#include "core/hdr/hlog.hpp"
#include "core/hdr/java_format.hpp"

namespace hdr = shootdown::hdr;

namespace {

constexpr std::int64_t kHour = 3600LL * 1000 * 1000 * 1000;
constexpr std::int64_t kStartMsec = 1700000000000;

std::uint64_t g_seed = 7;
std::uint64_t next_random() {
  g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return g_seed >> 11;
}

// Victim-like batch latencies in ns: a 1-5 us floor, 20-40 us IPI stalls
// (more of them in the "release" intervals), rare multi-ms outliers.
hdr::Histogram synthetic_interval(int index, int samples) {
  hdr::Histogram h(1, kHour, 3);
  const std::uint64_t stall_per_mille = (index == 2 || index == 3) ? 80 : 5;
  for (int i = 0; i < samples; ++i) {
    const std::uint64_t r = next_random() % 1000;
    std::int64_t v = 0;
    if (r < stall_per_mille) {
      v = 20000 + static_cast<std::int64_t>(next_random() % 20000);
    } else if (r == 999) {
      v = 1000000 + static_cast<std::int64_t>(next_random() % 9000000);
    } else {
      v = 1000 + static_cast<std::int64_t>(next_random() % 4000);
    }
    h.record(v);
  }
  if (index == 1) h.record_n(0, 2);  // zero-length batches happen with coarse clocks
  return h;
}

// Per-interval line shared with HdrCheck.java. Timestamps as the Java reader
// derives them: absolute msec = (long)((start + base) * 1000).
std::string stats_line(const std::string& tag, double start_sec, double length_sec, double base_sec,
                       const hdr::Histogram& h) {
  const double abs_start = start_sec + base_sec;
  const auto start_ms = static_cast<std::int64_t>(abs_start * 1000.0);
  const auto end_ms = static_cast<std::int64_t>((abs_start + length_sec) * 1000.0);
  std::ostringstream o;
  o << (tag.empty() ? "-" : tag) << ' ' << start_ms << ' ' << end_ms << ' ' << h.total_count() << ' ' << h.min() << ' '
    << h.max();
  for (double p : {0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) o << ' ' << h.value_at_percentile(p);
  o << ' ' << hdr::java_fixed(h.mean(), 6) << ' ' << hdr::java_fixed(h.stddev(), 6);
  return o.str();
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) std::cerr << "hdr_tool: cannot write " << path << "\n";
  return static_cast<bool>(out);
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double as_written(double v) {
  return std::strtod(hdr::java_fixed(v, 3).c_str(), nullptr);
}

int gen(const std::string& dir) {
  hdr::LogHeader header;
  header.comments = {"Logged with shootdown hdr_tool (synthetic data)"};
  header.start_time_msec = kStartMsec;
  header.base_time_msec = kStartMsec;
  hdr::HlogWriter writer(header);
  const double base_sec = static_cast<double>(kStartMsec) / 1000.0;

  hdr::Histogram untagged_sum(1, kHour, 3);
  hdr::Histogram tagged_sum(1, kHour, 3);
  std::string stats;
  for (int i = 0; i < 6; ++i) {
    const double start = 0.5 * i + 0.0123;
    const double length = 0.5;
    const hdr::Histogram h = synthetic_interval(i, 4000 + 1500 * i);
    const std::string tag = (i % 3 == 2) ? "victim1" : "";
    if (auto st = writer.add(tag, start, length, h); !st) {
      std::cerr << "hdr_tool: " << st.error() << "\n";
      return 1;
    }
    (tag.empty() ? untagged_sum : tagged_sum).add(h);
    stats += stats_line(tag, as_written(start), as_written(length), base_sec, h) + "\n";
  }
  const bool ok = write_file(dir + "/synthetic.hlog", writer.text()) &&
                  write_file(dir + "/synthetic.hgrm", hdr::format_percentile_distribution(untagged_sum)) &&
                  write_file(dir + "/synthetic.victim1.hgrm", hdr::format_percentile_distribution(tagged_sum)) &&
                  write_file(dir + "/synthetic.stats", stats);
  return ok ? 0 : 1;
}

// Real `run --out` logs hold thousands of intervals, more than parse_log's
// ReadLimits (total counts) allow in memory at once: stream them, parsing the
// header lines together with one interval line at a time.
template <typename Fn>
bool for_each_interval(const std::string& path, Fn fn) {
  const auto text = read_file(path);
  if (!text) {
    std::cerr << "hdr_tool: cannot read " << path << "\n";
    return false;
  }
  std::string header;
  std::size_t pos = 0, lineno = 0;
  while (pos < text->size()) {
    std::size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) nl = text->size();
    const std::string line = text->substr(pos, nl - pos + 1);
    pos = nl + 1;
    ++lineno;
    if (line.empty() || line[0] == '#' || line[0] == '"' || line == "\n" || line == "\r\n") {
      header += line;
      continue;
    }
    auto log = hdr::parse_log(header + line);
    if (!log) {
      std::cerr << "hdr_tool: " << path << ": line " << lineno << ": " << log.error() << "\n";
      return false;
    }
    for (const hdr::LogInterval& iv : log->intervals) fn(*log, iv);
  }
  return true;
}

int stats(const std::string& path) {
  const bool ok = for_each_interval(path, [](const hdr::ParsedLog& log_, const hdr::LogInterval& iv) {
    const hdr::ParsedLog* log = &log_;
    // Java's reader: explicit BaseTime, else StartTime when the stamps look relative.
    double base = log->base_time_sec.value_or(0.0);
    if (!log->base_time_sec && log->start_time_sec && iv.start_sec < *log->start_time_sec - 365 * 24 * 3600.0)
      base = *log->start_time_sec;
    std::cout << stats_line(iv.tag, iv.start_sec, iv.length_sec, base, iv.histogram) << "\n";
  });
  return ok ? 0 : 1;
}

int hgrm(const std::string& path, const std::string& tag) {
  std::optional<hdr::Histogram> sum;
  const bool ok = for_each_interval(path, [&](const hdr::ParsedLog&, const hdr::LogInterval& iv) {
    if (iv.tag != tag) return;
    if (!sum)
      sum.emplace(iv.histogram.lowest_discernible(), iv.histogram.highest_trackable(),
                  iv.histogram.significant_figures());
    sum->add(iv.histogram);
  });
  if (!ok) return 1;
  if (!sum) {
    std::cerr << "hdr_tool: no intervals with tag '" << tag << "' in " << path << "\n";
    return 1;
  }
  std::cout << hdr::format_percentile_distribution(*sum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "gen") return gen(args[1]);
  if (args.size() == 2 && args[0] == "stats") return stats(args[1]);
  if ((args.size() == 2 || args.size() == 3) && args[0] == "hgrm")
    return hgrm(args[1], args.size() == 3 ? args[2] : "");
  std::cerr << "usage: hdr_tool gen DIR | stats FILE.hlog | hgrm FILE.hlog [TAG]\n";
  return 2;
}
