// The POSIX Env: pread/pwrite on file descriptors, O_DIRECT where the filesystem takes it,
// fallocate for early ENOSPC, fsync on files and directories.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/env.h"
#include "common/status.h"

namespace baton::checkpoint {
namespace {

absl::Status PosixError(const std::string& what, const std::string& path) {
  return ErrnoToStatus(errno, what + " " + path);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, bool direct)
      : path_(std::move(path)), fd_(fd), direct_(direct) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        return PosixError("write", path_);
      }
      p += w;
      offset += static_cast<uint64_t>(w);
      n -= static_cast<size_t>(w);
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fsync(fd_) != 0) return PosixError("fsync", path_);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return PosixError("close", path_);
    return absl::OkStatus();
  }

  bool direct() const override { return direct_; }

 private:
  const std::string path_;
  int fd_;
  const bool direct_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd, bool direct)
      : path_(std::move(path)), fd_(fd), direct_(direct) {}
  ~PosixReadableFile() override { ::close(fd_); }

  absl::Status ReadAt(uint64_t offset, void* data, size_t n) override {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("read", path_);
      }
      if (r == 0) {
        return absl::DataLossError(path_ + " is truncated: nothing at offset " +
                                   std::to_string(offset));
      }
      p += r;
      offset += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError("stat", path_);
    return static_cast<uint64_t>(st.st_size);
  }
  bool direct() const override { return direct_; }

 private:
  const std::string path_;
  const int fd_;
  const bool direct_;
};

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override {
    const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    int fd = -1;
    bool direct = false;
    if (options.direct_io) {
      fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
      direct = fd >= 0;
      if (fd < 0 && errno != EINVAL) return PosixError("open", path);
    }
    if (fd < 0) fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return PosixError("open", path);
    auto file = std::make_unique<PosixWritableFile>(path, fd, direct);
    if (options.preallocate_bytes > 0 &&
        ::fallocate(fd, 0, 0, static_cast<off_t>(options.preallocate_bytes)) != 0) {
      // Filesystems without fallocate (some NFS) just skip the early ENOSPC check; the
      // syscall, unlike posix_fallocate, never falls back to writing every block.
      if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL) {
        return ErrnoToStatus(
            errno, "allocate " + std::to_string(options.preallocate_bytes) + " bytes for " + path);
      }
    }
    return file;
  }

  absl::StatusOr<std::unique_ptr<ReadableFile>> NewReadableFile(
      const std::string& path, const ReadableFileOptions& options) override {
    int fd = -1;
    if (options.direct_io) {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
      if (fd >= 0) return std::make_unique<PosixReadableFile>(path, fd, /*direct=*/true);
      if (errno != EINVAL) return PosixError("open", path);
    }
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::make_unique<PosixReadableFile>(path, fd, /*direct=*/false);
  }

  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path);
    return static_cast<uint64_t>(st.st_size);
  }

  absl::StatusOr<bool> FileExists(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT) return false;
    return PosixError("stat", path);
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError("list", dir);
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) return ErrnoToStatus(err, "list " + dir);
    return names;
  }

  absl::Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
    return PosixError("mkdir", dir);
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("remove", path);
    return absl::OkStatus();
  }

  absl::Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return PosixError("rmdir", dir);
    return absl::OkStatus();
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return PosixError("rename to " + to, from);
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", dir);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoToStatus(err, "fsync " + dir);
    return absl::OkStatus();
  }
};

}  // namespace

Env* DefaultEnv() {
  static PosixEnv env;
  return &env;
}

}  // namespace baton::checkpoint
