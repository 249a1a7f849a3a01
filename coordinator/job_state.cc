#include "coordinator/job_state.h"

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

uint32_t PickMasterPort(uint64_t job_id, uint32_t attempt, const std::set<uint32_t>& taken) {
  uint32_t start = static_cast<uint32_t>((job_id * 31 + attempt) % kMasterPorts);
  for (uint32_t i = 0; i < kMasterPorts; ++i) {
    uint32_t port = kFirstMasterPort + (start + i) % kMasterPorts;
    if (!taken.count(port)) return port;
  }
  return kFirstMasterPort + start;  // 12,000 gangs led from one node: not reachable
}

}  // namespace baton
