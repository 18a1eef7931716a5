// SPDX-License-Identifier: Apache-2.0
// The one place that writes result files: each file is written to a
// temporary name in the same directory, fsync'ed and renamed, so a reader
// never sees half a file and a crash leaves the previous version intact.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace shootdown::sink {

class OutputDir {
 public:
  // Creates the directory if missing. Throws UsageError (exit 2) with a
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

// A file written as a stream and published whole: lines go to a temporary
// name next to `path` as they come (memory stays bounded however long the
// stream), commit() fsyncs and renames it over `path`. Until commit() a
// reader sees the previous `path` or none; without commit() (an exception,
// an early return) the destructor removes the temporary. `trace -o FILE`.
class AtomicStream {
 public:
  // Throws std::runtime_error when the temporary cannot be created.
  explicit AtomicStream(std::string path);
  ~AtomicStream();
  AtomicStream(const AtomicStream&) = delete;
  AtomicStream& operator=(const AtomicStream&) = delete;

  std::FILE* file() const { return file_; }
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }
  // Flush, fsync, rename. Throws std::runtime_error; on failure the
  // temporary is kept (its name is in the message) so nothing written is lost.
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
};

}  // namespace shootdown::sink
