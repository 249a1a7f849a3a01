// The agent's record of each attempt it started (AgentAttemptRecord, agent.proto): one
// file in the attempt's directory, from which a restarted agent re-adopts the attempt.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/agent.pb.h"

namespace baton {

inline constexpr char kAttemptRecordFile[] = "attempt.pb";

// Replaces the record in `dir`, through a rename (a reader never sees half of it), root's
// and 0600. Not synced to disk: it describes processes and cgroups that end with the boot.
absl::Status WriteAttemptRecord(const std::string& dir, const v1::AgentAttemptRecord& record);

// The record in `dir`, a regular file owned by this process's user. When there is none but
// an older agent's records are there (launch.pb and a text `ranks` file, for attempts that
// ran across an upgrade), those are read into one. The error names the file and problem.
absl::StatusOr<v1::AgentAttemptRecord> ReadAttemptRecord(const std::string& dir);

}  // namespace baton
