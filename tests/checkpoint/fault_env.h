// Test support: an in-memory Env that models power loss the way a strict POSIX filesystem
// allows it. A file's bytes survive only as of its last Sync; a directory entry (create,
// rename, remove) survives only once its directory was SyncDir'ed. CrashAfterOps makes the
// n-th mutating call and every later one fail (the machine died there); PowerLoss then
// throws away everything not durable. Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint/env.h"

namespace baton::checkpoint::testing {

class FaultInjectionEnv : public Env {
 public:
  FaultInjectionEnv();

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override;
  // With options.direct_io the file is direct() and refuses unaligned reads like O_DIRECT.
  absl::StatusOr<std::unique_ptr<ReadableFile>> NewReadableFile(
      const std::string& path, const ReadableFileOptions& options) override;
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override;
  absl::StatusOr<bool> FileExists(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override;
  absl::Status CreateDir(const std::string& dir) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status RemoveDir(const std::string& dir) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status SyncDir(const std::string& dir) override;

  // The mutating call with this 0-based index fails, and so does everything after it.
  // -1 (the default) never crashes.
  void CrashAfterOps(int64_t n);
  // Mutating calls so far (writes, syncs, creates, renames, removes).
  int64_t mutating_ops() const;
  bool crashed() const;
  // Drops everything not durable and lets calls succeed again. With a non-zero `seed`,
  // each change not yet durable survives or not at random instead (a directory entry
  // flips either way, a file keeps its synced bytes with a random prefix of its newer
  // ones): the disk wrote some things back on its own before the lights went out.
  void PowerLoss(uint64_t seed = 0);

  // Test access to file bytes as they are now (not just the durable ones).
  absl::Status OverwriteByte(const std::string& path, uint64_t offset, char value);
  absl::Status Truncate(const std::string& path, uint64_t size);

  // Used by the file handles.
  absl::Status WriteAt(int ino, uint64_t offset, const void* data, size_t n);
  absl::Status SyncFile(int ino);
  absl::Status ReadAt(int ino, uint64_t offset, void* data, size_t n);
  absl::StatusOr<uint64_t> SizeOf(int ino);

 private:
  struct Inode {
    bool dir = false;
    std::string data, synced_data;                       // files
    std::map<std::string, int> entries, synced_entries;  // directories
  };
  // Counts a mutating call; fails once the crash point is reached.
  absl::Status MutateLocked();
  absl::StatusOr<int> WalkLocked(const std::vector<std::string>& parts, size_t count,
                                 const std::string& path) const;
  absl::StatusOr<int> LookupLocked(const std::string& path) const;
  // The parent directory's inode and the last path component.
  absl::StatusOr<std::pair<int, std::string>> ParentLocked(const std::string& path) const;
  void CollectGarbageLocked();
  static void KeepSomeUnsynced(Inode& node, uint64_t& rng);

  mutable std::mutex mu_;
  std::map<int, Inode> inodes_;
  int next_ino_ = 1;
  int64_t ops_ = 0;
  int64_t crash_at_ = -1;
  bool crashed_ = false;
};

}  // namespace baton::checkpoint::testing
