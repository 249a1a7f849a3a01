// How the ranks of a train_mlp run reach each other. One program, two builds:
// train_mlp links ranks_mpi.cc (Open MPI: mpirun, baton's mpi mode) and train_mlp_direct
// links ranks_direct.cc (no MPI: the torchrun-style variables baton's direct mode sets,
// RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, over TCP), so machines without
// Open MPI (GPU-only builds) can run it too. Used by main's thread only.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "checkpoint/collective.h"

namespace baton::examples {

class Ranks {
 public:
  // MPI_Init_thread (MPI_THREAD_MULTIPLE), or the direct mode's variables and rendezvous.
  static absl::StatusOr<std::unique_ptr<Ranks>> Init(int* argc, char*** argv);
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual int local_rank() const = 0;         // this rank's place on its node: picks its GPU
  virtual const char* transport() const = 0;  // "mpi" or "tcp"
  // A collective of its own for each user (the Checkpointer, ShouldStop, the reducer);
  // every rank asks for them in the same order.
  virtual absl::StatusOr<std::unique_ptr<checkpoint::Collective>> NewCollective() = 0;
  // Before a normal exit (MPI_Finalize).
  virtual void Finalize() = 0;
  // Ends the whole job at once (MPI_Abort; in direct mode this rank's exit, which the
  // other ranks see as a closed connection at their next collective).
  virtual void Abort(int code) = 0;  // does not return
};

}  // namespace baton::examples
