#include "launcher/agent/isolation/cgroup_v2.h"

#include <algorithm>
#include <sstream>

#include "common/status.h"

namespace baton {
namespace {

using cgroup_util::Words;

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

CgroupV2Driver::CgroupV2Driver(std::shared_ptr<CgroupFs> fs, std::string root, std::string parent,
                               std::string net_prefix, std::shared_ptr<DeviceFilter> devices)
    : fs_(std::move(fs)),
      root_(std::move(root)),
      parent_(std::move(parent)),
      net_prefix_(std::move(net_prefix)),
      devices_(std::move(devices)) {}

void CgroupV2Driver::SetAgentCgroup(std::string own, pid_t pid) {
  agent_cgroup_ = std::move(own);
  agent_pid_ = pid;
}

absl::Status CgroupV2Driver::MoveAgentOutOf(const std::string& dir) {
  BATON_RETURN_IF_ERROR(fs_->MakeDir(dir + "/agent"));
  // cgroup.procs moves the whole process, every thread with it.
  return fs_->Write(dir + "/agent/cgroup.procs", std::to_string(agent_pid_));
}

absl::Status CgroupV2Driver::Init() {
  if (ready_) return absl::OkStatus();
  // Enable each wanted controller the root offers down the chain: root, baton, baton/n1.
  auto offered = fs_->Read(root_ + "/cgroup.controllers");
  if (!offered.ok()) return offered.status();
  std::vector<std::string> available = Words(*offered);
  std::vector<std::string> wanted;
  for (const char* c : {"cpu", "cpuset", "memory", "pids"}) {
    if (Has(available, c)) wanted.push_back(c);
  }
  std::vector<std::string> levels = {""};
  for (const auto& p : cgroup_util::PathPrefixes(parent_)) levels.push_back(p);
  for (size_t i = 0; i < levels.size(); ++i) {
    std::string dir = levels[i].empty() ? root_ : root_ + "/" + levels[i];
    if (i > 0) BATON_RETURN_IF_ERROR(fs_->MakeDir(dir));
    // The root may hold processes; any other level that holds the agent may not.
    if (i > 0 && agent_pid_ > 0 && levels[i] == agent_cgroup_) {
      BATON_RETURN_IF_ERROR(MoveAgentOutOf(dir));
    }
    auto enabled = fs_->Read(dir + "/cgroup.subtree_control");
    if (!enabled.ok()) return enabled.status();
    for (const auto& c : wanted) {
      if (Has(Words(*enabled), c)) continue;
      BATON_RETURN_IF_ERROR(fs_->Write(dir + "/cgroup.subtree_control", "+" + c));
    }
  }
  controllers_ = wanted;
  BATON_RETURN_IF_ERROR(fs_->MakeDir(Dir(kExitLeaf)));
  ready_ = true;
  return WriteExitCpus();
}

absl::Status CgroupV2Driver::LimitExitCpus(const std::string& cpus) {
  exit_cpus_ = cpus;
  return ready_ ? WriteExitCpus() : absl::OkStatus();
}

absl::Status CgroupV2Driver::WriteExitCpus() {
  if (!Has(controllers_, "cpuset")) return absl::OkStatus();
  // Empty: the parent's CPUs (what a new leaf starts with).
  return fs_->Write(Dir(kExitLeaf) + "/cpuset.cpus", exit_cpus_.empty() ? "\n" : exit_cpus_);
}

absl::Status CgroupV2Driver::Create(const std::string& name) {
  BATON_RETURN_IF_ERROR(Init());
  return fs_->MakeDir(Dir(name));
}

absl::Status CgroupV2Driver::Apply(const std::string& name, const CgroupLimits& l) {
  BATON_RETURN_IF_ERROR(Init());
  std::string dir = Dir(name);
  if (Has(controllers_, "cpuset")) {
    // An empty cpuset.cpus in v2 means "the parent's": writing "" restores that.
    BATON_RETURN_IF_ERROR(fs_->Write(dir + "/cpuset.cpus", l.cpus.empty() ? "\n" : l.cpus));
    BATON_RETURN_IF_ERROR(fs_->Write(dir + "/cpuset.mems", l.mems.empty() ? "\n" : l.mems));
  } else if (!l.cpus.empty()) {
    return absl::FailedPreconditionError("cgroup v2 at " + root_ + " offers no cpuset controller");
  }
  if (Has(controllers_, "cpu")) {
    std::string quota =
        l.cpu_quota_millis == 0 ? "max" : std::to_string(CfsQuotaUs(l.cpu_quota_millis));
    BATON_RETURN_IF_ERROR(fs_->Write(dir + "/cpu.max", quota + " " + std::to_string(kCfsPeriodUs)));
    uint64_t weight = std::clamp<uint64_t>(l.cpu_weight, 1, 10000);
    BATON_RETURN_IF_ERROR(fs_->Write(dir + "/cpu.weight", std::to_string(weight)));
  } else if (l.cpu_quota_millis != 0) {
    return absl::FailedPreconditionError("cgroup v2 at " + root_ + " offers no cpu controller");
  }
  if (Has(controllers_, "memory")) {
    std::string max = l.memory_max_bytes == 0 ? "max" : std::to_string(l.memory_max_bytes);
    BATON_RETURN_IF_ERROR(fs_->Write(dir + "/memory.max", max));
  } else if (l.memory_max_bytes != 0) {
    return absl::FailedPreconditionError("cgroup v2 at " + root_ + " offers no memory controller");
  }
  return absl::OkStatus();
}

absl::Status CgroupV2Driver::LimitPids(const std::string& name, uint64_t max) {
  BATON_RETURN_IF_ERROR(Init());
  if (!Has(controllers_, "pids")) {
    if (max == 0) return absl::OkStatus();
    return absl::FailedPreconditionError("cgroup v2 at " + root_ + " offers no pids controller");
  }
  return fs_->Write(Dir(name) + "/pids.max", max == 0 ? "max" : std::to_string(max));
}

absl::Status CgroupV2Driver::DenyDevices(const std::string& name,
                                         const std::vector<CharDevice>& denied) {
  if (denied.empty()) return absl::OkStatus();
  if (!devices_) {
    return absl::FailedPreconditionError(
        "cgroup v2 has no devices files and no BPF device "
        "filter is set up: cannot fence GPUs");
  }
  return devices_->Deny(Dir(name), denied);
}

absl::Status CgroupV2Driver::CanFenceDevices() {
  if (!devices_) return absl::FailedPreconditionError("no BPF device filter is set up");
  return BpfDeviceFilter::Probe();
}

std::vector<std::string> CgroupV2Driver::ProcsFiles(const std::string& name) const {
  return {Dir(name) + "/cgroup.procs"};
}

absl::StatusOr<std::vector<pid_t>> CgroupV2Driver::Pids(const std::string& name) {
  auto text = fs_->Read(Dir(name) + "/cgroup.procs");
  if (!text.ok()) {
    if (text.status().code() == absl::StatusCode::kNotFound) return std::vector<pid_t>{};
    return text.status();
  }
  return ParsePids(*text);
}

absl::Status CgroupV2Driver::KillAll(const std::string& name) {
  std::string dir = Dir(name);
  if (!fs_->Exists(dir)) return absl::OkStatus();
  if (fs_->Exists(dir + "/cgroup.kill")) return fs_->Write(dir + "/cgroup.kill", "1");
  return cgroup_util::KillUntilEmpty(fs_.get(), dir + "/cgroup.procs");
}

absl::Status CgroupV2Driver::Remove(const std::string& name) { return fs_->RemoveDir(Dir(name)); }

absl::StatusOr<CgroupStats> CgroupV2Driver::Stats(const std::string& name) {
  std::string dir = Dir(name);
  CgroupStats st;
  auto cpu = fs_->Read(dir + "/cpu.stat");
  if (!cpu.ok()) return cpu.status();
  auto kv = cgroup_util::ParseKeyValues(*cpu);
  st.cpu_usage_us = kv["usage_usec"];
  st.nr_periods = kv["nr_periods"];
  st.nr_throttled = kv["nr_throttled"];
  st.throttled_us = kv["throttled_usec"];
  if (auto cur = fs_->Read(dir + "/memory.current"); cur.ok()) {
    st.memory_current_bytes = cgroup_util::ParseU64(*cur);
  }
  // memory.peak arrived in Linux 5.19; before it the current value is the best we have.
  auto peak = fs_->Read(dir + "/memory.peak");
  st.memory_peak_bytes = peak.ok() ? cgroup_util::ParseU64(*peak) : st.memory_current_bytes;
  return st;
}

absl::StatusOr<std::vector<std::string>> CgroupV2Driver::List() {
  auto dirs = fs_->SubDirs(root_ + "/" + parent_);
  if (!dirs.ok()) return dirs.status();
  std::vector<std::string> out;
  for (const auto& d : *dirs) {
    if (cgroup_util::IsAttemptName(d)) out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string CgroupV2Driver::NetPath(const std::string& name) const {
  return net_prefix_ + Path(name);
}

int CgroupV2Driver::NetLevel(const std::string& name) const {
  return static_cast<int>(cgroup_util::PathPrefixes(Path(name)).size());
}

}  // namespace baton
