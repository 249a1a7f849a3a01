// The multi-rank commit protocol (FORMAT.md "Commit protocol"). Every rank walks through
// the same collective calls whatever fails locally, so that no rank waits forever.
#include <cstdio>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_internal.h"
#include "checkpoint/fence.h"
#include "checkpoint/manifest.h"
#include "common/status.h"

namespace baton::checkpoint {
namespace {

// "OK <size> <hash>" or "ER <status wire>".
std::string EncodeShardResult(const absl::StatusOr<ShardInfo>& shard) {
  if (!shard.ok()) return "ER " + StatusToWire(shard.status());
  return "OK " + std::to_string(shard->size) + " " + std::to_string(shard->xxh3);
}

absl::StatusOr<ShardInfo> DecodeShardResult(const std::string& wire, int rank) {
  if (wire.compare(0, 3, "ER ") == 0) return WireToStatus(wire.substr(3));
  ShardInfo info;
  unsigned long long size = 0, hash = 0;
  if (std::sscanf(wire.c_str(), "OK %llu %llu", &size, &hash) != 2) {
    return absl::InternalError("rank " + std::to_string(rank) + " sent an unreadable result");
  }
  info.size = size;
  info.xxh3 = hash;
  return info;
}

// Writes and fsyncs this rank's shard. Its directory entry becomes durable with rank 0's
// fsync of step-<N> after the MANIFEST rename, before anyone hears of the commit.
absl::StatusOr<ShardInfo> WriteOwnShard(Checkpointer::State& s, const SaveRequest& request) {
  return WriteShardFile(s.env, s.dir->ShardPath(request.step, s.collective->rank()),
                        request.file_bytes, request.segments, s.io);
}

// Rank 0: the manifest from every rank's result, committed durably. Returns the status
// everyone will see; on failure nothing of this step stays committed.
absl::Status CommitIfComplete(Checkpointer::State& s, const SaveRequest& request,
                              const std::vector<std::string>& results) {
  Manifest m;
  m.step = request.step;
  m.attempt = s.attempt;
  m.world_size = s.collective->size();
  m.time_ms = s.clock->NowMs();
  m.metadata = request.metadata;
  if (results.size() != static_cast<size_t>(m.world_size)) {
    return absl::InternalError("gathered " + std::to_string(results.size()) +
                               " shard results from " + std::to_string(m.world_size) + " ranks");
  }
  for (int r = 0; r < m.world_size; ++r) {
    absl::StatusOr<ShardInfo> shard = DecodeShardResult(results[r], r);
    if (!shard.ok()) {
      return absl::Status(shard.status().code(), "rank " + std::to_string(r) + ": " +
                                                     std::string(shard.status().message()));
    }
    m.shards.push_back(*shard);
  }
  const std::string text = EncodeManifest(m);
  if (text.size() > kMaxManifestBytes) {
    return absl::InvalidArgumentError("the manifest would have " + std::to_string(text.size()) +
                                      " bytes, over the 1 MiB limit: use less metadata");
  }
  // An attempt that started elsewhere in the meantime owns the directory now (FORMAT.md
  // "Fence"); a commit racing its start lands past the fence step, where restore ignores it.
  BATON_RETURN_IF_ERROR(CheckFence(s.env, s.dir->root(), s.attempt));
  absl::Status committed = s.dir->CommitManifest(request.step, text);
  if (!committed.ok()) {
    // Whatever got renamed must not pair with shards that are about to go.
    s.env->RemoveFile(s.dir->ManifestPath(request.step)).IgnoreError();
    s.env->RemoveFile(s.dir->ManifestPath(request.step) + ".tmp").IgnoreError();
  }
  return committed;
}

// After a failed save: each rank frees its shard's space; rank 0 drops the directory if
// it is empty by then. Without a MANIFEST nothing left here is ever restored.
void CleanUpFailedSave(Checkpointer::State& s, int64_t step) {
  s.env->RemoveFile(s.dir->ShardPath(step, s.collective->rank())).IgnoreError();
  if (s.is_root()) s.env->RemoveDir(s.dir->StepDir(step)).IgnoreError();
}

absl::Status Fail(Checkpointer::State& s, int64_t step, const absl::Status& why) {
  if (s.is_root()) s.WriteProgress("failed", step);
  return absl::Status(why.code(), "save of step " + std::to_string(step) +
                                      " failed: " + std::string(why.message()));
}

void AfterCommit(Checkpointer::State& s, int64_t step) {
  s.committed_step.store(step);
  if (!s.is_root()) return;
  s.WriteProgress("committed", step);
  s.StartPrune(step);
}

}  // namespace

std::string StatusToWire(const absl::Status& status) {
  if (status.ok()) return "";
  return std::to_string(static_cast<int>(status.code())) + " " + std::string(status.message());
}

absl::Status WireToStatus(const std::string& wire) {
  if (wire.empty()) return absl::OkStatus();
  const size_t space = wire.find(' ');
  int code = 0;
  if (space == std::string::npos || std::sscanf(wire.c_str(), "%d", &code) != 1 || code <= 0 ||
      code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::InternalError("unreadable status from another rank: " + wire.substr(0, 80));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), wire.substr(space + 1));
}

absl::Status RunSave(Checkpointer::State& s, const SaveRequest& request) {
  Collective& c = *s.collective;
  const int64_t step = request.step;
  std::string prepared;
  if (s.is_root()) {
    s.WriteProgress("saving", step);
    absl::Status ready = CheckFence(s.env, s.dir->root(), s.attempt);
    if (ready.ok()) ready = s.dir->PrepareStep(step);
    prepared = StatusToWire(ready);
  }
  BATON_ASSIGN_OR_RETURN(prepared, c.Broadcast(prepared));
  if (!prepared.empty()) {
    const absl::Status why = WireToStatus(prepared);
    return Fail(s, step,
                absl::Status(why.code(), "rank 0 could not prepare " + s.dir->StepDir(step) + ": " +
                                             std::string(why.message())));
  }
  const std::string mine = EncodeShardResult(WriteOwnShard(s, request));
  BATON_ASSIGN_OR_RETURN(std::vector<std::string> results, c.AllGather(mine));
  std::string outcome;
  if (s.is_root()) outcome = StatusToWire(CommitIfComplete(s, request, results));
  BATON_ASSIGN_OR_RETURN(outcome, c.Broadcast(outcome));
  if (!outcome.empty()) {
    const absl::Status why = WireToStatus(outcome);
    // A superseded attempt touches nothing more: the files may be the new attempt's now.
    if (!IsSuperseded(why)) CleanUpFailedSave(s, step);
    return Fail(s, step, why);
  }
  AfterCommit(s, step);
  return absl::OkStatus();
}

}  // namespace baton::checkpoint
