// Helper for mpi_test, run under mpirun: a training loop with the checkpoint library's MPI
// adapter. Mode "train" restores, prints "rank R pid P ready", trains (an allreduce and
// 2 ms per step), saves async every 5 steps ("rank R at step S" after each), and when
// ShouldStop agrees, saves synchronously and prints "rank R stopped step S". Mode
// "restore" prints "rank R restored S" (-1: none). Data are checked bit-exact on restore.
// Exit codes: 2 setup, 3 restore, 4 save, 5 never stopped.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "checkpoint/mpi_collective.h"
#include "checkpoint/preemption.h"
#include "tests/checkpoint/test_state.h"

namespace baton::checkpoint {
namespace {

void Say(int rank, const std::string& what) {
  const std::string line = "rank " + std::to_string(rank) + " " + what + "\n";
  (void)!::write(STDOUT_FILENO, line.data(), line.size());
}

uint64_t Seed(int64_t step, int rank) { return step * 10 + rank; }

int Train(Checkpointer& ckpt, testing::TestState& state, int64_t step, Collective& stop_coll) {
  auto watcher = PreemptionWatcher::Create({.grace_seconds = 30});
  if (!watcher.ok()) return 2;
  const int rank = ckpt.rank();
  Say(rank, "pid " + std::to_string(::getpid()) + " ready");
  for (int n = 0; n < 20000; ++n) {
    ++step;
    state.Fill(Seed(step, rank));
    long long work = step, sum = 0;
    MPI_Allreduce(&work, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the "compute" of a step
    auto stop = (*watcher)->ShouldStop(stop_coll);
    if (!stop.ok()) return 4;
    if (*stop) {
      if (!ckpt.Wait().ok() || !ckpt.Save(step).ok()) return 4;
      Say(rank, "stopped step " + std::to_string(step));
      return 0;
    }
    if (step % 5 == 0) {
      if (!ckpt.SaveAsync(step).ok()) return 4;
      Say(rank, "at step " + std::to_string(step));
    }
  }
  return 5;
}

int Run(const std::string& dir, const std::string& mode) {
  auto ckpt_coll = MpiCollective::Create();
  auto stop_coll = MpiCollective::Create();
  if (!ckpt_coll.ok() || !stop_coll.ok()) return 2;
  const int rank = (*ckpt_coll)->rank();
  auto ckpt = Checkpointer::Create({.dir = dir, .keep_last = 3}, ckpt_coll->get());
  testing::TestState state({static_cast<size_t>((2 << 20) + 1000 * rank), 4096});
  if (!ckpt.ok() || !state.Register(**ckpt).ok()) return 2;
  auto restored = (*ckpt)->RestoreLatest();
  if (!restored.ok()) {
    Say(rank, "restore failed: " + std::string(restored.status().message()));
    return 3;
  }
  const int64_t step = restored->has_value() ? (*restored)->step : -1;
  if (step >= 0 && !state.Mismatch(Seed(step, rank)).empty()) {
    Say(rank, "restored step " + std::to_string(step) + " with wrong data");
    return 3;
  }
  Say(rank, "restored " + std::to_string(step));
  if (mode == "restore") return 0;
  return Train(**ckpt, state, step < 0 ? 0 : step, **stop_coll);
}

}  // namespace
}  // namespace baton::checkpoint

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rc = 2;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <checkpoint dir> train|restore\n", argv[0]);
  } else if (provided != MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "MPI_THREAD_MULTIPLE not provided (got %d)\n", provided);
  } else {
    rc = baton::checkpoint::Run(argv[1], argv[2]);
  }
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  MPI_Finalize();
  return rc;
}
