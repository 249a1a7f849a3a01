// The checkpoint library's one seam to the filesystem (LevelDB's Env): every byte and every
// directory entry the library writes goes through it, so tests can swap in a fake that
// drops what was never fsynced. The Checkpointer and its shard writer/reader call it.
// Env and files are thread-safe: WriteAt/ReadAt on disjoint ranges from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace baton::checkpoint {

// O_DIRECT wants the file offset, the length and the memory address aligned to this.
inline constexpr size_t kDirectIoAlignment = 4096;

struct WritableFileOptions {
  // Ask for O_DIRECT; where the filesystem refuses it (tmpfs), the file opens buffered.
  bool direct_io = false;
  // Final size if known: the file is preallocated so ENOSPC shows up before any data.
  uint64_t preallocate_bytes = 0;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of [data, data+n) at `offset`. With direct() the caller aligns offset, n
  // and data to kDirectIoAlignment.
  virtual absl::Status WriteAt(uint64_t offset, const void* data, size_t n) = 0;
  // fsync: the file's data and size survive power loss once this returns OK.
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
  // Whether the file really was opened with O_DIRECT.
  virtual bool direct() const = 0;
};

struct ReadableFileOptions {
  // Ask for O_DIRECT; where the filesystem refuses it (tmpfs), the file opens buffered.
  bool direct_io = false;
};

// Reads kept in flight together (Linux AIO on an O_DIRECT file), for a reader that wants
// the disk busy while it hashes and copies what already arrived. Submit starts a read;
// Next waits for any one of them. A buffer stays in use until Next has returned its read
// or the queue is destroyed (which waits for every read still in flight).
// Thread-compatible: one thread per queue.
class ReadQueue {
 public:
  struct Done {
    uint64_t tag = 0;     // as given to Submit
    absl::Status status;  // a short read is a DataLoss error ("truncated")
  };
  virtual ~ReadQueue() = default;
  // Reads exactly n bytes at `offset` into `data`, aligned as ReadAt wants them.
  virtual absl::Status Submit(uint64_t offset, void* data, size_t n, uint64_t tag) = 0;
  // Blocks until a submitted read is done; call only while one is outstanding.
  virtual Done Next() = 0;
};

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  // Reads exactly n bytes at `offset`; a short read is a DataLoss error ("truncated").
  // With direct() the caller aligns offset, n and data to kDirectIoAlignment.
  virtual absl::Status ReadAt(uint64_t offset, void* data, size_t n) = 0;
  virtual absl::StatusOr<uint64_t> Size() = 0;
  // Whether the file really was opened with O_DIRECT.
  virtual bool direct() const { return false; }
  // A queue of up to `depth` reads of this file in flight at once. This default does each
  // read inside Submit with ReadAt, one at a time (what wrappers and fakes get).
  virtual std::unique_ptr<ReadQueue> NewReadQueue(int depth);
};

class Env {
 public:
  virtual ~Env() = default;
  // Creates or truncates `path`.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) = 0;
  virtual absl::StatusOr<std::unique_ptr<ReadableFile>> NewReadableFile(
      const std::string& path, const ReadableFileOptions& options) = 0;
  // NotFound when absent.
  virtual absl::StatusOr<uint64_t> FileSize(const std::string& path) = 0;
  virtual absl::StatusOr<bool> FileExists(const std::string& path) = 0;
  // Names in `dir` without "." and "..", in no particular order.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  // OK when the directory already exists; the parent must exist.
  virtual absl::Status CreateDir(const std::string& dir) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // The directory must be empty.
  virtual absl::Status RemoveDir(const std::string& dir) = 0;
  // Atomically replaces `to`. Durable only after SyncDir of both parents.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync of a directory: entries created, renamed or removed in it survive power loss.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
};

// The POSIX filesystem. Process-wide and stateless.
Env* DefaultEnv();

// Forwards every call to `target` (not owned): derive and override what should differ
// (a slow fsync, a hook at a given file). Thread-safe like its target.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override {
    return target_->NewWritableFile(path, options);
  }
  absl::StatusOr<std::unique_ptr<ReadableFile>> NewReadableFile(
      const std::string& path, const ReadableFileOptions& options) override {
    return target_->NewReadableFile(path, options);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    return target_->FileSize(path);
  }
  absl::StatusOr<bool> FileExists(const std::string& path) override {
    return target_->FileExists(path);
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    return target_->ListDir(dir);
  }
  absl::Status CreateDir(const std::string& dir) override { return target_->CreateDir(dir); }
  absl::Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  absl::Status RemoveDir(const std::string& dir) override { return target_->RemoveDir(dir); }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  absl::Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }

 private:
  Env* const target_;
};

// Writes `contents` to `path` atomically and durably: `path`.tmp, fsync, rename, fsync of
// the directory. Readers see the old file or the new one, never a mix.
absl::Status WriteFileAtomically(Env* env, const std::string& path, const std::string& contents);

// Same, without the two fsyncs: atomic for readers, not durable across power loss.
absl::Status ReplaceFileContents(Env* env, const std::string& path, const std::string& contents);

// Reads a whole small file (at most `max_bytes`; larger is InvalidArgument).
absl::StatusOr<std::string> ReadSmallFile(Env* env, const std::string& path, size_t max_bytes);

// "a/b/c" -> "a/b"; "c" -> ".".
std::string DirName(const std::string& path);
// Joins with exactly one '/'.
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace baton::checkpoint
