// The worker contract's environment (docs/contracts.md "The worker contract") as the
// checkpoint library reads it: BATON_ATTEMPT, BATON_CHECKPOINT_DIR, BATON_GRACE_SECONDS,
// BATON_PROGRESS_FILE.
// Called by the Checkpointer and PreemptionWatcher at creation. Thread-safe as long as
// nothing calls setenv concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace baton::checkpoint {

// BATON_ATTEMPT: a non-negative integer; 0 when unset. A bad value is InvalidArgument
// naming the variable and the value.
absl::StatusOr<int64_t> AttemptFromEnv();

// BATON_GRACE_SECONDS: "30", "30s", "2m"; nullopt when unset. Bad values are
// InvalidArgument.
absl::StatusOr<std::optional<int64_t>> GraceSecondsFromEnv();

// BATON_CHECKPOINT_DIR, or "" when unset.
std::string CheckpointDirFromEnv();

// BATON_PROGRESS_FILE when set, else <checkpoint_dir>/PROGRESS.
std::string ProgressFilePath(const std::string& checkpoint_dir);

}  // namespace baton::checkpoint
