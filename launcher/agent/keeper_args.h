// How the agent tells baton-keeper what to start: all of it on the keeper's command line,
// none in its environment, which stays empty so that nothing of the job's (GLIBC_TUNABLES,
// say) reaches a process that runs as root. The job's environment follows its argv.
//   baton-keeper --msg-fd=N --out-fd=N [--err-fd=N] [--keep-fd=N]... [--group=PGID]
//                [--cgroup=PROCS]... [--exit-cgroup=PROCS] [--cpus=LIST] [--mems=LIST]
//                [--user=UID:GID[:G,G...]]
//                --cwd=DIR --exit-prefix=PREFIX --argc=N -- ARGV(N)... ENV...
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "launcher/agent/rank_bind.h"
#include "launcher/agent/spawn_child.h"

namespace baton {

struct KeeperArgs {
  std::vector<std::string> argv;  // the child's; not empty
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  std::string cwd;
  std::string exit_prefix;  // KeeperPlan::exit_prefix
  int msg_fd = -1;
  int out_fd = -1;
  int err_fd = -1;  // -1: stderr goes with stdout
  std::vector<int> keep_fds;
  pid_t group = 0;
  std::vector<std::string> cgroup_procs;
  // KeeperPlan::exit_cgroup_procs; empty: none.
  std::string exit_cgroup_procs;
  ProcessBinding binding;
  std::optional<ProcessUser> user;
};

// The descriptors the keeper is given, in the one order the zygote passes them
// (keeper_zygote.h): msg, out, err (when set), then the keep descriptors.
std::vector<int*> KeeperFds(KeeperArgs& k);

// The keeper's arguments after its argv[0].
std::vector<std::string> EncodeKeeperArgs(const KeeperArgs& k);

// Parses them back; false with `error` naming the first problem (an unknown or malformed
// option, a missing one, descriptors that are not small numbers, too few arguments); `out`
// then holds what was read before the problem.
bool DecodeKeeperArgs(const std::vector<std::string>& args, KeeperArgs* out, std::string* error);

}  // namespace baton
