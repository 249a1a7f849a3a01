#include "launcher/agent/stop_plan.h"

#include <signal.h>

#include <algorithm>

namespace baton {

StopPlan::Now StopPlan::Arm(Now out, absl::Time now) {
  kill_at_ = std::min(stop_kill_at_, preempt_kill_at_);
  out.due = kill_at_ <= now;
  return out;
}

StopPlan::Now StopPlan::Stop(int signal, absl::Time kill_at, bool ranks_only, absl::Time now) {
  if (signal == SIGKILL || kill_at <= now) {
    return KillNow();
  }
  stop_kill_at_ = std::min(stop_kill_at_, kill_at);
  Now out;
  out.signal = signal;
  out.ranks_only = ranks_only;
  return Arm(out, now);
}

StopPlan::Now StopPlan::Preempt(absl::Time deadline, absl::Time now) {
  Now out;
  if (!preempted_) {
    preempted_ = true;
    if (deadline <= now) return KillNow();
    out.signal = SIGUSR1;
    out.ranks_only = true;
  }
  preempt_kill_at_ = deadline;
  return Arm(out, now);
}

bool StopPlan::StopForDisconnect(absl::Duration silent, absl::Duration stop_after) {
  if (disconnect_stopped_ || stop_after <= absl::ZeroDuration() || silent <= stop_after) {
    return false;
  }
  disconnect_stopped_ = true;
  return true;
}

StopPlan::Now StopPlan::KillNow() {
  Clear();
  Now out;
  out.kill = true;
  return out;
}

void StopPlan::Clear() { stop_kill_at_ = preempt_kill_at_ = kill_at_ = absl::InfiniteFuture(); }

}  // namespace baton
