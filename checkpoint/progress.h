// The progress file: rank 0's one-line JSON note of where checkpointing stands, read by the
// node agent when it reports an attempt's end (FORMAT.md, "Progress file"). Encoding and
// parsing live here so the agent can link the same code. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace baton::checkpoint {

struct Progress {
  int64_t attempt = 0;
  std::string state;            // "saving", "committed" or "failed"
  int64_t step = -1;            // the step that state is about
  int64_t committed_step = -1;  // step last committed (saved or restored); -1: none
  int64_t time_ms = 0;          // unix ms of the update
  friend bool operator==(const Progress&, const Progress&) = default;
};

// {"attempt":2,"state":"saving","step":120,"committed_step":110,"time_ms":1700000000000}
// followed by a newline.
std::string EncodeProgress(const Progress& progress);

// Accepts any flat JSON object holding at least the five keys above with values of the
// right types (strings without escapes, integers); unknown keys are ignored. InvalidArgument
// naming the problem otherwise.
absl::StatusOr<Progress> ParseProgress(const std::string& json);

}  // namespace baton::checkpoint
