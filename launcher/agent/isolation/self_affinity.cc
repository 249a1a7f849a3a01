#include "launcher/agent/isolation/self_affinity.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "launcher/agent/isolation/cpu_plan.h"

namespace baton {
namespace {

std::vector<uint32_t> Sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<uint32_t> Minus(const std::vector<uint32_t>& from, const std::vector<uint32_t>& out) {
  std::set<uint32_t> drop(out.begin(), out.end());
  std::vector<uint32_t> left;
  for (uint32_t c : from) {
    if (!drop.count(c)) left.push_back(c);
  }
  return left;
}

// The thread ids of this process now.
std::vector<pid_t> Threads() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return out;
}

}  // namespace

SelfAffinity::SelfAffinity(std::vector<uint32_t> node_cpus, std::vector<uint32_t> system_cpus)
    : node_(Sorted(std::move(node_cpus))), system_(Sorted(std::move(system_cpus))) {}

absl::Status SelfAffinity::Check(const std::vector<uint32_t>& node_cpus,
                                 const std::vector<uint32_t>& system_cpus) {
  std::vector<uint32_t> unknown = Minus(Sorted(system_cpus), node_cpus);
  if (unknown.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "--system-cpus names CPUs this node does not have: " + FormatCpuList(unknown) + " (it has " +
      FormatCpuList(node_cpus) + ")");
}

std::vector<uint32_t> SelfAffinity::Allowed(const std::vector<uint32_t>& exclusive) const {
  std::vector<uint32_t> left = Minus(system_.empty() ? node_ : system_, exclusive);
  if (left.empty()) left = Minus(node_, exclusive);
  return left;
}

absl::Status SelfAffinity::Apply(const std::vector<uint32_t>& exclusive) {
  std::vector<uint32_t> allowed = Allowed(exclusive);
  std::lock_guard<std::mutex> lock(mu_);
  if (allowed.empty()) return absl::OkStatus();  // inference holds every CPU: cannot happen
  cpu_set_t set;
  CPU_ZERO(&set);
  for (uint32_t c : allowed) {
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  // Twice: a thread started while the first round ran may have copied the old mask.
  for (int round = 0; round < 2; ++round) {
    for (pid_t tid : Threads()) {
      if (sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH) {
        return absl::InternalError("cannot set the CPU affinity of thread " + std::to_string(tid) +
                                   " to " + FormatCpuList(allowed) + ": " + std::strerror(errno));
      }
    }
  }
  current_ = std::move(allowed);
  return absl::OkStatus();
}

std::vector<uint32_t> SelfAffinity::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

}  // namespace baton
