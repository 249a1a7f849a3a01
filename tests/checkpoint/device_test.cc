// Device buffers through the DeviceMemory interface, on any machine: a fake device (plain
// host memory behind the interface) exercises pinned staging, the asynchronous copies and
// the restore through staging exactly as the CUDA adapter is driven.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint {
namespace {

using testing::FillPattern;
using testing::MatchesPattern;
using testing::ScratchDir;

class FakeDevice : public DeviceMemory {
 public:
  absl::StatusOr<void*> AllocatePinned(size_t bytes) override {
    ++pinned_allocations;
    return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  }
  void FreePinned(void* p) override { std::free(p); }
  absl::Status CopyToHostAsync(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    ++to_host;
    return absl::OkStatus();
  }
  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    ++to_device;
    return absl::OkStatus();
  }
  absl::Status Synchronize() override {
    ++syncs;
    return absl::OkStatus();
  }
  int pinned_allocations = 0, to_host = 0, to_device = 0, syncs = 0;
};

TEST(DeviceBuffers, RoundTripThroughPinnedStaging) {
  ScratchDir dir;
  FakeDevice device;
  LocalCollective local;
  std::vector<char> weights(3 << 20), host(5000), moments(4097);
  auto make = [&] {
    auto ckpt = *Checkpointer::Create({.dir = dir.path(), .device_memory = &device}, &local);
    EXPECT_TRUE(ckpt->RegisterDeviceBuffer("weights", weights.data(), weights.size()).ok());
    EXPECT_TRUE(ckpt->RegisterHostBuffer("host", host.data(), host.size()).ok());
    EXPECT_TRUE(ckpt->RegisterDeviceBuffer("moments", moments.data(), moments.size()).ok());
    return ckpt;
  };
  auto fill = [&](uint64_t seed) {
    FillPattern(weights.data(), weights.size(), seed);
    FillPattern(host.data(), host.size(), seed + 1);
    FillPattern(moments.data(), moments.size(), seed + 2);
  };
  {
    auto ckpt = make();
    fill(1);
    ASSERT_TRUE(ckpt->Save(1).ok());
    fill(2);
    ASSERT_TRUE(ckpt->SaveAsync(2).ok());
    fill(3);  // after SaveAsync returns, the device may change
    ASSERT_TRUE(ckpt->Wait().ok());
  }
  EXPECT_EQ(device.to_host, 4);
  EXPECT_EQ(device.pinned_allocations, 1) << "Save and SaveAsync share one staging area";
  std::memset(weights.data(), 0, weights.size());
  std::memset(moments.data(), 0, moments.size());
  auto ckpt = make();
  auto restored = ckpt->RestoreLatest();
  ASSERT_TRUE(restored.ok() && restored->has_value()) << restored.status();
  EXPECT_EQ((*restored)->step, 2);
  EXPECT_EQ(device.to_device, 2);
  EXPECT_TRUE(MatchesPattern(weights.data(), weights.size(), 2));
  EXPECT_TRUE(MatchesPattern(host.data(), host.size(), 3));
  EXPECT_TRUE(MatchesPattern(moments.data(), moments.size(), 4));
}

}  // namespace
}  // namespace baton::checkpoint
