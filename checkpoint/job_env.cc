#include "checkpoint/job_env.h"

#include <charconv>
#include <cstdlib>
#include <string>

#include "checkpoint/env.h"
#include "common/resources.h"

namespace baton::checkpoint {
namespace {

std::optional<std::string> Get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

absl::StatusOr<int64_t> AttemptFromEnv() {
  const std::optional<std::string> text = Get("BATON_ATTEMPT");
  if (!text) return 0;
  int64_t value = -1;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size() || value < 0) {
    return absl::InvalidArgumentError("BATON_ATTEMPT='" + *text +
                                      "' is not a non-negative integer");
  }
  return value;
}

absl::StatusOr<std::optional<int64_t>> GraceSecondsFromEnv() {
  const std::optional<std::string> text = Get("BATON_GRACE_SECONDS");
  if (!text) return std::optional<int64_t>();
  absl::StatusOr<uint64_t> seconds = ParseDurationSeconds(*text);
  if (!seconds.ok() || *seconds > (1ull << 40)) {
    return absl::InvalidArgumentError("BATON_GRACE_SECONDS='" + *text +
                                      "' is not a duration such as 30, 30s or 2m");
  }
  return std::optional<int64_t>(static_cast<int64_t>(*seconds));
}

std::string CheckpointDirFromEnv() { return Get("BATON_CHECKPOINT_DIR").value_or(""); }

std::string ProgressFilePath(const std::string& checkpoint_dir) {
  std::optional<std::string> path = Get("BATON_PROGRESS_FILE");
  if (path && !path->empty()) return *path;
  return JoinPath(checkpoint_dir, "PROGRESS");
}

}  // namespace baton::checkpoint
