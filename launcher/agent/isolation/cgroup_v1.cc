#include "launcher/agent/isolation/cgroup_v1.h"

#include <signal.h>

#include <algorithm>
#include <set>

#include "common/status.h"

namespace baton {

CgroupV1Driver::CgroupV1Driver(std::shared_ptr<CgroupFs> fs,
                               std::map<std::string, std::string> mounts, std::string parent,
                               std::string unified, std::string net_prefix)
    : fs_(std::move(fs)),
      mounts_(std::move(mounts)),
      parent_(std::move(parent)),
      unified_(std::move(unified)),
      net_prefix_(std::move(net_prefix)) {
  std::set<std::string> seen;
  for (const auto& [controller, root] : mounts_) {
    if (seen.insert(root).second) roots_.push_back(root);
  }
  if (!unified_.empty()) roots_.push_back(unified_);
}

std::string CgroupV1Driver::mode() const {
  return CgroupLayoutName(unified_.empty() ? CgroupLayout::kV1 : CgroupLayout::kHybrid);
}

std::string CgroupV1Driver::Dir(const std::string& controller, const std::string& name) const {
  auto it = mounts_.find(controller);
  if (it == mounts_.end()) return "";
  return it->second + "/" + Path(name);
}

absl::Status CgroupV1Driver::CopyCpuset(const std::string& from, const std::string& to,
                                        bool fresh) {
  // A v1 cpuset starts empty and refuses processes until both lists are set.
  for (const char* file : {"/cpuset.cpus", "/cpuset.mems"}) {
    if (!fresh) {  // one made before keeps what it has
      auto mine = fs_->Read(to + file);
      if (!mine.ok()) return mine.status();
      if (mine->find_first_not_of(" \n") != std::string::npos) continue;
    }
    auto theirs = fs_->Read(from + file);
    if (!theirs.ok()) return theirs.status();
    BATON_RETURN_IF_ERROR(fs_->Write(to + file, *theirs));
  }
  return absl::OkStatus();
}

absl::Status CgroupV1Driver::Init() {
  if (ready_) return absl::OkStatus();
  if (!mounts_.count("cpu") || !mounts_.count("memory")) {
    return absl::FailedPreconditionError("cgroup v1 needs the cpu and memory hierarchies mounted");
  }
  for (const auto& root : roots_) {
    std::string up = root;
    for (const auto& level : cgroup_util::PathPrefixes(parent_)) {
      std::string dir = root + "/" + level;
      BATON_RETURN_IF_ERROR(fs_->MakeDir(dir));
      if (mounts_.count("cpuset") && root == mounts_.at("cpuset")) {
        BATON_RETURN_IF_ERROR(CopyCpuset(up, dir, /*fresh=*/false));
      }
      up = dir;
    }
  }
  // Hierarchies an attempt needs no cgroup of its own in: its processes join the node's
  // (what a fresh attempt cgroup would allow anyway), which saves a mkdir and an rmdir per
  // attempt and hierarchy. The freezer, where cgroup2's cgroup.kill kills atomically (Linux
  // 5.14+); devices, until DenyDevices has something to deny.
  std::map<std::string, std::set<std::string>> held;  // root -> its controllers
  for (const auto& [controller, root] : mounts_) held[root].insert(controller);
  bool atomic_kill = !unified_.empty() && fs_->Exists(unified_ + "/" + parent_ + "/cgroup.kill");
  attempt_roots_.clear();
  for (const auto& root : roots_) {
    auto it = held.find(root);
    bool freezer = it != held.end() && it->second == std::set<std::string>{"freezer"};
    bool devices = it != held.end() && it->second == std::set<std::string>{"devices"};
    if ((freezer && atomic_kill) || devices) continue;
    attempt_roots_.push_back(root);
  }
  ready_ = true;
  return absl::OkStatus();
}

const std::vector<std::string>& CgroupV1Driver::ScanRoots() const {
  return ready_ ? attempt_roots_ : roots_;
}

absl::Status CgroupV1Driver::Create(const std::string& name) {
  BATON_RETURN_IF_ERROR(Init());
  std::vector<std::string> made;
  absl::Status status;
  for (const auto& root : attempt_roots_) {
    std::string dir = root + "/" + Path(name);
    bool existed = fs_->Exists(dir);
    status = fs_->MakeDir(dir);
    if (!status.ok()) break;
    if (!existed) made.push_back(dir);
    if (mounts_.count("cpuset") && root == mounts_.at("cpuset")) {
      status = CopyCpuset(root + "/" + parent_, dir, /*fresh=*/!existed);
      if (!status.ok()) break;
    }
  }
  if (status.ok()) return status;
  for (auto it = made.rbegin(); it != made.rend(); ++it) (void)fs_->RemoveDir(*it);
  return status;
}

absl::Status CgroupV1Driver::Apply(const std::string& name, const CgroupLimits& l) {
  BATON_RETURN_IF_ERROR(Init());
  if (std::string cs = Dir("cpuset", name); !cs.empty()) {
    // v1 has no "inherit": an empty list means the parent's, written out.
    for (const auto& [file, list] :
         {std::pair{"/cpuset.cpus", &l.cpus}, {"/cpuset.mems", &l.mems}}) {
      std::string value = *list;
      if (value.empty()) {
        auto parents = fs_->Read(mounts_.at("cpuset") + "/" + parent_ + file);
        if (!parents.ok()) return parents.status();
        value = *parents;
      }
      BATON_RETURN_IF_ERROR(fs_->Write(cs + file, value));
    }
  } else if (!l.cpus.empty()) {
    return absl::FailedPreconditionError("no cpuset hierarchy mounted");
  }
  std::string cpu = Dir("cpu", name);
  BATON_RETURN_IF_ERROR(fs_->Write(cpu + "/cpu.cfs_period_us", std::to_string(kCfsPeriodUs)));
  std::string quota =
      l.cpu_quota_millis == 0 ? "-1" : std::to_string(CfsQuotaUs(l.cpu_quota_millis));
  BATON_RETURN_IF_ERROR(fs_->Write(cpu + "/cpu.cfs_quota_us", quota));
  uint64_t shares =
      std::max<uint64_t>(2, std::clamp<uint64_t>(l.cpu_weight, 1, 10000) * 1024 / 100);
  BATON_RETURN_IF_ERROR(fs_->Write(cpu + "/cpu.shares", std::to_string(shares)));
  std::string mem = l.memory_max_bytes == 0 ? "-1" : std::to_string(l.memory_max_bytes);
  return fs_->Write(Dir("memory", name) + "/memory.limit_in_bytes", mem);
}

absl::Status CgroupV1Driver::LimitPids(const std::string& name, uint64_t max) {
  std::string pids = Dir("pids", name);
  if (pids.empty()) {
    if (max == 0) return absl::OkStatus();
    return absl::FailedPreconditionError("no pids hierarchy mounted: cannot limit processes");
  }
  return fs_->Write(pids + "/pids.max", max == 0 ? "max" : std::to_string(max));
}

absl::Status CgroupV1Driver::DenyDevices(const std::string& name,
                                         const std::vector<CharDevice>& denied) {
  if (denied.empty()) return absl::OkStatus();
  std::string devices = Dir("devices", name);
  if (devices.empty()) {
    return absl::FailedPreconditionError("no devices hierarchy mounted: cannot fence GPUs");
  }
  BATON_RETURN_IF_ERROR(fs_->MakeDir(devices));  // made here only: see Init
  // The cgroup starts allowing what its parent allows; each line adds an exception.
  for (const CharDevice& d : denied) {
    BATON_RETURN_IF_ERROR(
        fs_->Write(devices + "/devices.deny",
                   "c " + std::to_string(d.major) + ":" + std::to_string(d.minor) + " rwm"));
  }
  return absl::OkStatus();
}

absl::Status CgroupV1Driver::CanFenceDevices() {
  if (mounts_.count("devices")) return absl::OkStatus();
  return absl::FailedPreconditionError("no cgroup v1 devices hierarchy is mounted");
}

std::vector<std::string> CgroupV1Driver::ProcsFiles(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& root : roots_) {
    std::string own = root + "/" + Path(name);
    bool made =
        std::find(attempt_roots_.begin(), attempt_roots_.end(), root) != attempt_roots_.end() ||
        fs_->Exists(own);  // a fence's devices cgroup; one an older agent made
    out.push_back((made ? own : root + "/" + parent_) + "/cgroup.procs");
  }
  return out;
}

