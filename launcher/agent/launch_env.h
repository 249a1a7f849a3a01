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
  // MIG profile of each known id ("" for whole GPUs; ids absent here are not checked):
  // a job asking for a MIG profile gets only slices of it, others only whole GPUs.
  std::map<std::string, std::string> gpu_mig_profiles;
  // The isolation's settings (GPU memory growth, MPS limits, NCCL on the capped NIC).
  std::map<std::string, std::string> isolation_env;
};

// "NAME=value" entries, sorted by name; later sources override earlier ones:
// inherited < spec.env < isolation_env < baton's own variables. InvalidArgument for an
// unknown GPU id or one of the wrong kind (a MIG slice for a whole-GPU job, or back).
absl::StatusOr<std::vector<std::string>> BuildRankEnv(const RankEnvInput& in);

}  // namespace baton
