// Summing a vector across the ranks of an MPI job, in a fixed order so results are
// bit-identical from run to run: NCCL on the GPUs when the build has it and a device is
// visible (ranks bootstrapped through MPI: rank 0's ncclGetUniqueId is broadcast), else
// MPI_Allgather and a sum in rank order on every rank.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"

class GradientReducer {
 public:
  static absl::StatusOr<std::unique_ptr<GradientReducer>> Create(int world, int rank);
  virtual ~GradientReducer() = default;
  // Replaces `values` (same length on every rank) with their sum over all ranks.
  virtual absl::Status SumAcrossRanks(std::vector<double>& values) = 0;
  virtual const char* name() const = 0;
};

// The NCCL bootstrap alone: rank 0's unique id, broadcast over MPI. Works without a GPU.
// Returns a hash of the id every rank received (equal on every rank when it works);
// Unimplemented when the build has no NCCL.
absl::StatusOr<uint64_t> NcclBootstrapIdHash(int rank);
