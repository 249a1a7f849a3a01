// Ranks for train_mlp under Open MPI (mpirun, baton's mpi mode).
#include <mpi.h>

#include <cstdlib>

#include "checkpoint/mpi_collective.h"
#include "examples/train_mlp/ranks.h"

namespace baton::examples {
namespace {

class MpiRanks : public Ranks {
 public:
  MpiRanks() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
    if (const char* l = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local_ = std::atoi(l);
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  int local_rank() const override { return local_; }
  const char* transport() const override { return "mpi"; }
  absl::StatusOr<std::unique_ptr<checkpoint::Collective>> NewCollective() override {
    auto c = checkpoint::MpiCollective::Create();
    if (!c.ok()) return c.status();
    return std::unique_ptr<checkpoint::Collective>(std::move(*c));
  }
  void Finalize() override { MPI_Finalize(); }
  void Abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

 private:
  int rank_ = 0, world_ = 1, local_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Ranks>> Ranks::Init(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  return std::unique_ptr<Ranks>(new MpiRanks());
}

}  // namespace baton::examples
