#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/analysis.hpp"
#include "sink/atomic_writer.hpp"
#include "sink/console.hpp"
#include "sink/csv.hpp"
#include "sink/json.hpp"

using namespace shootdown;

namespace {
Result small() {
  Result r;
  r.plan.batch = 65536;
  r.plan.report_every = 65536 * 2;
  r.plan.chunk_size = 1 << 30;
  r.plan.release = ReleaseStrategy::kMunmap;
  r.plan.culprit_cpu = 0;
  r.plan.victim_cpus = {1};
  VictimSamples v;
  v.cpu = 1;
  v.pages_per_batch = 16;
  for (int i = 1; i <= 4; ++i) {
    v.end_ns.push_back(i * 1000);
    v.lat_ns.push_back(1000);
  }
  r.victims.push_back(v);
  Release rel;
  rel.before_ns = 2500;
  rel.after_ns = 2600;
  r.releases.push_back(rel);
  build_intervals(r);
  return r;
}
}  // namespace

TEST(Sink, JsonHasSchemaAndPhases) {
  Result r = small();
  const auto j = nlohmann::json::parse(sink::result_to_string(r, analyze(r)));
  EXPECT_EQ(j["schema_version"], kResultSchemaVersion);
  EXPECT_EQ(j["victims"][0]["phases"]["baseline"]["per_batch_ns"]["count"], 2);
  EXPECT_EQ(j["releases"][0]["duration_ns"], 100);
  EXPECT_EQ(j["intervals"].size(), 2u);
  EXPECT_EQ(j["raw_windows"][0]["latency_ns"].size(), 4u);
}

TEST(Sink, CsvOneRowPerInterval) {
  Result r = small();
  const std::string csv = sink::timeline_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.rfind("victim_cpu,interval,start_ns", 0), 0u);
}

TEST(Sink, ConsoleTableFitsIn80Columns) {
  Result r = small();
  const std::string out = sink::console_summary(r, analyze(r));
  std::size_t start = 0;
  while (start < out.size()) {
    auto nl = out.find('\n', start);
    if (nl == std::string::npos) nl = out.size();
    EXPECT_LE(nl - start, 80u) << out.substr(start, nl - start);
    start = nl + 1;
  }
  EXPECT_NE(out.find("baseline"), std::string::npos);
  EXPECT_NE(out.find("p99.9"), std::string::npos);
}

TEST(Sink, AtomicWriterReplacesAndRejectsUnwritable) {
  const auto dir = std::filesystem::temp_directory_path() / ("sd-sink-" + std::to_string(::getpid()));
  sink::OutputDir out(dir.string());
  out.write("a.txt", "one");
  out.write("a.txt", "two");
  std::ifstream in(dir / "a.txt");
  std::string s;
  in >> s;
  EXPECT_EQ(s, "two");
  std::size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);  // no temp files left
  std::filesystem::remove_all(dir);
  EXPECT_THROW(sink::OutputDir("/proc/self/no/such"), std::invalid_argument);
}
