#include "launcher/agent/isolation/cgroup_fs.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <sstream>

#include "common/status.h"

namespace baton {

absl::Status RealCgroupFs::MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
  return ErrnoToStatus(errno, "mkdir " + path);
}

absl::Status RealCgroupFs::RemoveDir(const std::string& path) {
  if (rmdir(path.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
  if (errno == EBUSY || errno == ENOTEMPTY) {
    return absl::FailedPreconditionError("rmdir " + path + ": still has processes or children");
  }
  return ErrnoToStatus(errno, "rmdir " + path);
}

absl::Status RealCgroupFs::Write(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open " + path);
  // One write: the kernel parses each write() of a control file as one value.
  ssize_t n = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return ErrnoToStatus(n < 0 ? err : EIO, "write '" + value + "' to " + path);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RealCgroupFs::Read(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open " + path);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = errno;
  close(fd);
  if (n < 0) return ErrnoToStatus(err, "read " + path);
  return out;
}

bool RealCgroupFs::Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

absl::StatusOr<std::vector<std::string>> RealCgroupFs::SubDirs(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(path, ec), end;
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return absl::UnavailableError("list " + path + ": " + ec.message());
  }
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    if (it->is_directory(ec)) out.push_back(it->path().filename());
  }
  return out;
}

const char* CgroupLayoutName(CgroupLayout layout) {
  switch (layout) {
    case CgroupLayout::kV1:
      return "cgroup-v1";
    case CgroupLayout::kHybrid:
      return "cgroup-v1+v2 (hybrid)";
    case CgroupLayout::kV2:
      return "cgroup-v2";
    default:
      return "none";
  }
}

CgroupLayout ClassifyCgroupLayout(int64_t root_magic, int64_t unified_magic) {
  if (root_magic == CGROUP2_SUPER_MAGIC) return CgroupLayout::kV2;
  if (root_magic != TMPFS_MAGIC) return CgroupLayout::kNone;
  return unified_magic == CGROUP2_SUPER_MAGIC ? CgroupLayout::kHybrid : CgroupLayout::kV1;
}

CgroupLayout DetectCgroupLayout(const std::string& root) {
  struct statfs st {};
  if (statfs(root.c_str(), &st) != 0) return CgroupLayout::kNone;
  struct statfs unified {};
  int64_t unified_magic = 0;
  if (statfs((root + "/unified").c_str(), &unified) == 0) unified_magic = unified.f_type;
  return ClassifyCgroupLayout(st.f_type, unified_magic);
}

std::map<std::string, std::string> ParseV1Mounts(const std::string& mounts) {
  std::map<std::string, std::string> out;
  std::istringstream in(mounts);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string source, target, type, options;
    if (!(fields >> source >> target >> type >> options) || type != "cgroup") continue;
    std::istringstream opts(options);
    std::string opt;
    while (std::getline(opts, opt, ',')) {
      if (opt == "cpu" || opt == "cpuacct" || opt == "cpuset" || opt == "memory" ||
          opt == "freezer" || opt == "pids" || opt == "devices") {
        out.emplace(opt, target);
      }
    }
  }
  return out;
}

absl::StatusOr<std::string> ParseV2CgroupPath(const std::string& proc_cgroup) {
  std::istringstream in(proc_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::/", 0) == 0) return line.substr(4);
  }
  return absl::NotFoundError("no cgroup v2 line (0::/...) in '" + proc_cgroup + "'");
}

std::vector<pid_t> ParsePids(const std::string& text) {
  std::vector<pid_t> pids;
  std::istringstream in(text);
  long pid;
  while (in >> pid) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

}  // namespace baton
