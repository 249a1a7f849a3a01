// Hundreds of MiB across mixed buffers (0 B to 256 MiB) on the real filesystem, with
// O_DIRECT writes and parallel reads, through Save and SaveAsync.
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/test_state.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint {
namespace {

std::vector<size_t> MixedSizes() {
  std::vector<size_t> sizes = {256 << 20, 0, 1, (48 << 20) + 3, 4096, 4095};
  std::mt19937 rng(42);
  for (int i = 0; i < 40; ++i) sizes.push_back(rng() % (300 << 10));
  return sizes;
}

TEST(LargeCheckpoint, HundredsOfMebibytesRoundTripBitExact) {
  testing::ScratchDir dir;
  LocalCollective local;
  testing::TestState state(MixedSizes());
  {
    auto ckpt = *Checkpointer::Create({.dir = dir.path()}, &local);
    ASSERT_TRUE(state.Register(*ckpt).ok());
    state.Fill(1);
    ASSERT_TRUE(ckpt->Save(1).ok());
    state.Fill(2);
    ASSERT_TRUE(ckpt->SaveAsync(2).ok());
    state.Clear();  // training overwrites its state while the save is written
    ASSERT_TRUE(ckpt->Wait().ok());
  }
  auto ckpt = *Checkpointer::Create({.dir = dir.path()}, &local);
  ASSERT_TRUE(state.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  ASSERT_TRUE(restored.ok() && restored->has_value()) << restored.status();
  EXPECT_EQ((*restored)->step, 2);
  EXPECT_GT((*restored)->bytes, 300u << 20);
  EXPECT_EQ(state.Mismatch(2), "");
}

}  // namespace
}  // namespace baton::checkpoint
