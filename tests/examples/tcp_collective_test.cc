// The direct mode's TCP collective (examples/train_mlp/tcp_collective.h): ranks as threads
// of this process on loopback, each with its own TcpRanks, as separate processes would.
#include "examples/train_mlp/tcp_collective.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/subprocess.h"

namespace baton::examples {
namespace {

using baton::testing::FreePort;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Runs fn(rank) for every rank of a `world` on its own thread and waits for all.
void OnEveryRank(int world, const std::function<void(TcpRanks&)>& fn) {
  DirectEnv env{.world = world, .master_addr = "127.0.0.1", .master_port = FreePort()};
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      DirectEnv mine = env;
      mine.rank = mine.local_rank = r;
      auto ranks = TcpRanks::Create(mine, /*connect_timeout_s=*/20);
      ASSERT_TRUE(ranks.ok()) << ranks.status();
      fn(**ranks);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(TcpCollective, ThreeRanksAgreeOnEveryOperation) {
  OnEveryRank(/*world=*/3, [](TcpRanks& ranks) {
    int r = ranks.env().rank;
    auto c = ranks.NewCollective();
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)->rank(), r);
    EXPECT_EQ((*c)->size(), 3);
    EXPECT_EQ(*(*c)->AllReduceMax(r == 1 ? 42 : -r), 42);
    // Lengths differ by rank, one is empty, one is large.
    std::string mine = r == 0 ? "" : r == 1 ? "one" : std::string(3 << 20, 'x');
    auto all = (*c)->AllGather(mine);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_THAT(*all, ElementsAre("", "one", std::string(3 << 20, 'x')));
    auto b = (*c)->Broadcast(r == 0 ? "from rank 0" : "ignored");
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(*b, "from rank 0");
  });
}

TEST(TcpCollective, CollectivesAreIndependentAcrossThreads) {
  // As in train_mlp: the Checkpointer's collective on a background thread while the
  // training thread uses another one; each is used by one thread at a time.
  OnEveryRank(/*world=*/2, [](TcpRanks& ranks) {
    auto a = ranks.NewCollective();
    auto b = ranks.NewCollective();
    ASSERT_TRUE(a.ok() && b.ok());
    std::thread background([&] {
      for (int i = 0; i < 200; ++i) EXPECT_EQ(*(*a)->AllReduceMax(i), i);
    });
    for (int i = 0; i < 200; ++i) {
      auto all = (*b)->AllGather(std::to_string(i));
      ASSERT_TRUE(all.ok());
      EXPECT_THAT(*all, ElementsAre(std::to_string(i), std::to_string(i)));
    }
    background.join();
  });
}

TEST(TcpCollective, ARankThatLeavesIsAnErrorNotAHang) {
  OnEveryRank(/*world=*/2, [](TcpRanks& ranks) {
    auto c = ranks.NewCollective();
    ASSERT_TRUE(c.ok()) << c.status();
    if (ranks.env().rank == 1) return;  // its connection closes with it
    auto all = (*c)->AllGather("x");
    EXPECT_EQ(all.status().code(), absl::StatusCode::kUnavailable) << all.status();
    EXPECT_THAT(std::string(all.status().message()), HasSubstr("rank 1 closed the connection"));
  });
}

TEST(TcpCollective, RankZeroGivesUpOnARankThatNeverConnects) {
  DirectEnv env{.rank = 0, .world = 2, .master_addr = "127.0.0.1", .master_port = FreePort()};
  auto ranks = TcpRanks::Create(env, /*connect_timeout_s=*/1);
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  auto c = (*ranks)->NewCollective();
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("1 rank(s) did not connect"));
}

TEST(TcpCollective, OneRankNeedsNoAddress) {
  auto ranks = TcpRanks::Create(DirectEnv{});
  ASSERT_TRUE(ranks.ok());
  auto c = (*ranks)->NewCollective();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*(*c)->Broadcast("alone"), "alone");
}

TEST(DirectEnv, ReadsTorchrunVariablesAndNamesABadOne) {
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "10.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  unsetenv("LOCAL_RANK");
  auto env = DirectEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->local_rank, 1) << "LOCAL_RANK defaults to RANK";
  EXPECT_EQ(env->master_addr, "10.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
  setenv("RANK", "2", 1);
  EXPECT_THAT(std::string(DirectEnvFromEnvironment().status().message()),
              HasSubstr("RANK=2 is not below WORLD_SIZE=2"));
  setenv("RANK", "x", 1);
  EXPECT_THAT(std::string(DirectEnvFromEnvironment().status().message()), HasSubstr("RANK='x'"));
  setenv("RANK", "1", 1);
  unsetenv("MASTER_PORT");
  EXPECT_THAT(std::string(DirectEnvFromEnvironment().status().message()), HasSubstr("MASTER_PORT"));
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR"}) unsetenv(v);
}

}  // namespace
}  // namespace baton::examples
