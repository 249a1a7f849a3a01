#include "launcher/agent/job_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "common/resources.h"
#include "common/status.h"

namespace baton {

absl::StatusOr<std::string> ReadUntrustedFile(const std::string& path, uid_t owner,
                                              size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP) return absl::FailedPreconditionError(path + " is a symbolic link");
    return ErrnoToStatus(errno, path);
  }
  struct stat st {};
  absl::Status bad;
  if (fstat(fd, &st) != 0) {
    bad = ErrnoToStatus(errno, "stat " + path);
  } else if (!S_ISREG(st.st_mode)) {
    bad = absl::FailedPreconditionError(path + " is not a regular file" +
                                        (S_ISFIFO(st.st_mode) ? " (a FIFO)" : ""));
  } else if (st.st_uid != owner) {
    bad = absl::PermissionDeniedError(path + " belongs to uid " + std::to_string(st.st_uid) +
                                      ", not " + std::to_string(owner));
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    bad = absl::FailedPreconditionError(path + " is " +
                                        FormatBytes(static_cast<uint64_t>(st.st_size)) +
                                        ", above the " + FormatBytes(max_bytes) + " read");
  }
  if (!bad.ok()) {
    close(fd);
    return bad;
  }
  std::string out(max_bytes + 1, '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return ErrnoToStatus(err, "read " + path);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got > max_bytes) {
    return absl::FailedPreconditionError(path + " grew above the " + FormatBytes(max_bytes) +
                                         " read");
  }
  out.resize(got);
  return out;
}

pid_t BelievableGroup(long pgid, const std::vector<pid_t>& attempt_pids, pid_t own_group,
                      pid_t (*group_of)(pid_t)) {
  if (pgid <= 1 || pgid == own_group || pgid > 4'194'304) return 0;  // pid_max's ceiling
  for (pid_t p : attempt_pids) {
    if (p > 1 && group_of(p) == static_cast<pid_t>(pgid)) return static_cast<pid_t>(pgid);
  }
  return 0;
}

namespace {

// A directory name that is a whole decimal number.
bool Number(const std::string& name, uint64_t* out) {
  if (name.empty() || name.size() > 19 ||
      name.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::stoull(name);
  return true;
}

absl::Time Changed(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return absl::InfinitePast();
  return absl::TimeFromTimespec(st.st_mtim);
}

}  // namespace

std::vector<std::string> ExpiredAttemptDirs(const std::string& data_dir,
                                            const std::set<std::pair<uint64_t, uint32_t>>& keep,
                                            absl::Time now, absl::Duration retention) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& job : std::filesystem::directory_iterator(data_dir + "/jobs", ec)) {
    uint64_t job_id = 0;
    if (!job.is_directory(ec) || !Number(job.path().filename().string(), &job_id)) continue;
    for (const auto& attempt : std::filesystem::directory_iterator(job.path(), ec)) {
      uint64_t number = 0;
      if (!attempt.is_directory(ec) || !Number(attempt.path().filename().string(), &number) ||
          number > UINT32_MAX || keep.count({job_id, static_cast<uint32_t>(number)})) {
        continue;
      }
      std::string dir = attempt.path().string();
      absl::Time last = std::max(Changed(dir), Changed(dir + "/output.log"));
      if (now - last > retention) out.push_back(dir);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace baton
