#include "coordinator/store.h"

#include <algorithm>
#include <thread>

#include "common/ids.h"
#include "coordinator/event_list.h"
#include "coordinator/packed_spec.h"
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

// Load reads the live jobs with forward cursors: jobs far apart among finished ones (a
// seek), next to each other (a step), each with its own events and exec secret and none of
// the finished ones'.
TEST(Store, LoadsLiveJobsAmongFinishedOnesWithTheirOwnEventsAndSecrets) {
  TempDir dir;
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  StoreBatch b;
  const std::vector<uint64_t> live = {2, 3, 40, 41, 500, 999};
  for (uint64_t id = 1; id <= 1000; ++id) {
    const bool is_live = std::count(live.begin(), live.end(), id) > 0;
    b.jobs.push_back(MakeJob(id, is_live ? v1::JOB_STATE_PENDING : v1::JOB_STATE_SUCCEEDED));
    for (uint64_t seq = 1; seq <= id % 3 + 1; ++seq) b.events.push_back(MakeEvent(id, seq));
    v1::StoredExecSecret secret;
    secret.set_job_id(id);
    secret.set_attempt(1);
    secret.set_secret("s" + std::to_string(id));
    if (id % 2 == 1) b.secrets.push_back(secret);
  }
  ASSERT_TRUE((*store)->Commit(b).ok());
  // On one thread, and in ranges on several (as a large queue is), the same; into the
  // snapshot, and to a sink (each range's jobs in order, ranges numbered in id order).
  for (uint64_t per_thread : {50'000, 1}) {
    for (bool pack : {false, true}) {
      struct Sunk {
        v1::Job job;
        std::string packed;
        EventList events;
      };
      std::vector<std::vector<Sunk>> parts(Store::kMaxLoadThreads);
      Store::LoadOptions options{.jobs_per_thread = per_thread};
      if (pack) {
        options.sink = [&parts](size_t part, v1::Job job, std::string packed, EventList events) {
          parts[part].push_back({std::move(job), std::move(packed), std::move(events)});
        };
      }
      auto snap = (*store)->Load(options);
      ASSERT_TRUE(snap.ok()) << snap.status();
      std::vector<Sunk> sunk;
      for (auto& part : parts) {
        for (auto& one : part) sunk.push_back(std::move(one));
      }
      std::vector<uint64_t> ids, event_ids, secret_ids;
      for (const auto& j : snap->jobs) ids.push_back(j.id());
      for (const auto& one : sunk) ids.push_back(one.job.id());
      for (const auto& e : snap->events) event_ids.push_back(e.job_id());
      for (const auto& one : sunk) {
        for (const auto& e : one.events.ToVector()) event_ids.push_back(e.job_id());
      }
      for (const auto& s : snap->secrets) secret_ids.push_back(s.job_id());
      EXPECT_EQ(ids, live) << per_thread << pack;
      EXPECT_EQ(event_ids,
                (std::vector<uint64_t>{2, 2, 2, 3, 40, 40, 41, 41, 41, 500, 500, 500, 999}));
      EXPECT_EQ(secret_ids, (std::vector<uint64_t>{3, 41, 999}));
      ASSERT_EQ(sunk.size(), pack ? live.size() : 0u);
      for (const auto& one : sunk) {
        EXPECT_TRUE(one.job.spec().command().empty()) << "packed beside it";
        v1::JobSpec spec;
        ASSERT_TRUE(UnpackSpec(one.packed, &spec));
        EXPECT_EQ(spec.command(0), "true");
      }
    }
  }
}

// Records of older versions held an attempt's exec secret in a field the public messages no
// longer know: loaded or read, it is gone, and the rest of the job (its env map) is whole.
TEST(Store, AnOldRecordsUnknownFieldsAreDroppedAndItsMapsKept) {
  TempDir dir;
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  v1::Job old = MakeJob(7, v1::JOB_STATE_PENDING);
  (*old.mutable_spec()->mutable_env())["DATA"] = "/datasets/imagenet";
  v1::Attempt* attempt = old.add_attempts();
  attempt->GetReflection()->MutableUnknownFields(attempt)->AddLengthDelimited(11, "exec-s3cret");
  old.GetReflection()->MutableUnknownFields(&old)->AddVarint(999, 1);
  StoreBatch b;
  b.jobs.push_back(old);
  ASSERT_TRUE((*store)->Commit(b).ok());
  auto snap = (*store)->Load();
  ASSERT_TRUE(snap.ok()) << snap.status();
  auto read = (*store)->ReadJob(7, /*with_events=*/false);
  ASSERT_TRUE(read.ok()) << read.status();
  for (const v1::Job& job : {snap->jobs.at(0), *read}) {
    EXPECT_EQ(job.SerializeAsString().find("exec-s3cret"), std::string::npos);
    EXPECT_TRUE(job.GetReflection()->GetUnknownFields(job).empty());
    EXPECT_EQ(job.spec().env().at("DATA"), "/datasets/imagenet");
    EXPECT_EQ(job.attempts_size(), 1);
  }
}

// A job's events packed in memory come back as they went in, in order, each whole.
TEST(EventList, GivesBackEveryEventInOrderAndWhole) {
  EventList list;
  EXPECT_TRUE(list.empty());
  std::vector<v1::Event> in;
  for (uint64_t seq = 1; seq <= 300; ++seq) {
    v1::Event ev = MakeEvent(5, seq);
    ev.set_reason(std::string(seq, 'r'));  // lengths across the one-byte varint boundary
    ev.set_time_ms(1'700'000'000'000 + static_cast<int64_t>(seq));
    list.push_back(ev);
    in.push_back(ev);
  }
  list.push_back(v1::Event());  // an empty record is an event too
  in.emplace_back();
  ASSERT_EQ(list.size(), in.size());
  std::vector<v1::Event> out = list.ToVector();
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].SerializeAsString(), in[i].SerializeAsString()) << "event " << i;
  }
  v1::Job job;
  *job.add_events() = MakeEvent(5, 0);
  EventList(std::vector<v1::Event>{MakeEvent(5, 1), MakeEvent(5, 2)})
      .AppendTo(job.mutable_events());
  ASSERT_EQ(job.events_size(), 3);
  EXPECT_EQ(job.events(2).reason(), "e2");
  // Stored records appended unparsed (a restart's load): one that does not parse says so
  // and the rest come back.
  EventList stored;
  stored.AppendRecord(MakeEvent(6, 1).SerializeAsString());
  stored.AppendRecord("\x0a\x7f");  // a field cut short
  stored.AppendRecord(MakeEvent(6, 3).SerializeAsString());
  out = stored.ToVector();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].reason(), "e1");
  EXPECT_EQ(out[1].reason(), "(a stored event record of 2 bytes does not parse)");
  EXPECT_EQ(out[2].reason(), "e3");
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
