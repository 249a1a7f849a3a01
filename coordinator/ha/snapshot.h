// Snapshots between HA replicas (docs/ha.md, "The log's window"): how a standby that the
// log's window left behind, or one that joins a cluster seeded from an existing data dir,
// gets the leader's whole store instead of entries etcd no longer holds (Raft's
// InstallSnapshot, over baton's own backup format).
//
// The leader serves HaPeer.Snapshot: a RocksDB checkpoint of its store streamed file by
// file with each file's SHA-256 (coordinator/backup.h), to coordinator certificates only.
// The standby writes it beside its data dir (FetchSnapshot: complete or absent), then,
// with its store closed, swaps it in (InstallSnapshot: verified, loaded, and only then
// renamed into place; the old data dir is kept aside until the new one is whole) and
// re-executes itself, following the log from the snapshot's applied index. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "coordinator/store.h"
#include "proto/ha_peer.grpc.pb.h"
#include "proto/tls.h"

namespace baton::ha {

class SnapshotService final : public v1::HaPeer::CallbackService {
 public:
  // `insecure`: plaintext on loopback, where no certificate proves a coordinator.
  SnapshotService(Store* store, bool insecure) : store_(store), insecure_(insecure) {}
  grpc::ServerWriteReactor<v1::BackupChunk>* Snapshot(grpc::CallbackServerContext* ctx,
                                                      const v1::HaSnapshotRequest* req) override;

 private:
  Store* const store_;
  const bool insecure_;
};

// Who asks for a snapshot, and from where.
struct SnapshotSource {
  std::string address;  // the leader's host:port (its election key says it)
  TlsMaterial tls;      // this replica's: its coordinator certificate proves it
  std::string cluster_id;
  std::string replica;  // this replica's name
  uint64_t applied = 0;
  absl::Duration timeout = absl::Minutes(30);  // the whole transfer
};

// Streams the leader's store into `dir` (which must not exist): complete and checked
// against its manifest, or absent. Logs progress every 64 MiB.
absl::Status FetchSnapshot(const SnapshotSource& from, const std::string& dir);

// Replaces `data_dir` (its store closed) with the snapshot in `snapshot_dir`: the old
// data dir goes to `<data_dir>.behind-<pid>`, the snapshot is restored (verified, copied,
// loaded: RestoreStore), and only then are the old dir and the snapshot removed. On
// failure the old data dir is put back. A crash in between leaves no data dir, which a
// replica joins as an empty one (and fetches a snapshot again).
absl::Status InstallSnapshot(const std::string& snapshot_dir, const std::string& data_dir);

// Removes what an interrupted fetch or install left beside `data_dir` (its
// `.snapshot-*` and `.behind-*` siblings, each a whole store's size). Called before a
// fetch and after an install.
void RemoveSnapshotLeftovers(const std::string& data_dir);

}  // namespace baton::ha
