#include "coordinator/store.h"

#include <thread>

#include "common/ids.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {
namespace {

v1::Job MakeJob(uint64_t id, v1::JobState state) {
  v1::Job j;
  j.set_id(id);
  j.set_state(state);
  j.mutable_spec()->add_command("true");
  return j;
}

v1::Event MakeEvent(uint64_t job, uint64_t seq) {
  v1::Event e;
  e.set_job_id(job);
  e.set_seq(seq);
  e.set_reason("e" + std::to_string(seq));
  return e;
}

TEST(Store, CommitsAndLoadsInIdOrder) {
  TempDir dir;
  {
    auto store = Store::Open(dir.Sub("db"), {});
    ASSERT_TRUE(store.ok()) << store.status();
    StoreBatch b;
    for (uint64_t id : {12, 3, 100}) {
      b.jobs.push_back(MakeJob(id, v1::JOB_STATE_PENDING));
      b.events.push_back(MakeEvent(id, 1));
    }
    b.events.push_back(MakeEvent(3, 2));
    v1::Node n;
    n.set_name("n1");
    b.nodes.push_back(n);
    b.next_job_id = 101;
    ASSERT_TRUE((*store)->Commit(b).ok());
  }
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  auto snap = (*store)->Load();
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->jobs.size(), 3u);
  EXPECT_EQ(snap->jobs[0].id(), 3u);
  EXPECT_EQ(snap->jobs[1].id(), 12u);
  EXPECT_EQ(snap->jobs[2].id(), 100u);
  ASSERT_EQ(snap->events.size(), 4u);
  EXPECT_EQ(snap->events[0].job_id(), 3u);
  EXPECT_EQ(snap->events[1].seq(), 2u);
  EXPECT_EQ(snap->nodes.size(), 1u);
  EXPECT_EQ(snap->next_job_id, 101u);
}

TEST(Store, LaterVersionsOfAJobReplaceEarlierOnes) {
  TempDir dir;
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  StoreBatch b;
  b.jobs.push_back(MakeJob(1, v1::JOB_STATE_PENDING));
  b.jobs.push_back(MakeJob(1, v1::JOB_STATE_RUNNING));  // merged batches keep the last
  ASSERT_TRUE((*store)->Commit(b).ok());
  auto snap = (*store)->Load();
  ASSERT_EQ(snap->jobs.size(), 1u);
  EXPECT_EQ(snap->jobs[0].state(), v1::JOB_STATE_RUNNING);
}

TEST(Store, StoresJobsWithoutTheirEvents) {
  TempDir dir;
  auto store = Store::Open(dir.Sub("db"), {});
  StoreBatch b;
  v1::Job j = MakeJob(1, v1::JOB_STATE_PENDING);
  *j.add_events() = MakeEvent(1, 1);
  b.jobs.push_back(j);
  ASSERT_TRUE((*store)->Commit(b).ok());
  EXPECT_EQ((*store)->Load()->jobs[0].events_size(), 0);
}

TEST(Store, OneProcessOwnsTheDirectory) {
  TempDir dir;
  auto first = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(first.ok());
  auto second = Store::Open(dir.Sub("db"), {});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
}

TEST(Store, UnreadableDirectoryIsAClearError) {
  auto store = Store::Open("/proc/baton-cannot-live-here", {});
  ASSERT_FALSE(store.ok());
  EXPECT_NE(std::string(store.status().message()).find("/proc/baton-cannot-live-here"),
            std::string::npos);
}

}  // namespace
}  // namespace baton::testing
