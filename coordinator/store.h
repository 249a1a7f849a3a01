// Durable coordinator state in RocksDB: one column family per kind (jobs, events, nodes,
// meta, the global event log and its per-job index), zero-padded keys so scans come back
// in id order. Every Commit is one WriteBatch
// written with a synced WAL, so a transition and its event record land together or not at
// all. Owned by the coordinator's committer thread; Load* run before it starts.
// Thread-safe (RocksDB is), but one process owns the directory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/api.pb.h"
#include "proto/store.pb.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class Env;
}  // namespace rocksdb

namespace baton {

struct StoreOptions {
  // Sync the WAL on every commit. Off only to prove, in tests, that durability needs it.
  bool sync = true;
  // RocksDB environment; nullptr for the default. Tests pass a fault-injecting one.
  rocksdb::Env* env = nullptr;
};

// Everything one state change writes. Applied as one synced WriteBatch.
struct StoreBatch {
  std::vector<v1::Job> jobs;  // stored without `events` (they live in their own family)
  std::vector<v1::Event> events;
  std::vector<v1::Event> log;  // the global log, keyed by log_seq (and indexed by job)
  std::vector<v1::Node> nodes;
  std::optional<uint64_t> next_job_id;
  std::optional<v1::PolicyVersion> policy;    // a new policy version, kept forever (audit)
  std::optional<v1::FairShareUsage> usage;    // replaces the stored fair-share ledger
  std::vector<v1::StoredToken> tokens;        // service tokens, created or revoked (by id)
  std::vector<v1::StoredExecSecret> secrets;  // a job's current attempt's exec secret
  // Jobs past their retention: the record, its events (both logs) and its secret go.
  std::vector<uint64_t> deleted_jobs;

  bool empty() const {
    return jobs.empty() && events.empty() && log.empty() && nodes.empty() && !next_job_id &&
           !policy && !usage && tokens.empty() && secrets.empty() && deleted_jobs.empty();
  }
  void Append(StoreBatch&& other);
};

// All durable state, as read at start-up.
struct StoreSnapshot {
  std::vector<v1::Job> jobs;
  std::vector<v1::Event> events;  // ordered by (job id, seq)
  std::vector<v1::Node> nodes;
  uint64_t next_job_id = 1;
  std::optional<v1::PolicyVersion> policy;    // the newest stored version
  std::optional<v1::FairShareUsage> usage;    // the last saved fair-share ledger
  uint64_t last_log_seq = 0;                  // the global log is not loaded: read it with ReadLog
  std::vector<v1::StoredExecSecret> secrets;  // one per job that has been launched
};

// Which global log records ReadLog returns.
struct LogQuery {
  uint64_t job_id = 0;     // 0: every event
  uint64_t after_seq = 0;  // log_seq > after_seq
  size_t limit = 0;        // at most this many, oldest first; 0: no limit
  uint32_t kinds = 0;      // bit (1 << EventKind) per kind wanted; 0: every kind
};

class Store {
 public:
  // Opens or creates the database at `path`. FailedPrecondition if another process holds
  // it; DataLoss if a record does not parse.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path, StoreOptions options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  absl::Status Commit(const StoreBatch& batch);
  const std::string& path() const { return path_; }
  // A consistent copy of the whole store in `dir` (which must not exist), taken while
  // commits run: a RocksDB checkpoint (SST files hard-linked where the filesystem allows).
  // Every commit acknowledged before the call is in it.
  absl::Status Checkpoint(const std::string& dir) const;
  // Bytes free for us on the store's filesystem (statvfs; UINT64_MAX when unknown).
  uint64_t FreeBytes() const;
  absl::StatusOr<StoreSnapshot> Load() const;
  // Every service token record (revoked and expired ones too).
  absl::StatusOr<std::vector<v1::StoredToken>> LoadTokens() const;
  // Global log records matching `q`, in log_seq order. Safe while commits run.
  absl::StatusOr<std::vector<v1::Event>> ReadLog(const LogQuery& q) const;
  // The global log's newest `n` records for `q` (its after_seq and limit ignored):
  // the log_seq to read after so that ReadLog returns them.
  absl::StatusOr<uint64_t> TailStart(const LogQuery& q, size_t n) const;

 private:
  Store() = default;
  absl::Status ScanLog(const LogQuery& q, bool backward,
                       const std::function<bool(const v1::Event&)>& fn) const;
  absl::Status ScanMeta(
      std::string_view prefix,
      const std::function<absl::Status(std::string_view key, std::string_view value)>& fn) const;
  absl::Status LoadFamily(
      rocksdb::ColumnFamilyHandle* cf,
      const std::function<absl::Status(std::string_view key, std::string_view value)>& fn) const;

  StoreOptions options_;
  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  // default, jobs, events, nodes, meta, log, log_job
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace baton
