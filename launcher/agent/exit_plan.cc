#include "launcher/agent/exit_plan.h"

namespace baton {

ExitDecision DecideExit(const ExitView& v, const ExitStatus& status, bool hung_up) {
  ExitDecision d;
  if (v.launching || (v.execs_starting > 0 && !v.is_rank && !v.is_daemon)) {
    d.action = ExitDecision::Action::kWait;
    return d;
  }
  if (!v.is_rank && !v.is_daemon) return d;  // kIgnore
  d.action = v.is_daemon ? ExitDecision::Action::kDaemon : ExitDecision::Action::kRank;
  bool counts = !(v.is_daemon && hung_up);
  if (counts && !status.ok() && !v.failed) {
    d.first_failure = true;
    if (!v.has_message) {
      d.message = status.term_signal
                      ? "a rank was killed by signal " + std::to_string(status.term_signal)
                      : "a rank exited with code " + std::to_string(status.exit_code);
    }
  }
  const bool live = AttemptLive(v.ranks - (v.is_rank ? 1 : 0), v.daemons - (v.is_daemon ? 1 : 0),
                                v.awaiting_exec, v.execs_starting);
  d.stop_others = d.first_failure && live && !v.stop_ordered;
  d.ended = !live;
  return d;
}

}  // namespace baton
