// DeviceMemory for CUDA (target baton_checkpoint_cuda, built where the CUDA toolkit is):
// cudaHostAlloc staging and cudaMemcpyAsync on a private non-blocking stream of the
// device current at creation. Used by one thread at a time (the Checkpointer's).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "checkpoint/device_memory.h"

namespace baton::checkpoint {

// Unavailable, naming the CUDA error, when no CUDA device answers (no driver, no GPU).
absl::StatusOr<std::unique_ptr<DeviceMemory>> NewCudaDeviceMemory();

}  // namespace baton::checkpoint
