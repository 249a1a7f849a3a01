#include "common/daemon.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "common/status.h"

namespace baton {
namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

int WaitForStopSignal() {
  sigset_t set = StopSignals();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

int PollStopSignal() {
  sigset_t set = StopSignals();
  struct timespec zero {};
  int sig = sigtimedwait(&set, nullptr, &zero);
  return sig > 0 ? sig : 0;
}

absl::Status ReExec(char** argv) {
  // Descriptors opened without O_CLOEXEC by a library (a listening socket, a lock file)
  // would otherwise outlive the exec and hold their ports and locks.
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (struct dirent* e = readdir(dir)) {
      int fd = atoi(e->d_name);
      if (fd <= 2 || fd == dirfd(dir)) continue;
      int flags = fcntl(fd, F_GETFD);
      if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    closedir(dir);
  }
  execv("/proc/self/exe", argv);
  return ErrnoToStatus(errno, "re-executing /proc/self/exe");
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& content, mode_t mode,
                                 Durability durability) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  unlink(tmp.c_str());  // a leftover of a crash; never written through
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoToStatus(errno, "create " + tmp);
  fchmod(fd, mode);  // whatever the umask
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoToStatus(err, "write " + tmp);
    }
    done += static_cast<size_t>(n);
  }
  if ((durability == Durability::kSurvivesCrash && fsync(fd) != 0) || close(fd) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoToStatus(err, "sync " + tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoToStatus(err, "rename " + tmp + " to " + path);
  }
  return absl::OkStatus();
}

}  // namespace baton
