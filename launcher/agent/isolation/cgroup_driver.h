// The cgroup driver interface: one cgroup (or one per v1 hierarchy) per job attempt,
// under the agent's parent cgroup. Backends: CgroupV2Driver, CgroupV1Driver (real files
// through a CgroupFs), and a recording fake in the tests. Used by the Isolator, which
// serialises calls; implementations need not be thread-safe.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/cgroup_fs.h"
#include "launcher/agent/isolation/device_filter.h"

namespace baton {

// What one attempt may use. Apply sets every field, so it is also how limits change live.
struct CgroupLimits {
  std::string cpus;               // cpuset ("2-3"); "" keeps every CPU of the parent
  std::string mems;               // NUMA nodes ("0"); "" keeps the parent's
  uint64_t cpu_quota_millis = 0;  // CFS quota per period, in millicores; 0: unlimited
  uint64_t cpu_weight = 100;      // v2 weight 1..10000 (v1: shares = weight * 1024 / 100)
  uint64_t memory_max_bytes = 0;  // 0: unlimited
  bool operator==(const CgroupLimits&) const = default;
};

struct CgroupStats {
  uint64_t cpu_usage_us = 0;
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  uint64_t throttled_us = 0;
  uint64_t memory_current_bytes = 0;
  uint64_t memory_peak_bytes = 0;
};

constexpr uint64_t kCfsPeriodUs = 100'000;
// The least CFS quota the kernel takes (1 ms a period; less is EINVAL): an attempt of a
// few millicores gets this much.
constexpr uint64_t kMinCfsQuotaUs = 1000;
inline uint64_t CfsQuotaUs(uint64_t cpu_millis) {
  return std::max(kMinCfsQuotaUs, cpu_millis * kCfsPeriodUs / 1000);
}

class CgroupDriver {
 public:
  virtual ~CgroupDriver() = default;
  virtual std::string mode() const = 0;  // CgroupLayoutName of what it drives
  // Creates the parent chain (and enables controllers) once; Create calls it too.
  // PermissionDenied / read-only errors tell the agent it has no cgroup rights here.
  virtual absl::Status Init() = 0;
  // Creates the attempt's cgroup(s), and the parent chain on first use. Idempotent; on a
  // failure removes what the call created, in reverse order.
  virtual absl::Status Create(const std::string& name) = 0;
  virtual absl::Status Apply(const std::string& name, const CgroupLimits& limits) = 0;
  // Most processes and threads the attempt may have (pids.max); 0: no limit. A fork bomb
  // stops there, and the node's other jobs and the agent keep their room.
  virtual absl::Status LimitPids(const std::string& name, uint64_t max) = 0;
  // Character devices the attempt may not open (device_filter.h); set once, before any
  // process joins. FailedPrecondition when this host cannot fence devices.
  virtual absl::Status DenyDevices(const std::string& name,
                                   const std::vector<CharDevice>& denied) = 0;
  // OK when DenyDevices can work on this host (checked at agent start on nodes with GPUs).
  virtual absl::Status CanFenceDevices() { return absl::OkStatus(); }
  // Where a keeper goes once its child has ended, before writing the exit record
  // (SpawnOptions::exit_cgroup_procs): a cgroup.procs file of a memory cgroup that lasts.
  // Empty: nowhere, the keeper stays.
  virtual std::string ExitProcsFile() const { return ""; }
  // The CPUs a process in that exit cgroup may run on: the ones no inference attempt holds
  // ("": all). Only where the exit cgroup is a cpuset of its own (v2); v1 moves the keeper
  // in the memory hierarchy alone, so it keeps the attempt's CPUs.
  virtual absl::Status LimitExitCpus(const std::string& cpus) {
    (void)cpus;
    return absl::OkStatus();
  }
  // The cgroup.procs files a child writes itself into before exec.
  virtual std::vector<std::string> ProcsFiles(const std::string& name) const = 0;
  virtual absl::StatusOr<std::vector<pid_t>> Pids(const std::string& name) = 0;
  // SIGKILL to every process in the attempt's cgroup; atomic where the kernel offers
  // cgroup.kill, otherwise frozen first (v1 freezer) or repeated until none is left.
  virtual absl::Status KillAll(const std::string& name) = 0;
  // Idempotent; FailedPrecondition while processes remain.
  virtual absl::Status Remove(const std::string& name) = 0;
  virtual absl::StatusOr<CgroupStats> Stats(const std::string& name) = 0;
  // The attempt cgroups that exist under the parent (to re-adopt after a restart).
  virtual absl::StatusOr<std::vector<std::string>> List() = 0;
  // The cgroup as people read it: "baton/n1/job-3-a1".
  virtual std::string Path(const std::string& name) const = 0;
  // Where the attempt sits in a cgroup v2 tree, as nftables' `socket cgroupv2` matches
  // it: path relative to /sys/fs/cgroup and depth in the v2 hierarchy. Empty path: the
  // host has no v2 tree, so no network classification.
  virtual std::string NetPath(const std::string& name) const = 0;
  virtual int NetLevel(const std::string& name) const = 0;
};

// Shared by the backends.
namespace cgroup_util {
// "key value" lines (cpu.stat, memory.stat) -> map.
std::map<std::string, uint64_t> ParseKeyValues(const std::string& text);
uint64_t ParseU64(const std::string& text);  // 0 when not a number ("max")
// Whitespace-separated words (cgroup.controllers, cgroup.subtree_control).
std::vector<std::string> Words(const std::string& text);
// SIGKILLs what `procs` lists until it lists nothing (bounded); for kernels without
// cgroup.kill or a freezer.
absl::Status KillUntilEmpty(CgroupFs* fs, const std::string& procs);
// Attempt cgroups are named job-<id>-a<attempt>.
bool IsAttemptName(const std::string& name);
// "a/b/c" -> {"a", "a/b", "a/b/c"}.
std::vector<std::string> PathPrefixes(const std::string& path);
}  // namespace cgroup_util

}  // namespace baton
