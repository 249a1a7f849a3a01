// The agent's EffectsQueue: what the worker decides is merged while the effects thread is
// busy (one note read per attempt, the end's winning; sweeps once; flags or'ed), and
// nothing posted before Stop is lost.
#include "launcher/agent/effects_queue.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton {
namespace effects_queue_test {

using ::testing::ElementsAre;

NoteRead Read(uint64_t job, bool finishing, const std::string& path = "p") {
  return NoteRead{.key = {job, 1}, .path = path, .owner = 1000, .finishing = finishing};
}

TEST(EffectsQueue, ReadsOfOneAttemptMergeAndTheEndsReadWins) {
  EffectsQueue q;
  q.Post({Read(1, false, "progress"), Read(2, false)}, {}, false, false);
  q.Post({Read(1, true, "end")}, {}, false, false);
  q.Post({Read(1, false, "later progress")}, {}, false, false);
  Effects e = q.Take();
  ASSERT_EQ(e.reads.size(), 2u);
  EXPECT_TRUE(e.reads.at({1, 1}).finishing) << "a later progress read does not undo the end";
  EXPECT_EQ(e.reads.at({1, 1}).path, "end");
  EXPECT_FALSE(e.reads.at({2, 1}).finishing);
}

TEST(EffectsQueue, SweepsOnceAndFlagsOred) {
  EffectsQueue q;
  q.Post({}, {{3, 1}, {4, 2}}, /*limits_changed=*/true, /*refresh_stats=*/false);
  q.Post({}, {{3, 1}}, /*limits_changed=*/false, /*refresh_stats=*/true);
  Effects e = q.Take();
  EXPECT_THAT(e.sweeps, ElementsAre(AttemptKey{3, 1}, AttemptKey{4, 2}));
  EXPECT_TRUE(e.limits_changed);
  EXPECT_TRUE(e.refresh_stats);
  q.Post({}, {}, false, false);  // nothing: no wake-up, nothing waits
  q.Stop();
  EXPECT_TRUE(q.Take().empty()) << "taken once: the next Take has nothing";
}

TEST(EffectsQueue, TakeWaitsForAPostAndStopHandsOutWhatWasPostedFirst) {
  EffectsQueue q;
  Effects got;
  std::thread taker([&] { got = q.Take(); });
  q.Post({Read(5, true)}, {}, false, false);
  taker.join();
  EXPECT_EQ(got.reads.size(), 1u);

  q.Post({}, {{6, 1}}, false, false);
  q.Stop();
  Effects last = q.Take();
  EXPECT_THAT(last.sweeps, ElementsAre(AttemptKey{6, 1})) << "posted before Stop: not lost";
  EXPECT_TRUE(q.Take().empty()) << "stopped and drained: Take returns at once";
}

}  // namespace effects_queue_test
}  // namespace baton
