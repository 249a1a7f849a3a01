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
  uint64_t want = spec.gpu_memory_bytes();
  if (!mig && !in.gpus.empty() && want > 0) {
    std::string limits;
    uint64_t percent = 0;
    for (size_t i = 0; i < in.gpus.size(); ++i) {
      uint64_t physical = in.gpus[i].memory_bytes();
      if (physical == 0 || want >= physical) continue;  // the whole GPU: nothing to share
      uint64_t limit = std::min(physical, want + want * in.headroom_percent / 100);
      limits +=
          (limits.empty() ? "" : ",") + std::to_string(i) + "=" + std::to_string(limit >> 20) + "M";
      percent = std::max<uint64_t>(percent, (limit * 100 + physical - 1) / physical);
    }
    if (!limits.empty()) {
      out.sharing = "mps";
      out.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
      out.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
          std::to_string(std::clamp<uint64_t>(percent, 1, 100));
    }
  }
  if (!in.capped_nic.empty()) {
    // tc does not see RDMA: a capped job's NCCL must use sockets on the capped NIC.
    out.env["NCCL_IB_DISABLE"] = "1";
    out.env["NCCL_SOCKET_IFNAME"] = in.capped_nic;
  }
  return out;
}

}  // namespace baton
