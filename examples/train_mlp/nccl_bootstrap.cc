// nccl_bootstrap: checks NCCL's bootstrap under MPI without a GPU — rank 0's
// ncclGetUniqueId broadcast with MPI_Bcast. Every rank prints "rank R id H"; the test
// checks that H is the same everywhere and that the id is not all zeros.
#include <mpi.h>

#include <cstdio>

#include "checkpoint/mpi_collective.h"
#include "examples/train_mlp/allreduce.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto collective = baton::checkpoint::MpiCollective::Create();
  absl::StatusOr<uint64_t> hash =
      collective.ok() ? NcclBootstrapIdHash(**collective) : collective.status();
  int code = 0;
  if (hash.ok()) {
    std::printf("rank %d id %016llx\n", rank, static_cast<unsigned long long>(*hash));
  } else {
    std::fprintf(stderr, "rank %d: %s\n", rank, hash.status().ToString().c_str());
    code = 1;
  }
  MPI_Finalize();
  return code;
}
