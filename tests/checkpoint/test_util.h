// Test support shared by the checkpoint tests: deterministic buffer contents, byte damage,
// a scratch directory removed at scope exit, and a thread-safe log capture. Header-only.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace baton::checkpoint::testing {

// Bytes that depend on `seed` and on the position: a wrong offset or a stale step shows.
inline void FillPattern(void* data, size_t n, uint64_t seed) {
  unsigned char* p = static_cast<unsigned char*>(data);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i += 8) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    std::memcpy(p + i, &x, std::min<size_t>(8, n - i));
  }
}

inline bool MatchesPattern(const void* data, size_t n, uint64_t seed) {
  std::vector<unsigned char> expected(n);
  FillPattern(expected.data(), n, seed);
  return n == 0 || std::memcmp(expected.data(), data, n) == 0;
}

// Damages one byte of a file in place (xor 0x20).
inline void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x20));
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "baton-ckpt-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class LogCapture {
 public:
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    };
  }
  // Every line so far, joined with newlines.
  std::string Text() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string all;
    for (const std::string& l : lines_) all += l + "\n";
    return all;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace baton::checkpoint::testing
