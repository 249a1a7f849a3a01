#include "checkpoint/fence.h"

#include <cstdio>
#include <vector>

#include "checkpoint/manifest.h"
#include "common/status.h"

namespace baton::checkpoint {

absl::StatusOr<Fence> ReadFence(Env* env, const std::string& root) {
  const std::string path = JoinPath(root, kFenceFile);
  BATON_ASSIGN_OR_RETURN(bool exists, env->FileExists(path));
  if (!exists) return Fence{};
  BATON_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(env, path, 4096));
  Fence f;
  long long attempt = 0, step = 0;
  if (std::sscanf(text.c_str(), "attempt %lld\nstep %lld\n", &attempt, &step) != 2 || attempt < 0 ||
      step < -1) {
    return absl::DataLossError(path + " is damaged: expected 'attempt N' and 'step S' lines");
  }
  f.attempt = attempt;
  f.step = step;
  return f;
}

absl::Status Superseded(int64_t by) {
  return absl::FailedPreconditionError(
      "superseded by attempt " + std::to_string(by) +
      ": the job was relaunched elsewhere, so this attempt may no longer commit; stop it");
}

bool IsSuperseded(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.message().find("superseded by attempt") != absl::string_view::npos;
}

absl::Status CheckFence(Env* env, const std::string& root, int64_t attempt) {
  BATON_ASSIGN_OR_RETURN(Fence now, ReadFence(env, root));
  if (now.attempt > attempt) return Superseded(now.attempt);
  return absl::OkStatus();
}

absl::StatusOr<Fence> RaiseFence(Env* env, CheckpointDir& dir, int64_t attempt) {
  BATON_ASSIGN_OR_RETURN(Fence now, ReadFence(env, dir.root()));
  if (now.attempt > attempt) return Superseded(now.attempt);
  if (now.attempt == attempt) return now;  // raised by an earlier Create of this attempt
  Fence next{attempt, -1};
  BATON_ASSIGN_OR_RETURN(std::vector<int64_t> steps, dir.ListSteps());
  for (int64_t step : steps) {  // newest first
    BATON_ASSIGN_OR_RETURN(bool committed, dir.HasManifest(step));
    if (!committed) continue;
    absl::StatusOr<std::string> text =
        ReadSmallFile(env, dir.ManifestPath(step), kMaxManifestBytes);
    absl::StatusOr<Manifest> m =
        text.ok() ? ParseManifest(*text) : absl::StatusOr<Manifest>(text.status());
    if (!m.ok()) continue;  // damaged: restore skips it too
    if (!FenceAllows(now, m->attempt, step)) {
      // Committed by a superseded attempt past its fence: never restored, so uncommitted.
      BATON_RETURN_IF_ERROR(env->RemoveFile(dir.ManifestPath(step)));
      BATON_RETURN_IF_ERROR(env->SyncDir(dir.StepDir(step)));
      continue;
    }
    if (next.step < 0) next.step = step;
  }
  BATON_RETURN_IF_ERROR(WriteFileAtomically(
      env, JoinPath(dir.root(), kFenceFile),
      "attempt " + std::to_string(next.attempt) + "\nstep " + std::to_string(next.step) + "\n"));
  return next;
}

}  // namespace baton::checkpoint
