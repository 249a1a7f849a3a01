// How the ranks of one job agree: the three collective operations the checkpoint library
// needs (max-reduce, all-gather, broadcast from rank 0). LocalCollective serves one process,
// MpiCollective (mpi_collective.h) MPI jobs. Every rank calls the same operations in the
// same order; an instance is used by one thread at a time, and SaveAsync uses the
// Checkpointer's from a background thread, so give the Checkpointer its own instance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace baton::checkpoint {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The maximum of `value` over all ranks, returned on every rank.
  virtual absl::StatusOr<int64_t> AllReduceMax(int64_t value) = 0;
  // Every rank's `value`, indexed by rank, returned on every rank.
  virtual absl::StatusOr<std::vector<std::string>> AllGather(const std::string& value) = 0;
  // Rank 0's `value` on every rank (the argument is ignored on the others).
  virtual absl::StatusOr<std::string> Broadcast(const std::string& value) = 0;
  // Whether the operations may run on a thread other than the one that created the
  // collective while that thread does its own communication (SaveAsync needs this).
  virtual bool SupportsBackgroundThread() const = 0;
};

// A job of one process: every operation returns its own input.
class LocalCollective final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::StatusOr<int64_t> AllReduceMax(int64_t value) override { return value; }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& value) override {
    return std::vector<std::string>{value};
  }
  absl::StatusOr<std::string> Broadcast(const std::string& value) override { return value; }
  bool SupportsBackgroundThread() const override { return true; }
};

}  // namespace baton::checkpoint
