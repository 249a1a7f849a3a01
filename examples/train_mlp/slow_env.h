// A filesystem that takes its time: the checkpoint library's Env with every shard fsync
// held back by a fixed delay, as on a slow shared filesystem. train_mlp --slow-save-ms
// uses it so that an eviction's checkpoint outlasts the grace period in tests and
// benchmarks (the coordinator then extends the grace while the save makes progress).
// Thread-safe like the Env it wraps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "checkpoint/env.h"

namespace baton::examples {

class SlowSyncEnv : public checkpoint::EnvWrapper {
 public:
  // `base` is not owned; each shard file's Sync sleeps `sync_delay_ms` first.
  SlowSyncEnv(checkpoint::Env* base, int64_t sync_delay_ms)
      : EnvWrapper(base), delay_ms_(sync_delay_ms) {}

  absl::StatusOr<std::unique_ptr<checkpoint::WritableFile>> NewWritableFile(
      const std::string& path, const checkpoint::WritableFileOptions& options) override;

 private:
  const int64_t delay_ms_;
};

}  // namespace baton::examples
