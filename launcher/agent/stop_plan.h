// When an attempt's processes are told to stop and when they are killed, decided with no
// processes, no clock and no lock: the agent gives it the monotonic time and carries out
// what it answers.
// - A stop (a Kill, lease expiry, a local failure, the agent's shutdown) sends its signal
//   now and SIGKILLs at its deadline; a later stop only ever brings the kill sooner.
// - An eviction sends SIGUSR1 to the ranks once: a rank that has saved and put back
//   SIGUSR1's default action would die of a second. Its deadline is the latest Preempt's,
//   so a resent Preempt moves it (later while a checkpoint is written).
// - The kill comes at the earlier of the two deadlines; a deadline already past kills at
//   once, with no signal first.
#pragma once

#include "absl/time/time.h"

namespace baton {

class StopPlan {
 public:
  // What to do now, in order: the signal, then the kill.
  struct Now {
    int signal = 0;           // to send (0: none)
    bool ranks_only = false;  // to the ranks, not the process group
    bool kill = false;        // SIGKILL the group now, whatever runs (the deadline had passed)
    bool due = false;         // SIGKILL the group now if any of it runs
  };

  // A stop with `signal` (SIGKILL: the kill now), SIGKILL at `kill_at`.
  Now Stop(int signal, absl::Time kill_at, bool ranks_only, absl::Time now);
  // An eviction with SIGKILL at `deadline`.
  Now Preempt(absl::Time deadline, absl::Time now);
  // Cut off from the coordinator for `silent`: true, once, when that is past the attempt's
  // `stop_after` (zero: never, as for services). The agent then evicts it (Preempt with
  // its grace), and the coordinator replaces it only after that bound, its grace and a
  // margin, so the two never overlap.
  bool StopForDisconnect(absl::Duration silent, absl::Duration stop_after);
  // The kill's time has come (the agent kills the group if any of it runs).
  bool KillDue(absl::Time now) const { return now >= kill_at_; }
  // The group was killed or the attempt has ended: no kill is pending.
  void Clear();

  bool preempted() const { return preempted_; }
  absl::Time kill_at() const { return kill_at_; }

 private:
  Now Arm(Now out, absl::Time now);
  Now KillNow();

  absl::Time stop_kill_at_ = absl::InfiniteFuture();     // the stops' (only ever sooner)
  absl::Time preempt_kill_at_ = absl::InfiniteFuture();  // the latest Preempt's (it moves)
  absl::Time kill_at_ = absl::InfiniteFuture();          // the earlier of the two
  bool preempted_ = false;           // SIGUSR1 sent for an eviction (never twice)
  bool disconnect_stopped_ = false;  // stopped for lack of the coordinator (once)
};

}  // namespace baton
