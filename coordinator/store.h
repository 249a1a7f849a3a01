// Durable coordinator state in RocksDB: one column family per kind (jobs, events, nodes,
// meta), zero-padded keys so scans come back in id order. Every Commit is one WriteBatch
// written with a synced WAL, so a transition and its event record land together or not at
// all. Owned by the coordinator's committer thread; Load* run before it starts.
// Thread-safe (RocksDB is), but one process owns the directory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/baton.pb.h"

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
  std::vector<v1::Node> nodes;
  std::optional<uint64_t> next_job_id;
  std::optional<v1::PolicyVersion> policy;  // a new policy version, kept forever (audit)

  bool empty() const {
    return jobs.empty() && events.empty() && nodes.empty() && !next_job_id && !policy;
  }
  void Append(StoreBatch&& other);
};

// All durable state, as read at start-up.
struct StoreSnapshot {
  std::vector<v1::Job> jobs;
  std::vector<v1::Event> events;  // ordered by (job id, seq)
  std::vector<v1::Node> nodes;
  uint64_t next_job_id = 1;
  std::optional<v1::PolicyVersion> policy;  // the newest stored version
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
  absl::StatusOr<StoreSnapshot> Load() const;

 private:
  Store() = default;
  absl::Status LoadFamily(
      rocksdb::ColumnFamilyHandle* cf,
      const std::function<absl::Status(std::string_view key, std::string_view value)>& fn) const;

  StoreOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // default, jobs, events, nodes, meta
};

}  // namespace baton
