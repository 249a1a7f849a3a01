// baton-keeper: what the agent starts (without copying its own address space, process.cc)
// for each of a job's processes. It forks the process from its own small one, records how
// it ends and ends the same way (spawn_child.h); its arguments are keeper_args.h's.
// `baton-keeper --zygote FD` is the agent's keeper zygote instead (keeper_zygote.h): it
// forks a keeper per request on socket FD.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/version.h"
#include "launcher/agent/keeper_args.h"
#include "launcher/agent/keeper_zygote.h"
#include "launcher/agent/spawn_child.h"

namespace {

// Starts the child and keeps it. `fds`, when given, are the descriptors the zygote received
// (its wire's order), in place of the numbers the arguments name.
[[noreturn]] void RunKeeper(const std::vector<std::string>& args, const std::vector<int>* fds) {
  baton::KeeperArgs k;
  std::string error;
  bool decoded = baton::DecodeKeeperArgs(args, &k, &error);
  if (fds != nullptr) {
    std::vector<int*> slots = baton::KeeperFds(k);
    if (decoded && fds->size() != slots.size()) {
      decoded = false;
      error = "the zygote passed " + std::to_string(fds->size()) + " descriptors, not " +
              std::to_string(slots.size());
    }
    if (decoded) {
      for (size_t i = 0; i < slots.size(); ++i) *slots[i] = (*fds)[i];
    } else {
      k.msg_fd = fds->empty() ? -1 : fds->front();  // where the failure is reported
    }
  }
  if (!decoded) {
    std::fprintf(stderr, "baton-keeper: %s\n", error.c_str());
    if (k.msg_fd >= 0) {
      errno = EINVAL;
      baton::FailStep(k.msg_fd, baton::kStepKeeperArgs);
    }
    std::_Exit(127);
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
  if (!k.exit_cgroup_procs.empty()) plan.exit_cgroup_procs = k.exit_cgroup_procs.c_str();
  baton::KeeperMain(plan);
}

void RunZygoteKeeper(const std::vector<std::string>& args, const std::vector<int>& fds) {
  RunKeeper(args, &fds);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("baton-keeper %s\n", baton::Version());
    return 0;
  }
  if (args.size() == 2 && args[0] == "--zygote") {
    char* end = nullptr;
    long fd = std::strtol(args[1].c_str(), &end, 10);
    if (end == args[1].c_str() || *end != '\0' || fd < 3 || fd > 1 << 20) {
      std::fprintf(stderr, "baton-keeper: --zygote takes a descriptor, not '%s'\n",
                   args[1].c_str());
      return 2;
    }
    baton::ZygoteMain(static_cast<int>(fd), RunZygoteKeeper);
  }
  RunKeeper(args, nullptr);
}
