#include "coordinator/watch_hub.h"

#include "gtest/gtest.h"

namespace baton::testing {
namespace {

v1::Job Version(uint64_t id, uint64_t version) {
  v1::Job job;
  job.set_id(id);
  job.set_version(version);
  return job;
}

// A watcher sees its job now, then each later version of it and nothing else, until it
// is removed.
TEST(WatchHub, AWatcherGetsItsJobsVersionsUntilRemoved) {
  WatchHub hub;
  std::vector<uint64_t> seen_a, seen_b;
  uint64_t a = hub.Add(Version(1, 3), [&](const v1::Job& j) { seen_a.push_back(j.version()); });
  uint64_t b = hub.Add(Version(2, 7), [&](const v1::Job& j) { seen_b.push_back(j.version()); });
  EXPECT_NE(a, b);
  EXPECT_EQ(seen_a, std::vector<uint64_t>{3}) << "the current version first";
  EXPECT_TRUE(hub.Watches(1));
  EXPECT_FALSE(hub.Watches(3)) << "nobody watches job 3";
  hub.Notify({Version(1, 4), Version(3, 1)});
  hub.Notify({Version(2, 8), Version(1, 5)});
  EXPECT_EQ(seen_a, (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(seen_b, (std::vector<uint64_t>{7, 8}));
  hub.Remove(a);
  EXPECT_FALSE(hub.Watches(1)) << "its only watcher is gone";
  hub.Notify({Version(1, 6)});
  EXPECT_EQ(seen_a.back(), 5u) << "nothing after Remove";
  EXPECT_EQ(hub.size(), 1u);
  hub.Remove(a);  // twice: harmless
  hub.Remove(b);
  EXPECT_EQ(hub.size(), 0u);
}

// A finished job changes no more: one call, nothing registered, its token still valid.
TEST(WatchHub, AFinishedJobIsToldOnce) {
  WatchHub hub;
  int calls = 0;
  uint64_t token = hub.Once(Version(9, 2), [&](const v1::Job&) { ++calls; });
  hub.Notify({Version(9, 3)});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(hub.size(), 0u);
  EXPECT_NE(hub.Add(Version(9, 3), [](const v1::Job&) {}), token) << "tokens never repeat";
  hub.Remove(token);
}

}  // namespace
}  // namespace baton::testing
