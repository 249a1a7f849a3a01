// Summing a vector across the ranks of a job, in a fixed order so results are
// bit-identical from run to run: NCCL on the GPUs (rank 0's ncclUniqueId broadcast
// through the job's Collective), or on the CPUs every rank's values gathered through the
// Collective (MPI, or TCP in direct mode) and summed in rank order on every rank. With two
// ranks both paths compute the same sums (one addition each), so their results match bit
// for bit; with more, NCCL's order may differ from rank order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/collective.h"

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  // Replaces `values` (same length on every rank) with their sum over all ranks.
  virtual absl::Status SumAcrossRanks(std::vector<double>& values) = 0;
  virtual const char* name() const = 0;
};

enum class ReducerKind {
  kAuto,  // NCCL when the build has it and a CUDA device answers, else the host path
  kNccl,  // NCCL or an error
  kHost,  // gathered through the collective, summed in rank order
};

// `collective` must outlive the reducer: the host path uses it at every step, NCCL only
// to bootstrap. `local_rank` picks the GPU (local_rank % visible devices); `host_name`
// names the host path ("mpi", "tcp"). kNccl without NCCL in the build is Unimplemented,
// without a device FailedPrecondition.
absl::StatusOr<std::unique_ptr<GradientReducer>> NewGradientReducer(
    ReducerKind kind, baton::checkpoint::Collective* collective, int local_rank,
    const std::string& host_name);

// The NCCL bootstrap alone: rank 0's unique id, broadcast through `collective`. Works
// without a GPU. Returns a hash of the id every rank received (equal on every rank when it
// works); Unimplemented when the build has no NCCL.
absl::StatusOr<uint64_t> NcclBootstrapIdHash(baton::checkpoint::Collective& collective);
