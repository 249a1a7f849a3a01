// The POSIX Env: pread/pwrite on file descriptors, O_DIRECT where the filesystem takes it
// (with Linux AIO keeping several reads in flight), fallocate for early ENOSPC, fsync on
// files and directories.
#include <dirent.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
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

// Reads exactly n bytes at `offset` with pread; a short read is DataLoss ("truncated").
absl::Status PreadFully(int fd, const std::string& path, uint64_t offset, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return PosixError("read", path);
    }
    if (r == 0) {
      return absl::DataLossError(path + " is truncated: nothing at offset " +
                                 std::to_string(offset));
    }
    p += r;
    offset += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

// Linux AIO (io_submit) on an O_DIRECT descriptor: the reads really run in parallel in the
// block layer, as fio's libaio engine does, with no thread per read. A read the kernel
// returns short (end of file) is finished with pread, which names the truncation.
class AioReadQueue final : public ReadQueue {
 public:
  // nullptr when the kernel refuses a context (no AIO, aio-max-nr reached).
  static std::unique_ptr<AioReadQueue> Open(int fd, const std::string& path, int depth) {
    aio_context_t ctx = 0;
    if (::syscall(SYS_io_setup, depth, &ctx) != 0) return nullptr;
    return std::unique_ptr<AioReadQueue>(new AioReadQueue(fd, path, ctx));
  }
  ~AioReadQueue() override {
    // Every read in flight lands before its buffer can be freed.
    while (!pending_.empty()) {
      io_event ev{};
      const long got = ::syscall(SYS_io_getevents, ctx_, 1, 1, &ev, nullptr);
      if (got == 1) pending_.erase(ev.data);
      if (got < 0 && errno != EINTR) break;
    }
    ::syscall(SYS_io_destroy, ctx_);
  }

  absl::Status Submit(uint64_t offset, void* data, size_t n, uint64_t tag) override {
    iocb cb{};
    cb.aio_fildes = static_cast<uint32_t>(fd_);
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_buf = reinterpret_cast<uint64_t>(data);
    cb.aio_offset = static_cast<int64_t>(offset);
    cb.aio_nbytes = n;
    cb.aio_data = tag;
    iocb* list[1] = {&cb};
    long rc;
    do {
      rc = ::syscall(SYS_io_submit, ctx_, 1, list);
    } while (rc < 0 && errno == EINTR);
    if (rc != 1) return PosixError("submit a read of", path_);
    pending_[tag] = {offset, static_cast<char*>(data), n};
    return absl::OkStatus();
  }

  Done Next() override {
    if (pending_.empty()) return {0, absl::InternalError("ReadQueue::Next with no read submitted")};
    io_event ev{};
    long got;
    do {
      got = ::syscall(SYS_io_getevents, ctx_, 1, 1, &ev, nullptr);
    } while (got < 0 && errno == EINTR);
    if (got != 1) return {0, PosixError("wait for a read of", path_)};
    const auto it = pending_.find(ev.data);
    if (it == pending_.end()) return {ev.data, absl::InternalError("unknown read completed")};
    const Read r = it->second;
    pending_.erase(it);
    if (ev.res < 0) return {ev.data, ErrnoToStatus(static_cast<int>(-ev.res), "read " + path_)};
    const size_t got_bytes = static_cast<size_t>(ev.res);
    if (got_bytes >= r.n) return {ev.data, absl::OkStatus()};
    return {ev.data,
            PreadFully(fd_, path_, r.offset + got_bytes, r.data + got_bytes, r.n - got_bytes)};
  }

 private:
  struct Read {
    uint64_t offset;
    char* data;
    size_t n;
  };
  AioReadQueue(int fd, std::string path, aio_context_t ctx)
      : fd_(fd), path_(std::move(path)), ctx_(ctx) {}

  const int fd_;
  const std::string path_;
  const aio_context_t ctx_;
  std::map<uint64_t, Read> pending_;  // by tag
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd, bool direct)
      : path_(std::move(path)), fd_(fd), direct_(direct) {}
  ~PosixReadableFile() override { ::close(fd_); }

  absl::Status ReadAt(uint64_t offset, void* data, size_t n) override {
    return PreadFully(fd_, path_, offset, data, n);
  }
  // Buffered files keep the default: AIO on them runs each read synchronously anyway.
  std::unique_ptr<ReadQueue> NewReadQueue(int depth) override {
    if (direct_) {
      if (auto aio = AioReadQueue::Open(fd_, path_, depth)) return aio;
    }
    return ReadableFile::NewReadQueue(depth);
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
