// The job state machine: which transitions exist (see JobState in baton.proto). The
// JobManager refuses anything else, so a bug shows up as an error, not a strange job.
// Pure functions; thread-safe.
#pragma once

#include "proto/api.pb.h"

namespace baton {

bool CanTransition(v1::JobState from, v1::JobState to);

}  // namespace baton
