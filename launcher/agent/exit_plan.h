// What one process's exit means to its attempt, decided with no processes, no clock and
// no lock: the agent describes the attempt (ExitView), and carries out the answer.
// - An exit the attempt cannot place yet (its launch or a daemon's exec still being
//   started outside the lock) waits until that start is committed.
// - An exit of a process it does not hold (seen already, or never its own) changes nothing.
// - The first process to fail gives the attempt its exit code or signal and, unless a stop
//   was ordered already, takes the node's other processes with it (SIGTERM, then SIGKILL
//   after the local failure grace, as torchrun does). A daemon killed because its exec
//   client hung up (mpirun going away) is not a failure of its own.
// - When nothing of the attempt runs any more (no rank, no daemon, none awaited or
//   starting), it has ended.
#pragma once

#include <cstddef>
#include <string>

#include "launcher/agent/process.h"

namespace baton {

// Whether anything of an attempt runs or is still to come: a rank, an exec'ed daemon, the
// daemon an mpi node awaits, or one being started. The one rule for Agent::Run::live().
inline bool AttemptLive(size_t ranks, size_t daemons, bool awaiting_exec, int execs_starting) {
  return ranks > 0 || daemons > 0 || awaiting_exec || execs_starting > 0;
}

// The attempt as its exit handling sees it, before the exit.
struct ExitView {
  bool launching = false;      // its launch is being started: its pids are not known yet
  int execs_starting = 0;      // daemons being started by Exec outside the lock
  bool awaiting_exec = false;  // an mpi node whose daemon has not come yet
  bool is_rank = false;        // the process is one of its live ranks
  bool is_daemon = false;      // ... or one of its live exec'ed daemons
  size_t ranks = 0;            // its live ranks, this one included
  size_t daemons = 0;          // its live daemons, this one included
  bool failed = false;         // a process of it failed before
  bool stop_ordered = false;   // told to stop (a Kill, an eviction, a local failure)
  bool has_message = false;    // its report says why already
};

struct ExitDecision {
  enum class Action {
    kWait,    // keep the exit until the start that made its process is committed
    kIgnore,  // not a process it holds
    kRank,    // remove the rank
    kDaemon,  // remove the daemon (its exec stream gets the status)
  };
  Action action = Action::kIgnore;
  bool first_failure = false;  // the attempt's exit code and signal are this process's
  std::string message;         // with first_failure, when its report says nothing yet
  bool stop_others = false;    // SIGTERM the group, SIGKILL after the local failure grace
  bool ended = false;          // nothing of it runs any more: finish it
};

// `hung_up`: a daemon the agent killed because its exec client went away.
ExitDecision DecideExit(const ExitView& v, const ExitStatus& status, bool hung_up);

}  // namespace baton
