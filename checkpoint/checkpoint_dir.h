// The on-disk layout of a checkpoint directory (FORMAT.md): step-<N>/ directories holding
// rank-<r>.shard files and the MANIFEST that commits them, with the durable create, commit,
// remove and prune steps. Called by the Checkpointer; rank 0 alone prepares, commits and
// prunes. Thread-compatible: one caller at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/env.h"

namespace baton::checkpoint {

// The fsyncs of a save, named so that tests can prove each one matters by skipping it
// (Options::skip_sync_for_testing). Production code never sets anything but kNone.
// Ranks do not fsync step-<N> after creating their shards: rank 0's fsync of step-<N> after
// the MANIFEST rename makes every entry in it durable at once.
enum class SyncPoint { kNone, kShardFile, kRootDir, kManifestFile, kManifestDir };

class CheckpointDir {
 public:
  CheckpointDir(Env* env, std::string root, SyncPoint skip_sync = SyncPoint::kNone)
      : env_(env), root_(std::move(root)), skip_sync_(skip_sync) {}

  const std::string& root() const { return root_; }
  std::string StepDir(int64_t step) const;
  std::string ShardPath(int64_t step, int rank) const;
  std::string ManifestPath(int64_t step) const;

  // Creates the root if missing (its parent must exist) and makes that durable.
  absl::Status EnsureRoot();
  // Steps that have a step-<N> directory, newest first. Other names are ignored.
  absl::StatusOr<std::vector<int64_t>> ListSteps() const;
  absl::StatusOr<bool> HasManifest(int64_t step) const;

  // Before a save of `step` (rank 0): an existing step-<N> loses its MANIFEST first, durably,
  // so a crash can never pair it with new shards; then the directory exists, durably.
  absl::Status PrepareStep(int64_t step);
  // Commits `step` (rank 0): MANIFEST.tmp, fsync, rename to MANIFEST, fsync of step-<N>.
  absl::Status CommitManifest(int64_t step, const std::string& manifest_text);
  // Uncommits `step` durably (MANIFEST first), then removes everything in it.
  absl::Status RemoveStep(int64_t step);
  // After `committed_step` committed: keeps it and the newest keep_last-1 committed steps
  // below it, removes older committed steps and incomplete ones below it; steps above it
  // are left alone. keep_last 0 keeps every committed step. Returns the removed steps.
  absl::StatusOr<std::vector<int64_t>> Prune(int64_t committed_step, int keep_last);

  // Fsyncs `dir` unless `point` is the one skipped for testing.
  absl::Status SyncDir(const std::string& dir, SyncPoint point);
  SyncPoint skip_sync() const { return skip_sync_; }

 private:
  Env* const env_;
  const std::string root_;
  const SyncPoint skip_sync_;
};

}  // namespace baton::checkpoint
