#include "launcher/agent/isolation/gpu_env.h"

#include <algorithm>

namespace baton {
namespace {

// PyTorch reads a comma-separated option list: keep the job's own options.
std::string WithExpandableSegments(const std::string& existing) {
  if (existing.find("expandable_segments") != std::string::npos) return existing;
  return existing.empty() ? "expandable_segments:True" : existing + ",expandable_segments:True";
}

}  // namespace

GpuEnv BuildGpuEnv(const GpuEnvInput& in) {
  GpuEnv out;
  const v1::JobSpec& spec = *in.spec;
  if (!in.gpus.empty() && in.inference) {
    auto it = spec.env().find("PYTORCH_CUDA_ALLOC_CONF");
    out.env["PYTORCH_CUDA_ALLOC_CONF"] =
        WithExpandableSegments(it == spec.env().end() ? "" : it->second);
    out.env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true";
    out.env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false";
  }
  bool mig = std::any_of(in.gpus.begin(), in.gpus.end(),
                         [](const v1::Gpu& g) { return !g.mig_profile().empty(); });
  if (mig) out.sharing = "mig";
  // An MPS share: its client variables come from the pool's daemon (launcher/agent/mps),
  // which the agent starts for it. gpu_memory without a share reserves nothing on a whole
  // GPU, and no MPS variable is set: CUDA reads them only under an MPS daemon.
  if (spec.gpu_share_percent() > 0) out.sharing = "mps";
  if (!in.capped_nic.empty()) {
    // tc does not see RDMA: a capped job's NCCL must use sockets on the capped NIC.
    out.env["NCCL_IB_DISABLE"] = "1";
    out.env["NCCL_SOCKET_IFNAME"] = in.capped_nic;
  }
  return out;
}

}  // namespace baton
