// The job state machine: which transitions exist (see JobState in api.proto). The
// JobManager refuses anything else, so a bug shows up as an error, not a strange job.
// What a cancel does in each state, where a job's output is, and an attempt's MASTER_PORT.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "proto/api.pb.h"

namespace baton {

bool CanTransition(v1::JobState from, v1::JobState to);

// What a cancel (by a caller allowed to) does to a job, as Slurm's scancel or `kubectl
// delete` would: nothing more when it is cancelled or stopping for a cancel already (a
// repeated cancel succeeds); refused when it ended otherwise; a stop when it holds a live
// attempt (its processes get SIGTERM and the job's grace, and it is CANCELLED once they
// have ended); else CANCELLED at once (waiting in the queue or cooling down).
enum class CancelAction { kAlready, kRefused, kStop, kNow };
CancelAction DecideCancel(const v1::Job& job, bool live);

// Hold and release (scontrol hold/release; the caller is already allowed to act on the
// job). A hold is a flag on a waiting job (PENDING or COOLDOWN), not a state:
// FailedPrecondition for any other. Holding a held job replaces its reason; an admin's
// hold stays an admin's. Release: FailedPrecondition when it is not held,
// PermissionDenied when an admin held it and the caller is not one.
absl::StatusOr<v1::JobHold> DecideHold(const v1::Job& job, const std::string& user, bool admin,
                                       const std::string& reason, int64_t now_ms);
absl::Status CheckRelease(const v1::Job& job, bool admin);
// A hold by `user` (submit --hold makes one with the job).
v1::JobHold NewHold(const std::string& user, bool admin, const std::string& reason, int64_t now_ms);
// Requeue (scontrol requeue; the caller may act on the job): only a started job
// (SCHEDULED or RUNNING) that is not already leaving (`leaving`: evicted, cancelled or
// stopping), else FailedPrecondition; a service's (`service`) only by an admin, else
// PermissionDenied.
absl::Status CheckRequeue(const v1::Job& job, bool leaving, bool service, bool admin);
// What the scheduler and `baton queue` say of a held job: "held by alice: waiting for the
// dataset" ("held by admin root: …" for an admin's hold).
std::string HoldText(const v1::JobHold& hold);

// Which attempt of `job` and which node of it hold the output `req` asks for: the attempt
// asked (0: the last); the node asked, else the rank's (direct mode: each node logs its own
// ranks; mpi mode: mpirun on node rank 0 collects every rank), else node rank 0. The error
// names what is wrong: no attempt yet, no such attempt, a rank outside the job, a node the
// attempt did not run on.
struct LogSource {
  std::string node;
  uint32_t attempt = 0;
};
absl::StatusOr<LogSource> LogSourceOf(const v1::Job& job, const v1::LogsRequest& req);

// MASTER_PORT for a direct-mode attempt: 20000-31999 (below Linux's ephemeral range, so
// no outgoing connection holds it), spread by job and attempt, and none of `taken` (the
// ports of the live attempts led from the same node).
inline constexpr uint32_t kFirstMasterPort = 20000;
inline constexpr uint32_t kMasterPorts = 12000;
uint32_t PickMasterPort(uint64_t job_id, uint32_t attempt, const std::set<uint32_t>& taken);

}  // namespace baton
