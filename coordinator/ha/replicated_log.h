// The coordinators' replicated log in etcd (docs/ha.md): every state change is an entry
// at <prefix>/log/<index>, appended by the leader in a Txn that compares its fencing
// token (the create revision of <prefix>/leader), so a deposed leader can append
// nothing. Followers read the entries in order into their own RocksDB. The leader keeps
// a bounded window (Truncate) and compacts etcd's history behind it.
// Called by the leader's committer (Append) and the standbys' follow loop (Read).
// Thread-safe (stateless beyond the client).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/ha/etcd_client.h"

namespace baton::ha {

// The keys of one cluster's log under its prefix (--ha-prefix).
struct HaKeys {
  explicit HaKeys(std::string prefix);  // a trailing '/' is dropped
  std::string prefix;
  std::string leader() const { return prefix + "/leader"; }
  std::string cluster() const { return prefix + "/cluster"; }
  std::string log_dir() const { return prefix + "/log/"; }
  std::string log(uint64_t index) const;
  std::string chunk_dir() const { return prefix + "/chunk/"; }
  // A chunk's key names its writer's epoch: a deposed leader's leftovers at the same
  // index are never read as the new entry's.
  std::string chunk_of(uint64_t index, uint64_t epoch) const;
  std::string chunk(uint64_t index, uint64_t epoch, uint32_t n) const;
  std::string member_dir() const { return prefix + "/member/"; }
  std::string member(const std::string& name) const { return member_dir() + name; }
  // The index in a key under log_dir(); 0 when `key` is not one.
  uint64_t IndexOf(std::string_view key) const;
};

// A batch in the log and the leader that appended it.
struct LogRecord {
  uint64_t index = 0;
  uint64_t epoch = 0;
  std::string batch;  // a serialized StoredBatch, whole (chunks joined and checked)
};

// A batch larger than this goes to the log in chunks of this size (etcd refuses requests
// over 1.5 MiB by default).
inline constexpr size_t kChunkBytes = 1 << 20;

class ReplicatedLog {
 public:
  ReplicatedLog(EtcdClient* etcd, HaKeys keys, size_t chunk_bytes = kChunkBytes)
      : etcd_(etcd), keys_(std::move(keys)), chunk_bytes_(chunk_bytes) {}

  // Appends `batch` at `index` for the leader of `epoch`. OK once it is in the log, and
  // it lands once: a retry after an unknown outcome (a timeout) finds the entry it wrote.
  // FailedPrecondition when `epoch` no longer leads, or another entry holds `index`: the
  // caller must stop acting as leader. Unavailable when etcd did not answer by `deadline`.
  absl::Status Append(uint64_t index, uint64_t epoch, std::string_view batch, absl::Time deadline);

  // Up to `max` entries from `from` on, in order, stopping before a gap. OutOfRange when
  // `from` is below the first entry kept (truncated: the reader needs a snapshot).
  absl::StatusOr<std::vector<LogRecord>> Read(uint64_t from, size_t max);

  // The newest entry's index; 0 when the log is empty.
  absl::StatusOr<uint64_t> LastIndex();
  // The oldest kept entry's index; 0 when the log is empty.
  absl::StatusOr<uint64_t> FirstIndex();

  // Deletes the entries (and chunks) below `below`, as the leader of `epoch`
  // (FailedPrecondition when it no longer leads), then compacts etcd's history up to
  // that change.
  absl::Status Truncate(uint64_t below, uint64_t epoch);

  const HaKeys& keys() const { return keys_; }

 private:
  absl::StatusOr<uint64_t> EdgeIndex(bool last);
  // One fenced Txn putting `key` = `value` (when `only_new`, only if the key is absent).
  // OK, or FailedPrecondition (deposed, or the key holds another value), or Unavailable.
  absl::Status FencedPut(const std::string& key, const std::string& value, uint64_t epoch,
                         bool only_new);
  absl::StatusOr<std::string> ReadChunks(uint64_t index, uint64_t epoch, uint32_t chunks);

  EtcdClient* const etcd_;
  const HaKeys keys_;
  const size_t chunk_bytes_;
};

}  // namespace baton::ha
