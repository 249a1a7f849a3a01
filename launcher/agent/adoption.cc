#include "launcher/agent/adoption.h"

#include <signal.h>

#include <algorithm>

#include "launcher/agent/job_files.h"

namespace baton {

AdoptedProcesses AdoptedProcessesOf(const v1::AgentAttemptRecord& record,
                                    const std::vector<pid_t>& pids, pid_t own_group,
                                    pid_t (*group_of)(pid_t)) {
  AdoptedProcesses out;
  auto running = [&](pid_t pid) {
    return pid > 1 && std::find(pids.begin(), pids.end(), pid) != pids.end();
  };
  out.pgid = BelievableGroup(record.process_group(), pids, own_group, group_of);
  for (const auto& p : record.processes()) {
    if (!running(p.pid())) continue;
    if (p.daemon()) {
      out.daemons.insert(p.pid());
    } else {
      out.ranks[p.pid()] = p.local_rank();
    }
    if (p.keeper() > 0) out.keepers[p.pid()] = p.keeper();
  }
  if (out.ranks.empty() && out.daemons.empty()) {
    const v1::Launch& l = record.launch();
    bool daemons = l.spec().launch_mode() == v1::LAUNCH_MODE_MPI && l.node_rank() > 0;
    for (pid_t p : pids) {
      if (p <= 1) continue;
      if (daemons) {
        out.daemons.insert(p);
      } else {
        out.ranks[p] = 0;
      }
    }
  }
  return out;
}

ExitStatus UnknownAdoptedExit(bool stop_ordered) {
  ExitStatus s;
  s.exit_code = stop_ordered ? 0 : 255;
  s.term_signal = stop_ordered ? SIGKILL : 0;
  return s;
}

}  // namespace baton