absl::StatusOr<std::vector<pid_t>> CgroupV1Driver::Pids(const std::string& name) {
  // The union over hierarchies: a process that joined only some still belongs to it.
  std::set<pid_t> all;
  for (const auto& root : ScanRoots()) {
    auto text = fs_->Read(root + "/" + Path(name) + "/cgroup.procs");
    if (!text.ok()) {
      if (text.status().code() == absl::StatusCode::kNotFound) continue;
      return text.status();
    }
    for (pid_t p : ParsePids(*text)) all.insert(p);
  }
  return std::vector<pid_t>(all.begin(), all.end());
}

absl::Status CgroupV1Driver::KillAll(const std::string& name) {
  if (!unified_.empty()) {
    std::string dir = unified_ + "/" + Path(name);
    if (fs_->Exists(dir + "/cgroup.kill"))
      BATON_RETURN_IF_ERROR(fs_->Write(dir + "/cgroup.kill", "1"));
  }
  // An empty cgroup stays empty (nothing in it can fork), so it needs no freeze: each
  // freeze and thaw of a v1 freezer flips a kernel static key (text patching on every
  // CPU), a visible cost when many short attempts end.
  bool empty = true;
  for (const auto& root : ScanRoots()) {
    auto pids = fs_->Read(root + "/" + Path(name) + "/cgroup.procs");
    if (pids.ok() && !ParsePids(*pids).empty()) {
      empty = false;
      break;
    }
  }
  if (empty) return absl::OkStatus();
  // Frozen, nothing forks between reading the list and the kill; SIGKILL is delivered
  // to frozen tasks once they thaw.
  std::string freezer = Dir("freezer", name);
  bool frozen = !freezer.empty() && fs_->Exists(freezer) &&
                fs_->Write(freezer + "/freezer.state", "FROZEN").ok();
  absl::Status status;
  for (const auto& root : ScanRoots()) {
    std::string procs = root + "/" + Path(name) + "/cgroup.procs";
    if (!fs_->Exists(procs)) continue;
    if (frozen) {
      auto pids = fs_->Read(procs);
      if (pids.ok()) {
        for (pid_t p : ParsePids(*pids)) kill(p, SIGKILL);
      }
      continue;
    }
    if (auto s = cgroup_util::KillUntilEmpty(fs_.get(), procs); !s.ok()) status = s;
  }
  if (frozen) (void)fs_->Write(freezer + "/freezer.state", "THAWED");
  return status;
}

