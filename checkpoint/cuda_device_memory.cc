#include "checkpoint/cuda_device_memory.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace baton::checkpoint {
namespace {

absl::Status CudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::UnavailableError(what + ": " + cudaGetErrorName(err) + " (" +
                                cudaGetErrorString(err) + ")");
}

class CudaDeviceMemory final : public DeviceMemory {
 public:
  explicit CudaDeviceMemory(cudaStream_t stream) : stream_(stream) {}
  ~CudaDeviceMemory() override { cudaStreamDestroy(stream_); }

  absl::StatusOr<void*> AllocatePinned(size_t bytes) override {
    void* p = nullptr;
    BATON_RETURN_IF_ERROR(CudaStatus(cudaHostAlloc(&p, bytes, cudaHostAllocDefault),
                                     "cudaHostAlloc of " + std::to_string(bytes) + " bytes"));
    return p;
  }
  void FreePinned(void* pinned) override { cudaFreeHost(pinned); }

  absl::Status CopyToHostAsync(void* host_dst, const void* device_src, size_t n) override {
    return CudaStatus(cudaMemcpyAsync(host_dst, device_src, n, cudaMemcpyDeviceToHost, stream_),
                      "cudaMemcpyAsync device to host");
  }
  absl::Status CopyToDeviceAsync(void* device_dst, const void* host_src, size_t n) override {
    return CudaStatus(cudaMemcpyAsync(device_dst, host_src, n, cudaMemcpyHostToDevice, stream_),
                      "cudaMemcpyAsync host to device");
  }
  absl::Status Synchronize() override {
    return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  cudaStream_t stream_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceMemory>> NewCudaDeviceMemory() {
  int count = 0;
  BATON_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&count), "no CUDA device"));
  if (count == 0) return absl::UnavailableError("no CUDA device: the driver reports 0 devices");
  cudaStream_t stream = nullptr;
  BATON_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  return std::unique_ptr<DeviceMemory>(new CudaDeviceMemory(stream));
}

}  // namespace baton::checkpoint
