#include "coordinator/ha/snapshot.h"

#include <unistd.h>

#include <filesystem>

#include "common/backup_dir.h"
#include "coordinator/backup.h"
#include "proto/rpc_util.h"
#include "proto/threaded_writer.h"
#include "spdlog/spdlog.h"

namespace baton::ha {

namespace fs = std::filesystem;

grpc::ServerWriteReactor<v1::BackupChunk>* SnapshotService::Snapshot(
    grpc::CallbackServerContext* ctx, const v1::HaSnapshotRequest* req) {
  if (!insecure_) {
    Peer peer = PeerOf(*ctx);
    if (peer.kind != Peer::Kind::kCoordinator) {
      spdlog::warn("HA: snapshot for {} refused: not a coordinator's certificate", ctx->peer());
      return FinishedStream<v1::BackupChunk>(
          grpc::Status(peer.kind == Peer::Kind::kNone ? grpc::StatusCode::UNAUTHENTICATED
                                                      : grpc::StatusCode::PERMISSION_DENIED,
                       "a snapshot is for coordinator replicas: it needs a coordinator certificate "
                       "(O=baton-coordinator) signed by the cluster CA"));
    }
  }
  auto state = store_->ReadHaState();
  if (!state.ok()) return FinishedStream<v1::BackupChunk>(ToGrpc(state.status()));
  if (req->cluster_id() != state->cluster_id) {
    return FinishedStream<v1::BackupChunk>(grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION, "this leader's cluster is " + state->cluster_id +
                                                   ", not '" + req->cluster_id() +
                                                   "': check --ha-prefix"));
  }
  spdlog::info(
      "HA: snapshot for replica {} ({}), which holds the log up to {}; this store "
      "holds it up to {}",
      req->replica(), ctx->peer(), req->applied_index(), state->applied);
  return NewBackupStream(store_);
}

absl::Status FetchSnapshot(const SnapshotSource& from, const std::string& dir) {
  auto creds = ChannelCredentials(from.tls, from.address);
  if (!creds.ok()) return creds.status();
  grpc::ChannelArguments args;
  SetClientMessageLimits(&args);
  if (!from.tls.insecure) VerifyServerAs(kCoordinatorTlsName, &args);
  auto stub = v1::HaPeer::NewStub(grpc::CreateCustomChannel(from.address, *creds, args));
  auto writer = BackupWriter::Start(dir);
  if (!writer.ok()) return writer.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + from.timeout));
  v1::HaSnapshotRequest req;
  req.set_cluster_id(from.cluster_id);
  req.set_replica(from.replica);
  req.set_applied_index(from.applied);
  auto reader = stub->Snapshot(&ctx, req);
  v1::BackupChunk chunk;
  uint64_t said = 0;
  bool finished = false;
  absl::Status failed;
  while (reader->Read(&chunk)) {
    if (chunk.has_manifest()) {
      failed = writer->Finish(chunk.manifest());
      finished = failed.ok();
      break;
    }
    if (failed = writer->Add(chunk); !failed.ok()) break;
    if (writer->bytes() - said >= (64u << 20)) {
      said = writer->bytes();
      spdlog::info("HA: snapshot from {}: {} MiB in {} files so far", from.address, said >> 20,
                   writer->files());
    }
  }
  if (!failed.ok()) {
    ctx.TryCancel();
    (void)reader->Finish();
    return failed;
  }
  if (absl::Status s = FromGrpc(reader->Finish()); !s.ok()) return s;
  if (!finished) return absl::DataLossError("snapshot from " + from.address + " ended early");
  spdlog::info("HA: snapshot from {}: {} bytes in {} files, checked", from.address, writer->bytes(),
               writer->files());
  return absl::OkStatus();
}

absl::Status InstallSnapshot(const std::string& snapshot_dir, const std::string& data_dir) {
  std::error_code ec;
  const std::string behind = data_dir + ".behind-" + std::to_string(::getpid());
  fs::remove_all(behind, ec);
  bool moved = false;
  if (fs::exists(data_dir, ec)) {
    fs::rename(data_dir, behind, ec);
    if (ec) return absl::UnavailableError("HA: move " + data_dir + " aside: " + ec.message());
    moved = true;
  }
  auto restored = RestoreStore(snapshot_dir, data_dir);
  if (!restored.ok()) {
    if (moved) {
      fs::remove_all(data_dir, ec);
      fs::rename(behind, data_dir, ec);
    }
    return restored.status();
  }
  spdlog::info("HA: installed a snapshot in {}: {} jobs ({} not finished), next job id {}",
               data_dir, restored->jobs, restored->unfinished, restored->next_job_id);
  fs::remove_all(behind, ec);
  fs::remove_all(snapshot_dir, ec);
  RemoveSnapshotLeftovers(data_dir);
  return absl::OkStatus();
}

void RemoveSnapshotLeftovers(const std::string& data_dir) {
  const fs::path dir = fs::absolute(data_dir).lexically_normal();
  const std::string base = dir.filename().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    for (const char* tag : {".snapshot-", ".behind-"}) {
      if (name.rfind(base + tag, 0) == 0) {
        spdlog::info("HA: removing {}, left by an interrupted snapshot", entry.path().string());
        std::error_code ignored;
        fs::remove_all(entry.path(), ignored);
      }
    }
  }
}

}  // namespace baton::ha
