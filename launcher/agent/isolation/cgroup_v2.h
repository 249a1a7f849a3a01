// cgroup v2 backend: one leaf cgroup per attempt under <root>/<parent>, with cpu, cpuset
// and memory enabled through every ancestor's cgroup.subtree_control. v2 keeps processes
// out of cgroups that enable controllers for their children, so an agent living in one of
// those (systemd's delegated unit cgroup) first moves itself into a leaf "agent" there.
// A leaf "exit" next to the attempts holds keepers while they write exit records, so that
// the records' page cache is not charged to (and does not keep alive) an attempt's cgroup.
// Limits: cpu.max, cpu.weight, cpuset.cpus/mems, memory.max; kill through cgroup.kill.
// Called by the Isolator; not thread-safe (the Isolator serialises).
#pragma once

#include <memory>
#include <string>

#include "launcher/agent/isolation/cgroup_driver.h"

namespace baton {

class CgroupV2Driver : public CgroupDriver {
 public:
  // `root`: the v2 mount ("/sys/fs/cgroup"); `parent`: relative ("baton/n1");
  // `net_prefix`: how nftables names `root` relative to /sys/fs/cgroup ("" on a v2 host);
  // `devices`: the BPF device filter (null: GPUs cannot be fenced here).
  CgroupV2Driver(std::shared_ptr<CgroupFs> fs, std::string root, std::string parent,
                 std::string net_prefix = "", std::shared_ptr<DeviceFilter> devices = nullptr);

  // The agent's own cgroup (relative to `root`, as ParseV2CgroupPath gives it) and pid.
  // When Init must enable controllers in `own` (the subtree systemd delegates with
  // Delegate=yes holds the agent at its top), it first moves the agent into `own`/agent,
  // next to the attempts' cgroups or their parent. Unset: the agent is assumed elsewhere.
  void SetAgentCgroup(std::string own, pid_t pid);

  std::string mode() const override { return "cgroup-v2"; }
  absl::Status Init() override;
  absl::Status Create(const std::string& name) override;
  absl::Status Apply(const std::string& name, const CgroupLimits& limits) override;
  absl::Status LimitPids(const std::string& name, uint64_t max) override;
  absl::Status DenyDevices(const std::string& name, const std::vector<CharDevice>& denied) override;
  absl::Status CanFenceDevices() override;
  std::string ExitProcsFile() const override { return Dir(kExitLeaf) + "/cgroup.procs"; }
  absl::Status LimitExitCpus(const std::string& cpus) override;
  std::vector<std::string> ProcsFiles(const std::string& name) const override;
  absl::StatusOr<std::vector<pid_t>> Pids(const std::string& name) override;
  absl::Status KillAll(const std::string& name) override;
  absl::Status Remove(const std::string& name) override;
  absl::StatusOr<CgroupStats> Stats(const std::string& name) override;
  absl::StatusOr<std::vector<std::string>> List() override;
  std::string Path(const std::string& name) const override { return parent_ + "/" + name; }
  std::string NetPath(const std::string& name) const override;
  int NetLevel(const std::string& name) const override;

 private:
  static constexpr char kExitLeaf[] = "exit";
  std::string Dir(const std::string& name) const { return root_ + "/" + Path(name); }
  absl::Status WriteExitCpus();
  absl::Status MoveAgentOutOf(const std::string& dir);

  const std::shared_ptr<CgroupFs> fs_;
  const std::string root_, parent_, net_prefix_;
  const std::shared_ptr<DeviceFilter> devices_;
  std::string agent_cgroup_;
  pid_t agent_pid_ = 0;  // 0: not set
  bool ready_ = false;
  std::vector<std::string> controllers_;  // of cpu, cpuset, memory, pids: enabled for leaves
  std::string exit_cpus_;                 // LimitExitCpus's last; written once Init has run
};

}  // namespace baton
