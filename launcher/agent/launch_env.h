// The worker contract, as environment: what every rank of an attempt sees (DESIGN.md,
// "Worker contract"): BATON_* ids and dirs, torchrun-style rank variables, and
// CUDA_VISIBLE_DEVICES by UUID. Pure; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/baton.pb.h"

namespace baton {

struct RankEnvInput {
  const v1::Launch* launch = nullptr;
  uint32_t local_rank = 0;
  std::string node_name;
  std::string job_dir;        // the attempt's directory on this node
  std::string progress_file;  // where the checkpoint library reports progress
  // The agent's own environment entries passed through (PATH, HOME, LANG, TMPDIR…).
  std::map<std::string, std::string> inherited;
  // GPU ids this node knows; a launch naming any other id is refused.
  std::vector<std::string> known_gpu_ids;
};

// "NAME=value" entries, sorted by name; later sources override earlier ones:
// inherited < spec.env < baton's own variables. InvalidArgument for an unknown GPU id.
absl::StatusOr<std::vector<std::string>> BuildRankEnv(const RankEnvInput& in);

}  // namespace baton
