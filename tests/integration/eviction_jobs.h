// The jobs of the eviction tests and the preemption benchmark on a 2-node x 2-GPU
// namespace cluster: a policy under which inference evicts training at once, a train_mlp
// gang that fills the cluster, and the inference job that evicts it. Thread-compatible.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/local_cluster.h"

namespace baton::testing {

// Writes a policy to `path` with two classes, inference (a service of tenant serving) and
// training (no minimum runtime; `training_extra` appended to its entry, e.g.
// ", stop_after_disconnect: 5s"); returns the coordinator flags that load it.
inline std::string TrainingAndServicePolicy(const std::string& path,
                                            const std::string& training_extra) {
  std::ofstream(path) << "classes:\n"
                         "  - {name: inference, value: 900, service: true, tenants: [serving]}\n"
                         "  - {name: training, value: 300, min_runtime: 0s"
                      << training_extra << "}\n"
                      << TestPolicyAccess();
  return "--policy " + path;
}

// Such a policy under which inference may evict training at once and an evicted training
// job cools down for `cooldown` ("3s").
inline std::string EvictAtOncePolicy(const std::string& path, const std::string& cooldown) {
  return TrainingAndServicePolicy(path, ", cooldown: " + cooldown + ", cooldown_cap: 1m");
}

// `baton submit -q` arguments of a training train_mlp in mpi mode on 2 nodes x 2 ranks,
// holding 2 GPUs per node (the whole cluster), with `grace` and checkpoints in `ckpt`;
// `flags` go to train_mlp.
inline std::vector<std::string> TrainMlpGangSubmit(const std::string& ckpt,
                                                   const std::string& grace,
                                                   const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"submit",           "-q",  "--class", "training",
                                   "--mode",           "mpi", "--nodes", "2",
                                   "--ranks-per-node", "2",   "--gpus",  "2",
                                   "--cpus",           "1",   "--grace", grace,
                                   "--checkpoint-dir", ckpt,  "--",      StagedBin("train_mlp")};
  args.insert(args.end(), flags.begin(), flags.end());
  return args;
}

// Submits an inference job of 2 GPUs on one node (bob of tenant serving) that sleeps;
// returns its id (0 when the submit failed).
inline uint64_t SubmitInference(ClusterClient& cluster) {
  return ClusterClient::SubmittedId(cluster
                                        .Baton({"submit", "-q", "--class", "inference", "--gpus",
                                                "2", "--cpus", "1", "--", "sleep", "600"},
                                               kBob)
                                        .out);
}

}  // namespace baton::testing
