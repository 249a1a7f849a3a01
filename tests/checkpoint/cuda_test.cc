// Device buffers on a real GPU through the CUDA adapter (cudaHostAlloc staging,
// cudaMemcpyAsync). Skips with the reason where no CUDA device answers.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/cuda_device_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint {
namespace {

using testing::FillPattern;
using testing::MatchesPattern;

TEST(CudaCheckpoint, DeviceBuffersRoundTripThroughPinnedStaging) {
  auto device = NewCudaDeviceMemory();
  if (!device.ok()) {
    EXPECT_THAT(std::string(device.status().message()), ::testing::HasSubstr("no CUDA device"));
    GTEST_SKIP() << device.status().message();  // "no CUDA device: <CUDA error>"
  }
  constexpr size_t kBytes = (64 << 20) + 17;
  void* gpu = nullptr;
  ASSERT_EQ(cudaMalloc(&gpu, kBytes), cudaSuccess);
  std::vector<char> host(kBytes);
  testing::ScratchDir dir;
  LocalCollective local;
  auto make = [&] {
    auto ckpt = *Checkpointer::Create({.dir = dir.path(), .device_memory = device->get()}, &local);
    EXPECT_TRUE(ckpt->RegisterDeviceBuffer("weights", gpu, kBytes).ok());
    return ckpt;
  };
  {
    auto ckpt = make();
    FillPattern(host.data(), kBytes, 5);
    ASSERT_EQ(cudaMemcpy(gpu, host.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_TRUE(ckpt->SaveAsync(5).ok());
    ASSERT_EQ(cudaMemset(gpu, 0x5a, kBytes), cudaSuccess);  // training moves on
    ASSERT_TRUE(ckpt->Wait().ok());
  }
  ASSERT_EQ(cudaMemset(gpu, 0, kBytes), cudaSuccess);
  auto ckpt = make();
  auto restored = ckpt->RestoreLatest();
  ASSERT_TRUE(restored.ok() && restored->has_value()) << restored.status();
  EXPECT_EQ((*restored)->step, 5);
  std::vector<char> back(kBytes);
  ASSERT_EQ(cudaMemcpy(back.data(), gpu, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(MatchesPattern(back.data(), kBytes, 5));
  cudaFree(gpu);
}

}  // namespace
}  // namespace baton::checkpoint
