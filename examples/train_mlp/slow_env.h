// A filesystem that takes its time: the checkpoint library's Env with every shard fsync
// held back by a fixed delay, as on a slow shared filesystem. train_mlp --slow-save-ms
// uses it so that an eviction's checkpoint outlasts the grace period in tests and
// benchmarks (the coordinator then extends the grace while the save makes progress).
// Thread-safe like the Env it wraps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/env.h"

namespace baton::examples {

class SlowSyncEnv : public checkpoint::Env {
 public:
  // `base` is not owned; each shard file's Sync sleeps `sync_delay_ms` first.
  SlowSyncEnv(checkpoint::Env* base, int64_t sync_delay_ms)
      : base_(base), delay_ms_(sync_delay_ms) {}

  absl::StatusOr<std::unique_ptr<checkpoint::WritableFile>> NewWritableFile(
      const std::string& path, const checkpoint::WritableFileOptions& options) override;
  absl::StatusOr<std::unique_ptr<checkpoint::ReadableFile>> NewReadableFile(
      const std::string& path) override {
    return base_->NewReadableFile(path);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    return base_->FileSize(path);
  }
  absl::StatusOr<bool> FileExists(const std::string& path) override {
    return base_->FileExists(path);
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    return base_->ListDir(dir);
  }
  absl::Status CreateDir(const std::string& dir) override { return base_->CreateDir(dir); }
  absl::Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  absl::Status RemoveDir(const std::string& dir) override { return base_->RemoveDir(dir); }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  absl::Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }

 private:
  checkpoint::Env* const base_;
  const int64_t delay_ms_;
};

}  // namespace baton::examples
