// Device (GPU) memory as the Checkpointer sees it: pinned host staging plus asynchronous
// copies on one stream. The core library holds only this interface; the CUDA build
// provides CudaDeviceMemory (cuda_device_memory.h, target baton_checkpoint_cuda). Called
// by the Checkpointer from one thread at a time.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace baton::checkpoint {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // Page-locked host memory, aligned to at least 4 KiB, so copies run at full link speed
  // and the staged bytes can be written with O_DIRECT.
  virtual absl::StatusOr<void*> AllocatePinned(size_t bytes) = 0;
  virtual void FreePinned(void* pinned) = 0;
  // Enqueue copies; Synchronize waits until every enqueued copy has finished.
  virtual absl::Status CopyToHostAsync(void* host_dst, const void* device_src, size_t n) = 0;
  virtual absl::Status CopyToDeviceAsync(void* device_dst, const void* host_src, size_t n) = 0;
  virtual absl::Status Synchronize() = 0;
};

}  // namespace baton::checkpoint
