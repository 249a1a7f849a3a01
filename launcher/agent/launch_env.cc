#include "launcher/agent/launch_env.h"

#include <algorithm>

namespace baton {

bool IsIsolationDefault(const std::string& name) {
  return name == "NCCL_IB_DISABLE" || name == "NCCL_SOCKET_IFNAME";
}

absl::StatusOr<std::vector<std::string>> BuildRankEnv(const RankEnvInput& in) {
  const v1::Launch& l = *in.launch;
  const v1::JobSpec& spec = l.spec();
  if (l.node_rank() >= static_cast<uint32_t>(l.placement_size())) {
    return absl::InvalidArgumentError("launch.node_rank " + std::to_string(l.node_rank()) +
                                      " is outside the placement");
  }
  const v1::NodeAssignment& me = l.placement(l.node_rank());
  std::map<std::string, std::string> env = in.inherited;
  for (const auto& [k, v] : spec.env()) env[k] = v;
  // The isolation's limits (MPS memory) win over the job's; its steering of NCCL onto the
  // capped NIC does not: a job that set NCCL_IB_DISABLE or NCCL_SOCKET_IFNAME keeps its own.
  for (const auto& [k, v] : in.isolation_env) {
    if (!IsIsolationDefault(k) || !spec.env().count(k)) env[k] = v;
  }

  std::string gpus;
  for (const auto& id : me.gpu_ids()) {
    if (std::find(in.known_gpu_ids.begin(), in.known_gpu_ids.end(), id) == in.known_gpu_ids.end()) {
      return absl::InvalidArgumentError("launch names GPU '" + id + "', which node " +
                                        in.node_name + " does not have");
    }
    auto profile = in.gpu_mig_profiles.find(id);
    if (profile != in.gpu_mig_profiles.end() && profile->second != spec.mig_profile()) {
      return absl::InvalidArgumentError(
          "launch names GPU '" + id + "' on node " + in.node_name + ", a " +
          (profile->second.empty() ? "whole GPU" : "MIG " + profile->second + " slice") +
          ", for a job asking for " +
          (spec.mig_profile().empty() ? "whole GPUs" : "MIG " + spec.mig_profile() + " slices"));
    }
    gpus += (gpus.empty() ? "" : ",") + id;
  }
  // No GPUs granted means none visible: an empty list hides every device from CUDA.
  env["CUDA_VISIBLE_DEVICES"] = gpus;
  env["NVIDIA_VISIBLE_DEVICES"] = gpus.empty() ? "none" : gpus;

  uint32_t world = spec.nodes() * spec.ranks_per_node();
  uint32_t rank = me.first_rank() + in.local_rank;
  env["BATON_JOB_ID"] = std::to_string(l.job_id());
  env["BATON_ATTEMPT"] = std::to_string(l.attempt());
  env["BATON_JOB_NAME"] = spec.name();
  env["BATON_TENANT"] = spec.tenant();
  env["BATON_NODE"] = in.node_name;
  env["BATON_NODE_RANK"] = std::to_string(l.node_rank());
  env["BATON_JOB_DIR"] = in.job_dir;
  // A private TMPDIR per node and attempt, removed with the job dir. It also keeps Open
  // MPI's session directories apart when gang nodes share a /tmp and a hostname.
  if (!spec.env().count("TMPDIR")) env["TMPDIR"] = in.job_dir + "/tmp";
  env["BATON_GRACE_SECONDS"] = std::to_string(spec.grace_seconds());
  env["BATON_PROGRESS_FILE"] = in.progress_file;
  if (!spec.checkpoint_dir().empty()) env["BATON_CHECKPOINT_DIR"] = spec.checkpoint_dir();
  if (const v1::ArrayTask& a = l.array(); a.array_id() != 0) {  // Slurm's SLURM_ARRAY_*
    env["BATON_ARRAY_JOB_ID"] = std::to_string(a.array_id());
    env["BATON_ARRAY_TASK_ID"] = std::to_string(a.index());
    env["BATON_ARRAY_TASK_COUNT"] = std::to_string(a.count());
    env["BATON_ARRAY_TASK_MIN"] = std::to_string(a.min());
    env["BATON_ARRAY_TASK_MAX"] = std::to_string(a.max());
    env["BATON_ARRAY_TASK_STEP"] = std::to_string(a.step());
  }
  // Collectives bind to the cluster interface (else gloo takes the address the hostname
  // resolves to, often loopback), unless the job chose one itself.
  for (const char* var : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}) {
    if (!in.nic.empty() && !spec.env().count(var)) env[var] = in.nic;
  }
  if (spec.launch_mode() != v1::LAUNCH_MODE_MPI) {
    env["RANK"] = std::to_string(rank);
    env["LOCAL_RANK"] = std::to_string(in.local_rank);
    env["WORLD_SIZE"] = std::to_string(world);
    env["LOCAL_WORLD_SIZE"] = std::to_string(spec.ranks_per_node());
    env["GROUP_RANK"] = std::to_string(l.node_rank());
    env["MASTER_ADDR"] = l.placement(0).address();
    env["MASTER_PORT"] = std::to_string(l.master_port());
  }

  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string MpiHostfile(const v1::Launch& launch) {
  std::string out;
  for (const auto& p : launch.placement()) {
    out += p.address() + " slots=" + std::to_string(launch.spec().ranks_per_node()) + "\n";
  }
  return out;
}

std::string DefaultMpiNetwork(const std::string& node0_address) {
  if (node0_address.rfind("127.", 0) == 0 || node0_address == "localhost") return "127.0.0.0/8";
  size_t last = node0_address.rfind('.');
  if (last == std::string::npos) return node0_address;
  return node0_address.substr(0, last) + ".0/24";
}

std::vector<std::string> MpirunArgv(const MpirunInput& in) {
  const v1::JobSpec& spec = in.launch->spec();
  std::vector<std::string> argv = {
      in.mpirun,
      "-np",
      std::to_string(spec.nodes() * spec.ranks_per_node()),
      "--hostfile",
      in.hostfile,
      "--map-by",
      "ppr:" + std::to_string(spec.ranks_per_node()) + ":node",
      "--bind-to",
      "none",
      "--oversubscribe",
      "--tag-output",
      "--mca",
      "plm_rsh_agent",
      in.exec_command,
      "--mca",
      "plm_rsh_no_tree_spawn",
      "1",
      "--mca",
      "orte_leave_session_attached",
      "1",
      "--mca",
      "btl",
      "self,tcp",
      "--mca",
      "btl_tcp_if_include",
      in.network,
      "--mca",
      "oob_tcp_if_include",
      in.network,
  };
  if (in.as_root) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), in.rank_prefix.begin(), in.rank_prefix.end());
  argv.insert(argv.end(), spec.command().begin(), spec.command().end());
  return argv;
}

}  // namespace baton
