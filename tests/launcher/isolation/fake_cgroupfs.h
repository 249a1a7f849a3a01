// A cgroup v2 filesystem in a temp dir, for testing the v2 backend where only v1 runs:
// directories are cgroups, files their interface. Its writer enforces v2's rules that
// the backend must respect: controllers reach a child only through the parent's
// cgroup.subtree_control (and only those the parent has; existing children see them at
// once), no processes in a cgroup that enables controllers for its children (nor
// enabling them while it holds processes), rmdir only of an empty leaf, values checked like the
// kernel does. Processes are pids in cgroup.procs; cgroup.kill empties the cgroup and records the
// kill. Faults can be injected per file name. Thread-compatible (tests are single-threaded).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/agent/isolation/cgroup_fs.h"

namespace baton::testing {

class FakeCgroupV2Fs : public CgroupFs {
 public:
  // `root`: an existing empty dir; it becomes the v2 mount offering `controllers`.
  FakeCgroupV2Fs(std::string root, const std::vector<std::string>& controllers);

  absl::Status MakeDir(const std::string& path) override;
  absl::Status RemoveDir(const std::string& path) override;
  absl::Status Write(const std::string& path, const std::string& value) override;
  absl::StatusOr<std::string> Read(const std::string& path) override;
  bool Exists(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> SubDirs(const std::string& path) override;

  // Writes to files named `file` ("memory.max") fail with `status` from now on.
  void FailWrites(const std::string& file, absl::Status status) { faults_[file] = status; }
  // Puts a (pretend) process into a cgroup, bypassing nothing: the v2 rules apply.
  absl::Status AddProcess(const std::string& cgroup_dir, int pid);
  // Sets a stat file as the kernel would show it (cpu.stat, memory.peak …).
  void SetFile(const std::string& path, const std::string& text);
  const std::vector<std::string>& killed() const { return killed_; }  // dirs cgroup.kill hit
  const std::string& root() const { return root_; }

 private:
  std::string Parent(const std::string& dir) const;
  bool IsCgroup(const std::string& dir) const;
  void ShowControllers(const std::string& path, const std::string& enabled);
  absl::Status WriteSubtreeControl(const std::string& dir, const std::string& value);
  absl::Status WriteProcs(const std::string& dir, const std::string& value);
  absl::Status CheckValue(const std::string& file, const std::string& value) const;

  const std::string root_;
  std::map<std::string, absl::Status> faults_;
  std::vector<std::string> killed_;
};

}  // namespace baton::testing
