// The job state machine: which transitions exist (see JobState in api.proto). The
// JobManager refuses anything else, so a bug shows up as an error, not a strange job.
// And an attempt's MASTER_PORT. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <set>

#include "proto/api.pb.h"

namespace baton {

bool CanTransition(v1::JobState from, v1::JobState to);

// MASTER_PORT for a direct-mode attempt: 20000-31999 (below Linux's ephemeral range, so
// no outgoing connection holds it), spread by job and attempt, and none of `taken` (the
// ports of the live attempts led from the same node).
inline constexpr uint32_t kFirstMasterPort = 20000;
inline constexpr uint32_t kMasterPorts = 12000;
uint32_t PickMasterPort(uint64_t job_id, uint32_t attempt, const std::set<uint32_t>& taken);

}  // namespace baton
