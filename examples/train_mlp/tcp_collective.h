// The ranks of a job started without MPI, as baton's direct mode starts them (torchrun's
// variables: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), and the checkpoint
// library's Collective between them over TCP. Rank 0 listens on MASTER_PORT; each
// collective is one connection from every other rank to rank 0 (a star: rank 0 gathers,
// then sends the result back), so collectives are independent of each other and one can
// run on a background thread (SaveAsync) while another runs on the training thread.
// Every rank creates its collectives in the same order. A TcpRanks is used by one thread;
// each collective by one thread at a time. Used by train_mlp_direct and the GPU checks
// (tests/gpu), which need no MPI.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/collective.h"

namespace baton::examples {

struct DirectEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;  // LOCAL_RANK; RANK when unset
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
};

// From RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Unset RANK and
// WORLD_SIZE mean a job of one rank, which needs no address. InvalidArgument names the
// variable and its value.
absl::StatusOr<DirectEnv> DirectEnvFromEnvironment();

class TcpRanks {
 public:
  // Rank 0 binds MASTER_PORT now; the other ranks connect when they create a collective,
  // retrying for `connect_timeout_s` while rank 0 is not listening yet.
  static absl::StatusOr<std::unique_ptr<TcpRanks>> Create(const DirectEnv& env,
                                                          int connect_timeout_s = 60);
  ~TcpRanks();
  TcpRanks(const TcpRanks&) = delete;
  TcpRanks& operator=(const TcpRanks&) = delete;

  const DirectEnv& env() const { return env_; }
  // The next collective. On rank 0 it waits for every other rank's connection for it.
  absl::StatusOr<std::unique_ptr<checkpoint::Collective>> NewCollective();

 private:
  TcpRanks(DirectEnv env, int listen_fd, int connect_timeout_s)
      : env_(std::move(env)), listen_fd_(listen_fd), connect_timeout_s_(connect_timeout_s) {}
  absl::StatusOr<std::vector<int>> AcceptChannel(int channel);
  absl::StatusOr<int> ConnectChannel(int channel);

  const DirectEnv env_;
  const int listen_fd_;  // rank 0 only; -1 elsewhere
  const int connect_timeout_s_;
  int next_channel_ = 0;
  // Rank 0: connections that arrived for a later channel, by channel, then by rank.
  std::map<int, std::map<int, int>> early_;
};

}  // namespace baton::examples
