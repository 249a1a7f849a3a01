// Restore: rank 0 proposes committed steps newest first, every rank checks its shard (cheap
// checks before any buffer is touched, then the verified read), and the ranks move to an
// older step together whenever any rank's shard fails.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_internal.h"
#include "checkpoint/fence.h"
#include "checkpoint/manifest.h"
#include "common/status.h"

namespace baton::checkpoint {
namespace {

// The manifest text of a committed step, checked to parse, to name that step and to be
// allowed by the fence (not committed by a superseded attempt after it was superseded).
absl::StatusOr<std::string> ReadManifestText(Checkpointer::State& s, const Fence& fence,
                                             int64_t step) {
  BATON_ASSIGN_OR_RETURN(bool committed, s.dir->HasManifest(step));
  if (!committed) return absl::NotFoundError("no MANIFEST (the save never committed)");
  BATON_ASSIGN_OR_RETURN(std::string text,
                         ReadSmallFile(s.env, s.dir->ManifestPath(step), kMaxManifestBytes));
  BATON_ASSIGN_OR_RETURN(Manifest m, ParseManifest(text));
  if (m.step != step) {
    return absl::DataLossError("its MANIFEST is for step " + std::to_string(m.step));
  }
  if (!FenceAllows(fence, m.attempt, step)) {
    return absl::FailedPreconditionError(
        "attempt " + std::to_string(m.attempt) + " committed it after attempt " +
        std::to_string(fence.attempt) + " had superseded it (FENCE)");
  }
  return text;
}

// Rank 0: "M<manifest>" for the newest committed step below *below, "N" when none is
// left, "E<status>" when the directory cannot be listed.
std::string NextCandidate(Checkpointer::State& s, int64_t* below) {
  absl::StatusOr<std::vector<int64_t>> steps = s.dir->ListSteps();
  if (!steps.ok()) return "E" + StatusToWire(steps.status());
  absl::StatusOr<Fence> fence = ReadFence(s.env, s.dir->root());
  if (!fence.ok()) return "E" + StatusToWire(fence.status());
  for (int64_t step : *steps) {
    if (step >= *below) continue;
    *below = step;
    absl::StatusOr<std::string> text = ReadManifestText(s, *fence, step);
    if (text.ok()) return "M" + *text;
    s.Log("skipping " + s.dir->StepDir(step) + ": " + std::string(text.status().message()));
  }
  return "N";
}

struct ShardPlan {
  std::vector<ReadTarget> targets;
  std::vector<size_t> device_buffers;  // indexes into State::buffers, staged at their offset
  std::vector<uint64_t> device_offsets;
};

// Matches the shard's buffers with the registered ones: any difference is the program's
// doing, not damage, so it is FailedPrecondition.
absl::Status MatchBuffers(Checkpointer::State& s, const ShardHeader& h, ShardPlan* plan) {
  const std::string where =
      "checkpoint step " + std::to_string(h.step) + " rank " + std::to_string(h.rank);
  size_t matched = 0;
  for (const BufferEntry& e : h.buffers) {
    size_t i = 0;
    while (i < s.buffers.size() && s.buffers[i].name != e.name) ++i;
    if (i == s.buffers.size()) {
      return absl::FailedPreconditionError(where + " has buffer '" + e.name +
                                           "', which is not registered");
    }
    const RegisteredBuffer& b = s.buffers[i];
    if (b.size != e.size) {
      return absl::FailedPreconditionError(where + " has " + std::to_string(e.size) +
                                           " bytes for buffer '" + e.name + "' but " +
                                           std::to_string(b.size) + " are registered");
    }
    ++matched;
    if (e.size == 0) continue;
    if (b.device) {
      plan->device_buffers.push_back(i);
      plan->device_offsets.push_back(e.offset);
    }
    plan->targets.push_back({e.offset, b.device ? s.staging.data() + e.offset : b.data, e.size});
  }
  if (matched != s.buffers.size()) {
    return absl::FailedPreconditionError(where + " has " + std::to_string(matched) + " of the " +
                                         std::to_string(s.buffers.size()) + " registered buffers");
  }
  return absl::OkStatus();
}

absl::StatusOr<ShardHeader> ReadShardHeader(ReadableFile& file, const std::string& path,
                                            uint64_t size) {
  if (size < kShardAlignment) return absl::DataLossError(path + " is truncated");
  std::string block(kShardAlignment, '\0');
  BATON_RETURN_IF_ERROR(file.ReadAt(0, block.data(), block.size()));
  BATON_ASSIGN_OR_RETURN(uint64_t header_bytes, ShardHeaderBytes(block));
  if (header_bytes > size) return absl::DataLossError(path + " is truncated inside its header");
  block.resize(header_bytes);
  BATON_RETURN_IF_ERROR(file.ReadAt(0, block.data(), header_bytes));
  absl::StatusOr<ShardHeader> h = ParseShardHeader(block);
  if (!h.ok()) return absl::DataLossError(path + ": " + std::string(h.status().message()));
  return h;
}

// Everything about this rank's shard that can be checked without touching any buffer.
absl::Status PlanShardRead(Checkpointer::State& s, const Manifest& m, ShardPlan* plan) {
  const int rank = s.collective->rank();
  const std::string path = s.dir->ShardPath(m.step, rank);
  BATON_ASSIGN_OR_RETURN(auto file, s.env->NewReadableFile(path, {}));
  BATON_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size != m.shards[rank].size) {
    return absl::DataLossError(path + " has " + std::to_string(size) +
                               " bytes but the manifest records " +
                               std::to_string(m.shards[rank].size) + " (truncated or replaced)");
  }
  BATON_ASSIGN_OR_RETURN(ShardHeader h, ReadShardHeader(*file, path, size));
  if (h.step != m.step || h.rank != rank || h.world_size != m.world_size || h.file_bytes != size) {
    return absl::DataLossError(path + " belongs to step " + std::to_string(h.step) + " rank " +
                               std::to_string(h.rank) + " of " + std::to_string(h.world_size) +
                               ", not to this checkpoint");
  }
  bool any_device = false;
  for (const RegisteredBuffer& b : s.buffers) any_device |= b.device;
  if (any_device) {
    BATON_RETURN_IF_ERROR(s.staging.Ensure(h.file_bytes, s.options.device_memory));
  }
  return MatchBuffers(s, h, plan);
}

// Reads and verifies the shard, then moves staged device buffers to the device.
absl::Status ReadPlanned(Checkpointer::State& s, const Manifest& m, const ShardPlan& plan) {
  const int rank = s.collective->rank();
  BATON_RETURN_IF_ERROR(
      ReadShardFile(s.env, s.dir->ShardPath(m.step, rank), m.shards[rank], plan.targets, s.io));
  if (plan.device_buffers.empty()) return absl::OkStatus();
  DeviceMemory* device = s.options.device_memory;
  for (size_t k = 0; k < plan.device_buffers.size(); ++k) {
    const RegisteredBuffer& b = s.buffers[plan.device_buffers[k]];
    BATON_RETURN_IF_ERROR(
        device->CopyToDeviceAsync(b.data, s.staging.data() + plan.device_offsets[k], b.size));
  }
  return device->Synchronize();
}

// Every rank's check, gathered: "" when all passed, else the reasons. A FailedPrecondition
// on any rank is returned as the error instead (the same on every rank).
absl::StatusOr<std::string> Agree(Collective& c, const absl::Status& mine) {
  BATON_ASSIGN_OR_RETURN(std::vector<std::string> all, c.AllGather(StatusToWire(mine)));
  std::string reasons;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    const absl::Status st = WireToStatus(all[r]);
    if (st.code() == absl::StatusCode::kFailedPrecondition) return st;
    reasons += (reasons.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " +
               std::string(st.message());
  }
  return reasons;
}

// One candidate: true when restored, false when some rank's shard failed (logged).
absl::StatusOr<bool> TryRestore(Checkpointer::State& s, const Manifest& m, bool* overwritten,
                                std::string* failures) {
  ShardPlan plan;
  BATON_ASSIGN_OR_RETURN(std::string reasons, Agree(*s.collective, PlanShardRead(s, m, &plan)));
  if (reasons.empty()) {
    *overwritten = true;
    BATON_ASSIGN_OR_RETURN(reasons, Agree(*s.collective, ReadPlanned(s, m, plan)));
  }
  if (reasons.empty()) return true;
  const std::string line = "skipping " + s.dir->StepDir(m.step) + ": " + reasons;
  if (s.is_root()) s.Log(line);
  *failures += (failures->empty() ? "" : " | ") + line;
  return false;
}

CheckpointInfo ToInfo(const Manifest& m) {
  CheckpointInfo info{m.step, m.attempt, m.world_size, m.time_ms, 0, m.metadata};
  for (const ShardInfo& shard : m.shards) info.bytes += shard.size;
  return info;
}

}  // namespace

