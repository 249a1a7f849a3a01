#include "coordinator/job_state.h"

#include "proto/rpc_util.h"

namespace baton {

bool CanTransition(v1::JobState from, v1::JobState to) {
  using S = v1::JobState;
  auto any_of = [to](std::initializer_list<S> allowed) {
    for (S s : allowed) {
      if (s == to) return true;
    }
    return false;
  };
  switch (from) {
    case v1::JOB_STATE_UNSPECIFIED:
      return to == v1::JOB_STATE_PENDING;
    case v1::JOB_STATE_PENDING:
      return any_of({v1::JOB_STATE_SCHEDULED, v1::JOB_STATE_CANCELLED, v1::JOB_STATE_FAILED});
    case v1::JOB_STATE_SCHEDULED:
      // Straight to an end when a rank finishes or fails before its gang reports running.
      return any_of({v1::JOB_STATE_RUNNING, v1::JOB_STATE_PENDING, v1::JOB_STATE_SUCCEEDED,
                     v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED, v1::JOB_STATE_PREEMPTING});
    case v1::JOB_STATE_RUNNING:
      return any_of({v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED,
                     v1::JOB_STATE_PREEMPTING, v1::JOB_STATE_PENDING});
    case v1::JOB_STATE_PREEMPTING:
      return any_of({v1::JOB_STATE_COOLDOWN, v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED,
                     v1::JOB_STATE_CANCELLED, v1::JOB_STATE_PENDING});
    case v1::JOB_STATE_COOLDOWN:
      return any_of({v1::JOB_STATE_PENDING, v1::JOB_STATE_CANCELLED});
    case v1::JOB_STATE_SUCCEEDED:
    case v1::JOB_STATE_FAILED:
    case v1::JOB_STATE_CANCELLED:
      return false;
    default:
      return false;
  }
}

CancelAction DecideCancel(const v1::Job& job, bool live) {
  if (job.state() == v1::JOB_STATE_CANCELLED || !job.cancel_requested_by().empty()) {
    return CancelAction::kAlready;
  }
  if (IsTerminal(job.state())) return CancelAction::kRefused;
  return live ? CancelAction::kStop : CancelAction::kNow;
}

absl::StatusOr<v1::JobHold> DecideHold(const v1::Job& job, const std::string& user, bool admin,
                                       const std::string& reason, int64_t now_ms) {
  if (job.state() != v1::JOB_STATE_PENDING && job.state() != v1::JOB_STATE_COOLDOWN) {
    return absl::FailedPreconditionError("job " + std::to_string(job.id()) + " is " +
                                         StateName(job.state()) +
                                         "; only a waiting job (pending or cooling down) can "
                                         "be held");
  }
  return NewHold(user, admin || (job.has_hold() && job.hold().by_admin()), reason, now_ms);
}

v1::JobHold NewHold(const std::string& user, bool admin, const std::string& reason,
                    int64_t now_ms) {
  v1::JobHold hold;
  hold.set_by(user);
  hold.set_by_admin(admin);
  hold.set_reason(reason);
  hold.set_at_ms(now_ms);
  return hold;
}

absl::Status CheckRelease(const v1::Job& job, bool admin) {
  if (!job.has_hold()) {
    return absl::FailedPreconditionError("job " + std::to_string(job.id()) + " is not held");
  }
  if (job.hold().by_admin() && !admin) {
    return absl::PermissionDeniedError("job " + std::to_string(job.id()) +
                                       " is held by an admin (" + job.hold().by() +
                                       "); only an admin releases it");
  }
  return absl::OkStatus();
}

absl::Status CheckRequeue(const v1::Job& job, bool leaving, bool service, bool admin) {
  const std::string id = "job " + std::to_string(job.id());
  if (job.state() != v1::JOB_STATE_SCHEDULED && job.state() != v1::JOB_STATE_RUNNING) {
    return absl::FailedPreconditionError(id + " is " + StateName(job.state()) +
                                         "; only a started job (scheduled or running) is "
                                         "requeued");
  }
  if (leaving) {
    return absl::FailedPreconditionError(id + " is already stopping");
  }
  if (service && !admin) {
    return absl::PermissionDeniedError(id + " is a service: only an admin requeues it");
  }
  return absl::OkStatus();
}

std::string HoldText(const v1::JobHold& hold) {
  return "held by " + std::string(hold.by_admin() ? "admin " : "") + hold.by() +
         (hold.reason().empty() ? "" : ": " + hold.reason()) + "; baton release to let it start";
}

absl::StatusOr<LogSource> LogSourceOf(const v1::Job& job, const v1::LogsRequest& req) {
  if (job.attempts_size() == 0) {
    return absl::FailedPreconditionError("job " + std::to_string(job.id()) +
                                         " has not started yet; it has no logs");
  }
  const uint32_t attempt = req.attempt() ? req.attempt() : job.attempts_size();
  if (attempt > static_cast<uint32_t>(job.attempts_size())) {
    return absl::NotFoundError("job " + std::to_string(job.id()) + " has no attempt " +
                               std::to_string(attempt));
  }
  const v1::JobSpec& spec = job.spec();
  if (req.has_rank()) {
    const int64_t world = int64_t{spec.nodes()} * spec.ranks_per_node();
    if (req.rank() < 0 || req.rank() >= world) {
      return absl::InvalidArgumentError("rank " + std::to_string(req.rank()) + " is outside 0.." +
                                        std::to_string(world - 1));
    }
  }
  auto holds = [&](const v1::NodeAssignment& p) {
    if (!req.node().empty()) return p.node() == req.node();
    if (!req.has_rank() || spec.launch_mode() == v1::LAUNCH_MODE_MPI) return p.node_rank() == 0;
    const int64_t first = p.first_rank();
    return req.rank() >= first && req.rank() < first + int64_t{spec.ranks_per_node()};
  };
  for (const auto& p : job.attempts(attempt - 1).placement()) {
    if (holds(p)) return LogSource{p.node(), attempt};
  }
  return absl::NotFoundError("attempt " + std::to_string(attempt) + " of job " +
                             std::to_string(job.id()) + " did not run on node " + req.node());
}

uint32_t PickMasterPort(uint64_t job_id, uint32_t attempt, const std::set<uint32_t>& taken) {
  uint32_t start = static_cast<uint32_t>((job_id * 31 + attempt) % kMasterPorts);
  for (uint32_t i = 0; i < kMasterPorts; ++i) {
    uint32_t port = kFirstMasterPort + (start + i) % kMasterPorts;
    if (!taken.count(port)) return port;
  }
  return kFirstMasterPort + start;  // 12,000 gangs led from one node: not reachable
}

}  // namespace baton
