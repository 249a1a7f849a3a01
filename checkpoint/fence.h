// The fence of a checkpoint directory (FORMAT.md "Fence"): which job attempt owns it now.
// A new attempt raises it when it starts (Checkpointer::Create on rank 0), recording the
// newest step committed at that moment; from then on an older attempt that still runs (a
// partitioned node, a dead agent's orphans) can no longer commit — its saves fail with
// FailedPrecondition "superseded by attempt N" and touch nothing — its preemption watcher
// tells it to stop, and restore ignores any step it committed past the fence. The file is
// replaced atomically (temp, fsync, rename, fsync of the directory). No lock is needed, so
// it works on any shared filesystem: a stale commit that races the raise is either counted
// by it (it landed first, and is complete) or lands past the fence step, where restore
// ignores it and the next raise uncommits it. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/env.h"

namespace baton::checkpoint {

struct Fence {
  int64_t attempt = 0;  // the newest attempt that started on the directory (0: none yet)
  int64_t step = -1;    // the newest committed step when it did (-1: none)
};

inline constexpr char kFenceFile[] = "FENCE";

// {0, -1} when the directory has no fence; DataLoss naming the file when it is damaged.
absl::StatusOr<Fence> ReadFence(Env* env, const std::string& root);

// FailedPrecondition "superseded by attempt N: …" (what stale saves and creates return).
absl::Status Superseded(int64_t by);
bool IsSuperseded(const absl::Status& status);

// Whether restore may use a step that `manifest_attempt` committed: the fence's own and
// later attempts' steps, and older attempts' steps up to the fence step.
inline bool FenceAllows(const Fence& fence, int64_t manifest_attempt, int64_t step) {
  return manifest_attempt >= fence.attempt || step <= fence.step;
}

// Superseded when a newer attempt than `attempt` holds the directory's fence.
absl::Status CheckFence(Env* env, const std::string& root, int64_t attempt);

// Rank 0 of attempt `attempt` starting: Superseded when a newer attempt
// already holds the fence; the fence unchanged when `attempt` holds it already; else every
// committed step the old fence disallows is uncommitted (its MANIFEST removed, durably)
// and the fence becomes {attempt, newest committed step left}. Returns the fence.
absl::StatusOr<Fence> RaiseFence(Env* env, CheckpointDir& dir, int64_t attempt);

}  // namespace baton::checkpoint
