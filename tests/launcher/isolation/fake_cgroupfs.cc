#include "tests/launcher/isolation/fake_cgroupfs.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/agent/inventory.h"
#include "launcher/agent/isolation/cgroup_driver.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;
using cgroup_util::Words;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Put(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

absl::Status Busy(const std::string& what) {
  return absl::FailedPreconditionError(what + ": Device or resource busy");
}

}  // namespace

FakeCgroupV2Fs::FakeCgroupV2Fs(std::string root, const std::vector<std::string>& controllers)
    : root_(std::move(root)) {
  std::string list;
  for (const auto& c : controllers) list += (list.empty() ? "" : " ") + c;
  Put(root_ + "/cgroup.controllers", list + "\n");
  Put(root_ + "/cgroup.subtree_control", "\n");
  Put(root_ + "/cgroup.procs", "");
}

std::string FakeCgroupV2Fs::Parent(const std::string& dir) const {
  return fs::path(dir).parent_path().string();
}

bool FakeCgroupV2Fs::IsCgroup(const std::string& dir) const {
  return dir.rfind(root_, 0) == 0 && fs::exists(dir + "/cgroup.procs");
}

absl::Status FakeCgroupV2Fs::MakeDir(const std::string& path) {
  if (IsCgroup(path)) return absl::OkStatus();
  std::string parent = Parent(path);
  if (!IsCgroup(parent))
    return absl::NotFoundError("mkdir " + path + ": No such file or directory");
  fs::create_directory(path);
  Put(path + "/cgroup.subtree_control", "\n");
  Put(path + "/cgroup.procs", "");
  Put(path + "/cgroup.kill", "");
  Put(path + "/cgroup.events", "populated 0\nfrozen 0\n");
  ShowControllers(path, Slurp(parent + "/cgroup.subtree_control"));
  return absl::OkStatus();
}

// As the kernel does: a cgroup's controllers are its parent's subtree_control, with their
// interface files (created once; their values are kept).
void FakeCgroupV2Fs::ShowControllers(const std::string& path, const std::string& enabled) {
  auto put_new = [&](const std::string& file, const std::string& text) {
    if (!fs::exists(path + "/" + file)) Put(path + "/" + file, text);
  };
  Put(path + "/cgroup.controllers", enabled);
  std::vector<std::string> on = Words(enabled);
  if (Contains(on, "cpu")) {
    put_new("cpu.max", "max 100000\n");
    put_new("cpu.weight", "100\n");
    put_new("cpu.stat",
            "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\n"
            "throttled_usec 0\n");
  } else {
    put_new("cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n");
  }
  if (Contains(on, "cpuset")) {
    put_new("cpuset.cpus", "\n");
    put_new("cpuset.mems", "\n");
  }
  if (Contains(on, "pids")) {
    put_new("pids.max", "max\n");
    put_new("pids.current", "0\n");
  }
  if (Contains(on, "memory")) {
    put_new("memory.max", "max\n");
    put_new("memory.current", "0\n");
    put_new("memory.peak", "0\n");
  }
}

absl::Status FakeCgroupV2Fs::RemoveDir(const std::string& path) {
  if (!fs::exists(path)) return absl::OkStatus();
  if (!IsCgroup(path) || path == root_) return absl::PermissionDeniedError("rmdir " + path);
  for (const auto& e : fs::directory_iterator(path)) {
    if (e.is_directory()) return Busy("rmdir " + path + " (has children)");
  }
  if (!Words(Slurp(path + "/cgroup.procs")).empty()) return Busy("rmdir " + path + " (populated)");
  fs::remove_all(path);
  return absl::OkStatus();
}

absl::Status FakeCgroupV2Fs::WriteSubtreeControl(const std::string& dir, const std::string& value) {
  std::vector<std::string> offered = Words(Slurp(dir + "/cgroup.controllers"));
  std::vector<std::string> enabled = Words(Slurp(dir + "/cgroup.subtree_control"));
  bool has_procs = !Words(Slurp(dir + "/cgroup.procs")).empty();
  for (const auto& token : Words(value)) {
    if (token.size() < 2 || (token[0] != '+' && token[0] != '-')) {
      return absl::InvalidArgumentError("subtree_control: '" + token + "': Invalid argument");
    }
    std::string c = token.substr(1);
    if (!Contains(offered, c)) {
      return absl::NotFoundError("subtree_control: +" + c + ": No such file or directory");
    }
    if (token[0] == '+' && dir != root_ && has_procs) {
      return Busy("subtree_control: +" + c + " in a cgroup with processes");
    }
    if (token[0] == '+' && !Contains(enabled, c)) enabled.push_back(c);
    if (token[0] == '-')
      enabled.erase(std::remove(enabled.begin(), enabled.end(), c), enabled.end());
  }
  std::string out;
  for (const auto& c : enabled) out += (out.empty() ? "" : " ") + c;
  Put(dir + "/cgroup.subtree_control", out + "\n");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && IsCgroup(e.path().string())) ShowControllers(e.path(), out + "\n");
  }
  return absl::OkStatus();
}

