// The OS seam under the cgroup drivers: directories and small control files of a cgroup
// filesystem, plus detection of which cgroup layout a host mounts. RealCgroupFs touches
// the real files; tests use a fake that enforces cgroup v2's rules over a temp dir.
// Implementations are thread-safe (each call is one system call or two).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton {

class CgroupFs {
 public:
  virtual ~CgroupFs() = default;
  // OK when the directory already exists.
  virtual absl::Status MakeDir(const std::string& path) = 0;
  // OK when it is already gone; FailedPrecondition while processes or children remain.
  virtual absl::Status RemoveDir(const std::string& path) = 0;
  virtual absl::Status Write(const std::string& path, const std::string& value) = 0;
  virtual absl::StatusOr<std::string> Read(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Names of the sub-directories (child cgroups) of `path`.
  virtual absl::StatusOr<std::vector<std::string>> SubDirs(const std::string& path) = 0;
};

class RealCgroupFs : public CgroupFs {
 public:
  absl::Status MakeDir(const std::string& path) override;
  absl::Status RemoveDir(const std::string& path) override;
  absl::Status Write(const std::string& path, const std::string& value) override;
  absl::StatusOr<std::string> Read(const std::string& path) override;
  bool Exists(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> SubDirs(const std::string& path) override;
};

enum class CgroupLayout {
  kNone,    // nothing usable mounted
  kV1,      // v1 controllers only
  kHybrid,  // v1 controllers plus an (empty) cgroup2 tree at <root>/unified
  kV2,      // pure v2
};
const char* CgroupLayoutName(CgroupLayout layout);

// From statfs magics (docs/recipes.md "cgroups"): cgroup2 at the root → v2; tmpfs at the
// root → v1, hybrid when <root>/unified is cgroup2. `unified_magic` is 0 when there is no
// such dir.
CgroupLayout ClassifyCgroupLayout(int64_t root_magic, int64_t unified_magic);
// statfs on `root` ("/sys/fs/cgroup") and `root`/unified.
CgroupLayout DetectCgroupLayout(const std::string& root);

// v1 controller -> mount point, from /proc/self/mounts text ("cpu,cpuacct" mounts give
// both names the same directory).
std::map<std::string, std::string> ParseV1Mounts(const std::string& mounts);

// The cgroup v2 path in /proc/<pid>/cgroup text, relative to the v2 root:
// "0::/system.slice/baton-agent.service" -> "system.slice/baton-agent.service", "0::/" -> "".
// NotFound when the text has no v2 ("0::") line.
absl::StatusOr<std::string> ParseV2CgroupPath(const std::string& proc_cgroup);

// Parses cgroup.procs: one pid a line.
std::vector<pid_t> ParsePids(const std::string& text);

}  // namespace baton
