#include "checkpoint/checkpoint_dir.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace baton::checkpoint {
namespace {

constexpr char kStepPrefix[] = "step-";
constexpr char kManifest[] = "MANIFEST";

// "step-120" -> 120; anything else (leading zeros, signs, suffixes) is not a step dir.
bool ParseStepName(const std::string& name, int64_t* step) {
  const size_t prefix = sizeof(kStepPrefix) - 1;
  if (name.compare(0, prefix, kStepPrefix) != 0 || name.size() == prefix) return false;
  const char* begin = name.data() + prefix;
  const char* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(begin, end, *step);
  return ec == std::errc() && ptr == end && *step >= 0 && std::to_string(*step) == begin;
}

}  // namespace

std::string CheckpointDir::StepDir(int64_t step) const {
  return JoinPath(root_, kStepPrefix + std::to_string(step));
}

std::string CheckpointDir::ShardPath(int64_t step, int rank) const {
  return JoinPath(StepDir(step), "rank-" + std::to_string(rank) + ".shard");
}

std::string CheckpointDir::ManifestPath(int64_t step) const {
  return JoinPath(StepDir(step), kManifest);
}

absl::Status CheckpointDir::SyncDir(const std::string& dir, SyncPoint point) {
  if (point == skip_sync_) return absl::OkStatus();
  return env_->SyncDir(dir);
}

absl::Status CheckpointDir::EnsureRoot() {
  BATON_ASSIGN_OR_RETURN(bool exists, env_->FileExists(root_));
  if (exists) return absl::OkStatus();
  absl::Status created = env_->CreateDir(root_);
  if (!created.ok()) {
    return absl::Status(created.code(),
                        "cannot create the checkpoint directory (its parent "
                        "must exist): " +
                            std::string(created.message()));
  }
  return env_->SyncDir(DirName(root_));
}

absl::StatusOr<std::vector<int64_t>> CheckpointDir::ListSteps() const {
  BATON_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(root_));
  std::vector<int64_t> steps;
  for (const std::string& name : names) {
    int64_t step = 0;
    if (ParseStepName(name, &step)) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end(), std::greater<>());
  return steps;
}

absl::StatusOr<bool> CheckpointDir::HasManifest(int64_t step) const {
  return env_->FileExists(ManifestPath(step));
}

absl::Status CheckpointDir::PrepareStep(int64_t step) {
  const std::string dir = StepDir(step);
  BATON_ASSIGN_OR_RETURN(bool exists, env_->FileExists(dir));
  if (exists) {
    BATON_ASSIGN_OR_RETURN(bool committed, HasManifest(step));
    if (committed) {
      BATON_RETURN_IF_ERROR(env_->RemoveFile(ManifestPath(step)));
      BATON_RETURN_IF_ERROR(env_->SyncDir(dir));
    }
  } else {
    BATON_RETURN_IF_ERROR(env_->CreateDir(dir));
  }
  // Also for a directory left by a crashed attempt: its entry may never have been synced.
  return SyncDir(root_, SyncPoint::kRootDir);
}

absl::Status CheckpointDir::CommitManifest(int64_t step, const std::string& manifest_text) {
  const std::string path = ManifestPath(step);
  const std::string tmp = path + ".tmp";
  BATON_ASSIGN_OR_RETURN(auto file, env_->NewWritableFile(tmp, WritableFileOptions{}));
  BATON_RETURN_IF_ERROR(file->WriteAt(0, manifest_text.data(), manifest_text.size()));
  if (skip_sync_ != SyncPoint::kManifestFile) BATON_RETURN_IF_ERROR(file->Sync());
  BATON_RETURN_IF_ERROR(file->Close());
  BATON_RETURN_IF_ERROR(env_->Rename(tmp, path));
  return SyncDir(StepDir(step), SyncPoint::kManifestDir);
}

absl::Status CheckpointDir::RemoveStep(int64_t step) {
  const std::string dir = StepDir(step);
  BATON_ASSIGN_OR_RETURN(bool committed, HasManifest(step));
  if (committed) {
    BATON_RETURN_IF_ERROR(env_->RemoveFile(ManifestPath(step)));
    BATON_RETURN_IF_ERROR(env_->SyncDir(dir));
  }
  BATON_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(dir));
  for (const std::string& name : names) {
    BATON_RETURN_IF_ERROR(env_->RemoveFile(JoinPath(dir, name)));
  }
  return env_->RemoveDir(dir);
}

absl::StatusOr<std::vector<int64_t>> CheckpointDir::Prune(int64_t committed_step, int keep_last) {
  BATON_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListSteps());
  int kept = 1;  // committed_step itself
  std::vector<int64_t> removed;
  for (int64_t step : steps) {
    if (step >= committed_step) continue;
    BATON_ASSIGN_OR_RETURN(bool committed, HasManifest(step));
    if (committed && (keep_last == 0 || kept < keep_last)) {
      ++kept;
      continue;
    }
    BATON_RETURN_IF_ERROR(RemoveStep(step));
    removed.push_back(step);
  }
  if (!removed.empty()) BATON_RETURN_IF_ERROR(env_->SyncDir(root_));
  return removed;
}

}  // namespace baton::checkpoint