std::string CgroupV1Driver::ExitProcsFile() const {
  auto it = mounts_.find("memory");
  return it == mounts_.end() ? "" : it->second + "/" + parent_ + "/cgroup.procs";
}

absl::Status CgroupV1Driver::Remove(const std::string& name) {
  absl::Status first;
  for (auto it = roots_.rbegin(); it != roots_.rend(); ++it) {
    absl::Status s = fs_->RemoveDir(*it + "/" + Path(name));
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

absl::StatusOr<CgroupStats> CgroupV1Driver::Stats(const std::string& name) {
  CgroupStats st;
  auto cpu = fs_->Read(Dir("cpu", name) + "/cpu.stat");
  if (!cpu.ok()) return cpu.status();
  auto kv = cgroup_util::ParseKeyValues(*cpu);
  st.nr_periods = kv["nr_periods"];
  st.nr_throttled = kv["nr_throttled"];
  st.throttled_us = kv["throttled_time"] / 1000;  // ns in v1
  if (std::string acct = Dir("cpuacct", name); !acct.empty()) {
    if (auto usage = fs_->Read(acct + "/cpuacct.usage"); usage.ok()) {
      st.cpu_usage_us = cgroup_util::ParseU64(*usage) / 1000;
    }
  }
  std::string mem = Dir("memory", name);
  if (auto cur = fs_->Read(mem + "/memory.usage_in_bytes"); cur.ok()) {
    st.memory_current_bytes = cgroup_util::ParseU64(*cur);
  }
  if (auto peak = fs_->Read(mem + "/memory.max_usage_in_bytes"); peak.ok()) {
    st.memory_peak_bytes = cgroup_util::ParseU64(*peak);
  }
  return st;
}

absl::StatusOr<std::vector<std::string>> CgroupV1Driver::List() {
  std::set<std::string> names;
  for (const auto& root : roots_) {
    auto dirs = fs_->SubDirs(root + "/" + parent_);
    if (!dirs.ok()) return dirs.status();
    for (const auto& d : *dirs) {
      if (cgroup_util::IsAttemptName(d)) names.insert(d);
    }
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::string CgroupV1Driver::NetPath(const std::string& name) const {
  return unified_.empty() ? "" : net_prefix_ + Path(name);
}

int CgroupV1Driver::NetLevel(const std::string& name) const {
  return unified_.empty() ? 0 : static_cast<int>(cgroup_util::PathPrefixes(Path(name)).size());
}

}  // namespace baton
