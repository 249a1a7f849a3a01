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
#include "coordinator/event_list.h"
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
  // Skip the WAL: for generators filling a store in bulk (a crash loses everything not
  // flushed; Store's destructor flushes). Never for a coordinator.
  bool bulk = false;
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
  std::vector<v1::JobArray> arrays;      // array records (by id), each replacing the stored one
  std::vector<uint64_t> deleted_arrays;  // array records past their retention
  // The usage rollup: what this change charged, added to its (day, tenant) records, and
  // the day before which records are deleted (0: none; --usage-retention).
  std::vector<v1::UsageDelta> usage_deltas;
  int64_t usage_before_day = 0;

  bool empty() const {
    return jobs.empty() && events.empty() && log.empty() && nodes.empty() && !next_job_id &&
           !policy && !usage && tokens.empty() && secrets.empty() && deleted_jobs.empty() &&
           arrays.empty() && deleted_arrays.empty() && usage_deltas.empty() &&
           usage_before_day == 0;
  }
  void Append(StoreBatch&& other);
};

// What the coordinator needs to run, as read at start-up. Finished jobs are not in it:
// ReadJob and ScanFinished read them when asked, so start-up time follows live work,
// not history.
struct StoreSnapshot {
  // Every unfinished job, in id order, and their events, ordered by (job id, seq); both
  // empty when LoadOptions::sink took them.
  std::vector<v1::Job> jobs;
  std::vector<v1::Event> events;
  std::vector<v1::Node> nodes;
  uint64_t next_job_id = 1;
  std::optional<v1::PolicyVersion> policy;    // the newest stored version
  std::optional<v1::FairShareUsage> usage;    // the last saved fair-share ledger
  uint64_t last_log_seq = 0;                  // the global log is not loaded: read it with ReadLog
  std::vector<v1::StoredExecSecret> secrets;  // an unfinished job's, once it has been launched
  std::vector<v1::JobArray> arrays;           // every array record, in id order
};

// Which finished jobs ScanEnded returns (history).
struct EndedQuery {
  int64_t since_ms = 0;    // ended at or after
  int64_t until_ms = 0;    // ended before
  std::string user;        // "": any
  std::string tenant;      // "": any
  uint32_t states = 0;     // bit (1 << JobState) per state wanted; 0: any
  std::string before_key;  // a page's last key: only entries before it

  bool Matches(const std::string& u, const std::string& t, v1::JobState state) const {
    return (user.empty() || u == user) && (tenant.empty() || t == tenant) &&
           (states == 0 || (states & (1u << state)) != 0);
  }
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

  // `ha_index` > 0: the batch is that entry of the replicated log (coordinator/ha/), and
  // the store records it as applied in the same write.
  absl::Status Commit(const StoreBatch& batch, uint64_t ha_index = 0);
  // The replicated log's mark on this data dir: whose cluster it belongs to ("" before HA
  // was first turned on) and the last log entry it holds.
  struct HaState {
    std::string cluster_id;
    uint64_t applied = 0;
  };
  absl::StatusOr<HaState> ReadHaState() const;
  absl::Status WriteHaState(const HaState& state);
  // True when no job, node, token or policy was ever stored here (a new data dir).
  absl::StatusOr<bool> Empty() const;
  const std::string& path() const { return path_; }
  // A consistent copy of the whole store in `dir` (which must not exist), taken while
  // commits run: a RocksDB checkpoint (SST files hard-linked where the filesystem allows).
  // Every commit acknowledged before the call is in it.
  absl::Status Checkpoint(const std::string& dir) const;
  // Bytes free for us on the store's filesystem (statvfs; UINT64_MAX when unknown).
  uint64_t FreeBytes() const;
  struct LoadOptions {
    // A queue this long is read on one thread; a longer one on one more thread per this
    // many jobs (up to the cores, at most 8), in id ranges joined in order.
    uint64_t jobs_per_thread = 50'000;
    // When set, each live job goes to it instead of into `jobs` and `events`, on the thread
    // loading its id range: `part` numbers the ranges in id order (< kMaxLoadThreads), and
    // a range's jobs come from one thread, in id order. Its spec's env and command come
    // packed beside it (packed_spec.h: split from the record, never parsed) and its events
    // as stored, unparsed. So JobManager::Recover builds its entries in parallel, in a
    // fraction of the time and memory.
    using Sink =
        std::function<void(size_t part, v1::Job job, std::string packed, EventList events)>;
    Sink sink;
  };
  static constexpr size_t kMaxLoadThreads = 8;
  absl::StatusOr<StoreSnapshot> Load() const { return Load(LoadOptions()); }
  absl::StatusOr<StoreSnapshot> Load(const LoadOptions& options) const;
  // One job's record (any state), with its events if asked; NotFound when not stored.
  absl::StatusOr<v1::Job> ReadJob(uint64_t id, bool with_events) const;
  // Finished jobs with an id above `after_id`, in id order, without their events, until
  // `fn` returns false. Safe while commits run.
  absl::Status ScanFinished(uint64_t after_id, const std::function<bool(v1::Job)>& fn) const;
  // Ids of finished jobs that ended at or before `cutoff_ms`, oldest end first, at most
  // `limit` (retention).
  absl::StatusOr<std::vector<uint64_t>> EndedBefore(int64_t cutoff_ms, size_t limit) const;
  // Finished jobs matching `q`, newest end first, without events, until `fn` returns false;
  // `key` is the index entry's, for the next page's before_key. Safe while commits run.
  absl::Status ScanEnded(const EndedQuery& q,
                         const std::function<bool(const std::string& key, v1::Job job)>& fn) const;
  // The usage rollup's (day, tenant) records for days first_day..last_day, in day order;
  // `wants` (may be null: every tenant) picks the tenants read, before a record is parsed.
  absl::Status ScanUsage(int64_t first_day, int64_t last_day,
                         const std::function<void(int64_t day, const std::string& tenant,
                                                  const v1::UsageRecord& rec)>& fn,
                         const std::function<bool(std::string_view tenant)>& wants = nullptr) const;
  // How many finished jobs are stored.
  absl::StatusOr<uint64_t> CountFinished() const;
  // Every service token record (revoked and expired ones too).
  absl::StatusOr<std::vector<v1::StoredToken>> LoadTokens() const;
  // Global log records matching `q`, in log_seq order. Safe while commits run.
  absl::StatusOr<std::vector<v1::Event>> ReadLog(const LogQuery& q) const;
  // The global log's newest `n` records for `q` (its after_seq and limit ignored):
  // the log_seq to read after so that ReadLog returns them.
  absl::StatusOr<uint64_t> TailStart(const LogQuery& q, size_t n) const;

 private:
  Store() = default;
  // The live jobs with keys in [from, to) ("" to: to the end) into `part` (Load's ranges).
  absl::Status LoadLive(const LoadOptions& options, size_t part_index, const std::string& from,
                        const std::string& to, StoreSnapshot* part) const;
  // Builds the `live` and `ended` indexes of a store written before them (once).
  absl::Status BuildIndexes();
  absl::Status ScanPrefix(
      rocksdb::ColumnFamilyHandle* cf, std::string_view prefix,
      const std::function<absl::Status(std::string_view key, std::string_view value)>& fn) const;
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
  // default, jobs, events, nodes, meta, log, log_job, live, ended, usage
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace baton
