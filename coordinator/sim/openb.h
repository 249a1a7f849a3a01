// Alibaba's openb traces (the ATC'23 "Beware of Fragmentation" cluster, github.com/alibaba/
// clusterdata, cluster-trace-gpu-v2023) as a baton-sim trace and cluster file, so that a
// platform team can see what MPS sharing buys on a workload of this shape (docs/
// simulator.md, "openb"). The pod list has the columns
//   name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
//   creation_time, deletion_time, scheduled_time
// and the node list sn, cpu_milli, memory_mib, gpu, model. How each maps:
//   - submit: creation_time, from the first pod's; duration: deletion_time less the later of
//     creation_time and scheduled_time; a pod with no positive duration is left out
//     (counted in `skipped`).
//   - num_gpu 1 with gpu_milli < 1000: an MPS share of ceil(gpu_milli / 10)% with that part of
//     --gpu-memory (openb has no GPU-memory column), in --share-class; with `shares` off
//     (the baseline) a whole GPU instead. Otherwise num_gpu whole GPUs (0: a CPU-only task).
//   - gpu_spec: one model, the job's gpu_model; several ("A|B") or none, any GPU (baton's
//     gpu_model is one substring, not a list).
//   - qos LS and HP (latency-sensitive): --ls-class; the rest (BE, Burstable, …):
//     --be-class. Shares always go to --share-class (a class that may share).
//   - tenant "openb"; user one of --users users, by the pod's name (1: every share may
//     share a pool, as openb's packing assumes).
//   - nodes grouped by (cpu, memory, GPUs, model), each GPU --gpu-memory, the first
//     --mps-gpus GPUs of each GPU node offered as MPS pools.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/sim/trace.h"

namespace baton::sim {

struct OpenbOptions {
  bool shares = true;  // false: a fractional task asks for a whole GPU
  std::string share_class = "inference";
  std::string ls_class = "inference";
  std::string be_class = "experiment";
  uint64_t gpu_memory_bytes = 16ull << 30;  // V100-16GB-class: openb's GPUs, mostly
  uint32_t users = 1;
  uint32_t mps_gpus = 0;  // per GPU node, offered as MPS pools in the cluster file
};

struct OpenbTrace {
  std::vector<TraceJob> jobs;
  uint64_t skipped = 0;  // pods with no positive duration
};

// InvalidArgument naming file, line and column of every problem.
absl::StatusOr<OpenbTrace> ConvertOpenbPods(const std::string& csv, const std::string& source,
                                            const OpenbOptions& options);
// The cluster file (YAML, cluster_file.h) of the node list.
absl::StatusOr<std::string> ConvertOpenbNodes(const std::string& csv, const std::string& source,
                                              const OpenbOptions& options);

}  // namespace baton::sim