absl::Status FakeCgroupV2Fs::WriteProcs(const std::string& dir, const std::string& value) {
  int pid = 0;
  if (!(std::istringstream(value) >> pid) || pid <= 0) {
    return absl::InvalidArgumentError("cgroup.procs: '" + value + "': Invalid argument");
  }
  if (dir != root_ && !Words(Slurp(dir + "/cgroup.subtree_control")).empty()) {
    return Busy("cgroup.procs: " + dir + " enables controllers for its children");
  }
  // A process lives in exactly one cgroup: take it out of where it was.
  for (const auto& e : fs::recursive_directory_iterator(root_)) {
    if (e.path().filename() != "cgroup.procs") continue;
    std::string out;
    for (const auto& p : Words(Slurp(e.path()))) {
      if (p != std::to_string(pid)) out += p + "\n";
    }
    Put(e.path(), out);
  }
  Put(dir + "/cgroup.procs", Slurp(dir + "/cgroup.procs") + std::to_string(pid) + "\n");
  return absl::OkStatus();
}

absl::Status FakeCgroupV2Fs::CheckValue(const std::string& file, const std::string& value) const {
  auto invalid = [&] {
    return absl::InvalidArgumentError("write '" + value + "' to " + file + ": Invalid argument");
  };
  std::vector<std::string> w = Words(value);
  if (file == "cpu.max") {
    if (w.empty() || w.size() > 2) return invalid();
    if (w[0] != "max" && (w[0].find_first_not_of("0123456789") != std::string::npos ||
                          std::atol(w[0].c_str()) < 1000)) {
      return invalid();  // the kernel's least quota is 1000 us
    }
    if (w.size() == 2 && w[1].find_first_not_of("0123456789") != std::string::npos)
      return invalid();
  } else if (file == "cpu.weight") {
    long v = w.size() == 1 ? std::atol(w[0].c_str()) : 0;
    if (v < 1 || v > 10000) return invalid();
  } else if (file == "memory.max" || file == "pids.max") {
    if (w.size() != 1 ||
        (w[0] != "max" && w[0].find_first_not_of("0123456789") != std::string::npos)) {
      return invalid();
    }
  } else if (file == "cpuset.cpus" || file == "cpuset.mems") {
    if (!w.empty() && !ParseCpuList(w[0]).ok()) return invalid();
  } else if (file == "cgroup.kill") {
    if (w.size() != 1 || w[0] != "1") return invalid();
  }
  return absl::OkStatus();
}

absl::Status FakeCgroupV2Fs::Write(const std::string& path, const std::string& value) {
  std::string dir = Parent(path), file = fs::path(path).filename().string();
  if (auto f = faults_.find(file); f != faults_.end()) return f->second;
  if (!IsCgroup(dir) || !fs::exists(path)) {
    return absl::NotFoundError("open " + path + ": No such file or directory");
  }
  if (file == "cgroup.subtree_control") return WriteSubtreeControl(dir, value);
  if (file == "cgroup.procs") return WriteProcs(dir, value);
  if (file == "cgroup.controllers" || file == "cgroup.events" || file == "cpu.stat" ||
      file == "memory.current" || file == "memory.peak") {
    return absl::PermissionDeniedError("open " + path + ": read-only");
  }
  if (auto s = CheckValue(file, value); !s.ok()) return s;
  if (file == "cgroup.kill") {
    killed_.push_back(dir);
    Put(dir + "/cgroup.procs", "");
    return absl::OkStatus();
  }
  Put(path, Words(value).empty() ? "\n" : value + "\n");
  return absl::OkStatus();
}

absl::StatusOr<std::string> FakeCgroupV2Fs::Read(const std::string& path) {
  if (!fs::is_regular_file(path)) return absl::NotFoundError("open " + path + ": No such file");
  return Slurp(path);
}

bool FakeCgroupV2Fs::Exists(const std::string& path) { return fs::exists(path); }

absl::StatusOr<std::vector<std::string>> FakeCgroupV2Fs::SubDirs(const std::string& path) {
  std::vector<std::string> out;
  if (!fs::exists(path)) return out;
  for (const auto& e : fs::directory_iterator(path)) {
    if (e.is_directory()) out.push_back(e.path().filename().string());
  }
  return out;
}

absl::Status FakeCgroupV2Fs::AddProcess(const std::string& cgroup_dir, int pid) {
  return WriteProcs(cgroup_dir, std::to_string(pid));
}

void FakeCgroupV2Fs::SetFile(const std::string& path, const std::string& text) { Put(path, text); }

}  // namespace baton::testing
