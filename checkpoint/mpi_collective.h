// The Collective of an MPI job (target baton_checkpoint_mpi). It works on its own duplicate
// of the given communicator, so checkpoint traffic never mixes with the program's. Create
// one per user (the Checkpointer, the PreemptionWatcher); each is used by one thread at a
// time. SaveAsync runs it on a background thread, which needs MPI_THREAD_MULTIPLE.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/collective.h"

namespace baton::checkpoint {

class MpiCollective final : public Collective {
 public:
  // MPI must be initialized (MPI_Init or MPI_Init_thread) and not finalized.
  static absl::StatusOr<std::unique_ptr<MpiCollective>> Create(MPI_Comm comm = MPI_COMM_WORLD);
  ~MpiCollective() override;
  MpiCollective(const MpiCollective&) = delete;
  MpiCollective& operator=(const MpiCollective&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::StatusOr<int64_t> AllReduceMax(int64_t value) override;
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& value) override;
  absl::StatusOr<std::string> Broadcast(const std::string& value) override;
  bool SupportsBackgroundThread() const override { return thread_multiple_; }

 private:
  MpiCollective(MPI_Comm comm, int rank, int size, bool thread_multiple)
      : comm_(comm), rank_(rank), size_(size), thread_multiple_(thread_multiple) {}

  MPI_Comm comm_;
  const int rank_;
  const int size_;
  const bool thread_multiple_;
};

}  // namespace baton::checkpoint
