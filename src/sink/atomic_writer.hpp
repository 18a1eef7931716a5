// The one place that writes result files: each file is written to a
// temporary name in the same directory, fsync'ed and renamed, so a reader
// never sees half a file and a crash leaves the previous version intact.
#pragma once

#include <string>
#include <vector>

namespace shootdown::sink {

class OutputDir {
 public:
  // Creates the directory if missing. Throws std::invalid_argument with a
  // one-line reason when it cannot be created or written (checked by
  // creating and removing a probe file), so bad --out fails before a run.
  explicit OutputDir(std::string path);

  const std::string& path() const { return path_; }
  // Atomically replaces path()/name with content. Throws std::runtime_error.
  void write(const std::string& name, const std::string& content);
  const std::vector<std::string>& written() const { return written_; }

 private:
  std::string path_;
  std::vector<std::string> written_;
};

// Same, for a single file path (--json FILE and friends).
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace shootdown::sink
