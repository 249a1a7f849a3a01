// cgroup v1 backend: one cgroup per attempt in each hierarchy it uses (cpu, cpuacct,
// cpuset, memory, freezer, pids where mounted) under <mount>/<parent>, except the freezer
// where cgroup.kill makes it needless and devices unless GPUs are fenced (the attempt's
// processes join <mount>/<parent> there); on a hybrid host
// also one in the cgroup2 tree at <root>/unified, which classifies network traffic and
// kills the whole attempt through cgroup.kill. Limits: cpu.cfs_quota_us/cfs_period_us,
// cpu.shares, cpuset.cpus + cpuset.mems (both, before any process joins),
// memory.limit_in_bytes. Called by the Isolator; not thread-safe (the Isolator serialises).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/agent/isolation/cgroup_driver.h"

namespace baton {

class CgroupV1Driver : public CgroupDriver {
 public:
  // `mounts`: controller -> mount point (ParseV1Mounts); `unified`: the hybrid cgroup2
  // mount ("" when none) and `net_prefix` its name relative to /sys/fs/cgroup ("unified/").
  CgroupV1Driver(std::shared_ptr<CgroupFs> fs, std::map<std::string, std::string> mounts,
                 std::string parent, std::string unified = "", std::string net_prefix = "unified/");

  std::string mode() const override;
  absl::Status Init() override;
  absl::Status Create(const std::string& name) override;
  absl::Status Apply(const std::string& name, const CgroupLimits& limits) override;
  absl::Status LimitPids(const std::string& name, uint64_t max) override;
  absl::Status DenyDevices(const std::string& name, const std::vector<CharDevice>& denied) override;
  absl::Status CanFenceDevices() override;
  std::vector<std::string> ProcsFiles(const std::string& name) const override;
  // The node's own memory cgroup (the parent): v1 lets a cgroup with children hold
  // processes too, and the keeper only writes its record there, then exits.
  std::string ExitProcsFile() const override;
  absl::StatusOr<std::vector<pid_t>> Pids(const std::string& name) override;
  absl::Status KillAll(const std::string& name) override;
  absl::Status Remove(const std::string& name) override;
  absl::StatusOr<CgroupStats> Stats(const std::string& name) override;
  absl::StatusOr<std::vector<std::string>> List() override;
  std::string Path(const std::string& name) const override { return parent_ + "/" + name; }
  std::string NetPath(const std::string& name) const override;
  int NetLevel(const std::string& name) const override;

 private:
  // The directory of `name` in the hierarchy holding `controller` ("" when unmounted).
  std::string Dir(const std::string& controller, const std::string& name) const;
  // Fills `to`'s empty cpuset lists from `from`'s; `fresh`: `to` was just made (empty).
  absl::Status CopyCpuset(const std::string& from, const std::string& to, bool fresh);
  // The hierarchies to look for an attempt's processes in: attempt_roots_ once Init has
  // run, every one before (Recover may meet attempts an older agent made in any).
  const std::vector<std::string>& ScanRoots() const;

  const std::shared_ptr<CgroupFs> fs_;
  const std::map<std::string, std::string> mounts_;
  const std::string parent_, unified_, net_prefix_;
  std::vector<std::string> roots_;  // distinct hierarchies in use, unified last
  // Those in which each attempt has a cgroup of its own (set by Init); in the others its
  // processes join the node's cgroup, and devices gets one only to fence (DenyDevices).
  std::vector<std::string> attempt_roots_;
  bool ready_ = false;
};

}  // namespace baton