absl::StatusOr<std::optional<CheckpointInfo>> Checkpointer::RestoreLatest() {
  State& s = *state_;
  s.JoinBackground();
  int64_t below = std::numeric_limits<int64_t>::max();
  bool overwritten = false;
  std::string failures;
  while (true) {
    BATON_ASSIGN_OR_RETURN(std::string msg,
                           s.collective->Broadcast(s.is_root() ? NextCandidate(s, &below) : ""));
    if (msg == "N") {
      if (!overwritten) return std::optional<CheckpointInfo>();
      return absl::DataLossError(
          "no checkpoint verifies and the registered buffers were partly overwritten: " + failures);
    }
    if (msg.empty() || msg[0] != 'M') return WireToStatus(msg.substr(msg.empty() ? 0 : 1));
    BATON_ASSIGN_OR_RETURN(Manifest m, ParseManifest(msg.substr(1)));
    if (m.world_size != s.collective->size()) {
      return absl::FailedPreconditionError(
          "checkpoint " + s.dir->StepDir(m.step) + " was written by " +
          std::to_string(m.world_size) + " ranks but this job has " +
          std::to_string(s.collective->size()) + "; a restore needs the same world size");
    }
    BATON_ASSIGN_OR_RETURN(bool restored, TryRestore(s, m, &overwritten, &failures));
    if (!restored) continue;
    s.metadata = m.metadata;
    s.committed_step.store(m.step);
    if (s.is_root()) s.WriteProgress("committed", m.step);
    return std::optional<CheckpointInfo>(ToInfo(m));
  }
}

absl::StatusOr<std::vector<CheckpointInfo>> Checkpointer::List() {
  State& s = *state_;
  s.JoinBackground();  // so that pruning done by this process's saves is reflected
  BATON_ASSIGN_OR_RETURN(std::vector<int64_t> steps, s.dir->ListSteps());
  BATON_ASSIGN_OR_RETURN(Fence fence, ReadFence(s.env, s.dir->root()));
  std::vector<CheckpointInfo> out;
  for (int64_t step : steps) {
    absl::StatusOr<std::string> text = ReadManifestText(s, fence, step);
    if (!text.ok()) continue;
    absl::StatusOr<Manifest> m = ParseManifest(*text);
    if (m.ok()) out.push_back(ToInfo(*m));
  }
  return out;
}

}  // namespace baton::checkpoint
