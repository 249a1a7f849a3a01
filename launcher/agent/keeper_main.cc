// baton-keeper: what the agent starts (without copying its own address space, process.cc)
// for each of a job's processes. It forks the process from its own small one, records how
// it ends and ends the same way (spawn_child.h); its arguments are keeper_args.h's.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/version.h"
#include "launcher/agent/keeper_args.h"
#include "launcher/agent/spawn_child.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("baton-keeper %s\n", baton::Version());
    return 0;
  }
  baton::KeeperArgs k;
  std::string error;
  if (!baton::DecodeKeeperArgs(args, &k, &error)) {
    std::fprintf(stderr, "baton-keeper: %s\n", error.c_str());
    if (k.msg_fd >= 0) {
      errno = EINVAL;
      baton::FailStep(k.msg_fd, baton::kStepKeeperArgs);
    }
    return 127;
  }
  baton::OwnedChildPlan child(k.argv, k.env, k.cgroup_procs);
  baton::KeeperPlan plan;
  plan.child = child.plan;
  plan.child.cwd = k.cwd.c_str();
  plan.child.out_fd = k.out_fd;
  plan.child.err_fd = k.err_fd;
  plan.child.group = k.group;
  plan.child.binding = &k.binding;
  plan.child.user = k.user ? &*k.user : nullptr;
  plan.msg_fd = k.msg_fd;
  plan.keep_fds = k.keep_fds.data();
  plan.keep_count = k.keep_fds.size();
  plan.exit_prefix = k.exit_prefix.c_str();
  baton::KeeperMain(plan);
}
