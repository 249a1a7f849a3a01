// A restarted agent re-adopting an attempt that still runs in its cgroups, decided with no
// processes, no clock and no lock: which of the processes in its cgroups are its ranks
// (with their local ranks) and daemons, which keeper watches each, which process group it
// may signal, and how one of them that is gone without a keeper's record ended. The
// record (attempt_record.h) is the previous agent's, so nothing in it is believed beyond
// what the cgroups confirm: a pid is taken only if it is in them now, the group only as
// BelievableGroup allows (never init's, never the agent's own).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "launcher/agent/process.h"
#include "proto/agent.pb.h"

namespace baton {

struct AdoptedProcesses {
  pid_t pgid = 0;                   // the group to signal; 0: none believed
  std::map<pid_t, uint32_t> ranks;  // pid -> local rank
  std::set<pid_t> daemons;          // Open MPI's daemons (exec'ed; never sent SIGUSR1)
  std::map<pid_t, pid_t> keepers;   // rank or daemon pid -> its keeper
};

// `pids`: the attempt's cgroup members now; `own_group` and `group_of` as for
// BelievableGroup. A record that names none of them (written before its processes were,
// or by an agent that kept no list) makes every pid a rank (local rank 0), or, on an mpi
// node after the first, a daemon (mpirun's signals reach its ranks through it).
AdoptedProcesses AdoptedProcessesOf(const v1::AgentAttemptRecord& record,
                                    const std::vector<pid_t>& pids, pid_t own_group,
                                    pid_t (*group_of)(pid_t));

// An adopted process gone with no exit record (its keeper died too, or it had none): a
// clean end if a stop was ordered (it was told to go, and it went), else a failure.
ExitStatus UnknownAdoptedExit(bool stop_ordered);

}  // namespace baton
