// Test support: a training state of named host buffers with deterministic contents per
// (seed, buffer), registered with a Checkpointer and checked after a restore. Header-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint::testing {

class TestState {
 public:
  explicit TestState(const std::vector<size_t>& sizes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      names_.push_back("buffer-" + std::to_string(i));
      buffers_.emplace_back(sizes[i]);
    }
  }
  absl::Status Register(Checkpointer& ckpt) {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      absl::Status s = ckpt.RegisterHostBuffer(names_[i], buffers_[i].data(), buffers_[i].size());
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // Contents for `seed` (a step, mixed with a rank by the caller if needed).
  void Fill(uint64_t seed) {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      FillPattern(buffers_[i].data(), buffers_[i].size(), seed * 1000 + i);
    }
  }
  void Clear() {
    for (auto& b : buffers_) std::fill(b.begin(), b.end(), 0);
  }
  // Names the first buffer that differs from Fill(seed), or "" when all match.
  std::string Mismatch(uint64_t seed) const {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (!MatchesPattern(buffers_[i].data(), buffers_[i].size(), seed * 1000 + i)) {
        return names_[i];
      }
    }
    return "";
  }
  std::vector<char>& buffer(size_t i) { return buffers_[i]; }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<char>> buffers_;
};

}  // namespace baton::checkpoint::testing
