// Backups of the coordinator's store while it serves, and their restore into a new data
// dir (docs: "Backup and restore" in the README's operator section).
//
// Backup: a RocksDB checkpoint of the store is taken next to its data dir
// (`<data-dir>.backup-<pid>`), streamed to the admin's client file by file with each
// file's SHA-256, then removed. One backup at a time.
// Restore (`baton-coordinator restore DIR`, the coordinator stopped): the backup is
// verified against its manifest, copied into `<data-dir>.restore-<pid>`, opened and
// loaded as the coordinator would, and only then renamed to the data dir, which must be
// absent or empty: a failed restore leaves nothing behind and never touches live data.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/statusor.h"
#include "coordinator/store.h"
#include "proto/api.pb.h"

namespace baton {

// The Backup RPC's stream for an authorized admin. ResourceExhausted while another
// backup runs; the checkpoint's error (e.g. disk full) otherwise.
grpc::ServerWriteReactor<v1::BackupChunk>* NewBackupStream(Store* store);

// What a restore found, for its report.
struct RestoreSummary {
  v1::BackupManifest manifest;
  size_t jobs = 0;        // job records
  size_t unfinished = 0;  // of them, not terminal: they resume when agents report
  uint64_t next_job_id = 0;
  uint64_t bytes = 0;
};
absl::StatusOr<RestoreSummary> RestoreStore(const std::string& backup_dir,
                                            const std::string& data_dir);

}  // namespace baton
