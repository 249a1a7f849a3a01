// The worker contract, as environment: what every rank of an attempt sees (docs/contracts.md,
// "The worker contract"): BATON_* ids and dirs, torchrun-style rank variables, and
// CUDA_VISIBLE_DEVICES by UUID. Pure; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/agent.pb.h"

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
  std::string nic;  // the cluster interface, for NCCL_SOCKET_IFNAME ("" when unknown)
  // MIG profile of each known id ("" for whole GPUs; ids absent here are not checked):
  // a job asking for a MIG profile gets only slices of it, others only whole GPUs.
  std::map<std::string, std::string> gpu_mig_profiles;
  // The isolation's settings (GPU memory growth, MPS limits, NCCL on the capped NIC).
  std::map<std::string, std::string> isolation_env;
};

// Variables of isolation_env that only steer the job (NCCL onto the capped NIC's
// sockets): the job's own setting of them wins. The rest (MPS limits) are enforced.
bool IsIsolationDefault(const std::string& name);

// "NAME=value" entries, sorted by name; later sources override earlier ones:
// inherited < spec.env < isolation_env < baton's own variables, except that the job's
// own value of a steering variable (IsIsolationDefault) wins over the isolation's. InvalidArgument
// for an unknown GPU id or one of the wrong kind (a MIG slice for a whole-GPU job, or back). In mpi
// mode the rank variables (RANK, WORLD_SIZE, …) are left to Open MPI.
absl::StatusOr<std::vector<std::string>> BuildRankEnv(const RankEnvInput& in);

// --- mpi mode: what the agent of the gang's first node runs -------------------------

// One line per node in node_rank order: "<address> slots=<ranks_per_node>".
std::string MpiHostfile(const v1::Launch& launch);

// The network Open MPI's TCP transports use: 127.0.0.0/8 when the gang's first node is on
// loopback, else the /24 around its address.
std::string DefaultMpiNetwork(const std::string& node0_address);

struct MpirunInput {
  const v1::Launch* launch = nullptr;
  std::string mpirun = "mpirun";
  std::string exec_command;  // plm_rsh_agent: `baton-exec` or `<baton-agent> exec`
  std::string hostfile;      // path of MpiHostfile's output
  std::string network;       // CIDR for btl/oob tcp_if_include
  bool as_root = false;
  std::vector<std::string> rank_prefix;  // runs each rank's command (its binding step)
};

// mpirun with the hostfile, daemons started through `baton-agent exec` (no ssh, no tree
// spawn, daemons kept attached so their exit is known), TCP on the cluster network, and
// output tagged with ranks, then the rank prefix and the job's command. Open MPI binds
// nothing (--bind-to none): the rank prefix does.
std::vector<std::string> MpirunArgv(const MpirunInput& in);

}  // namespace baton
