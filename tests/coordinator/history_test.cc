// History stays on disk: a coordinator loads only unfinished work at start-up and reads
// finished jobs (records and events) from the store when asked, so restart time follows
// live work, not history.
#include "tests/util/history.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <tuple>

#include "common/ids.h"
#include "coordinator/finished_jobs.h"
#include "coordinator/job_manager.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

// Counts the jobs a JobManager loads at start-up.
class LoadCounter : public JobObserver {
 public:
  void OnJobLoaded(const v1::Job& /*job*/) override { ++loaded; }
  std::atomic<size_t> loaded{0};
};

std::vector<uint64_t> Ids(const v1::ListResponse& page) {
  std::vector<uint64_t> ids;
  for (const auto& j : page.jobs()) ids.push_back(j.id());
  return ids;
}

// Every page of a listing, in order.
std::vector<uint64_t> ListAll(JobManager& jm, v1::ListRequest req) {
  std::vector<uint64_t> ids;
  for (int pages = 0; pages < 1000; ++pages) {
    auto page = jm.List(Admin(), req);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) break;
    for (uint64_t id : Ids(*page)) ids.push_back(id);
    if (page->next_page_token().empty()) break;
    req.set_page_token(page->next_page_token());
  }
  return ids;
}

v1::Job Finished(uint64_t id) {
  v1::Job job;
  job.set_id(id);
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  return job;
}

// A finished job leaves memory only once its final record is durable (else a reader would
// find it in neither place) and newer ones exceed the capacity.
TEST(FinishedJobs, KeepsJobsUntilDurableAndBeyondCapacity) {
  FinishedJobs f(/*capacity=*/2);
  f.Add(Finished(1), {}, /*commit=*/10);
  f.Add(Finished(2), {}, 11);
  f.Add(Finished(3), {}, 12);
  f.Trim(/*durable=*/9);
  EXPECT_EQ(f.size(), 3u) << "over capacity, but nothing durable yet";
  f.Trim(10);
  EXPECT_EQ(f.Find(1), nullptr);
  ASSERT_NE(f.Find(2), nullptr);
  EXPECT_EQ(f.Find(2)->job.id(), 2u);
  f.Trim(12);
  EXPECT_EQ(f.size(), 2u) << "within capacity: kept";
  f.Erase(2);  // retention
  f.Add(Finished(4), {}, 13);
  f.Trim(12);
  EXPECT_EQ(f.Find(2), nullptr);
  EXPECT_NE(f.Find(3), nullptr);
  EXPECT_NE(f.Find(4), nullptr) << "not durable yet";
  std::vector<uint64_t> ids;
  f.ForEach([&](const FinishedJobs::Entry& e) { ids.push_back(e.job.id()); });
  EXPECT_EQ(ids, (std::vector<uint64_t>{3, 4}));
  FinishedJobs none(0);
  none.Add(Finished(5), {}, 1);
  none.Trim(0);
  EXPECT_NE(none.Find(5), nullptr) << "capacity 0 still waits for durability";
  none.Trim(1);
  EXPECT_EQ(none.Find(5), nullptr);
}

// The scale: a million finished jobs and five million events, written directly.
TEST(History, AMillionFinishedJobsStayInTheStoreAndAreServedWhenAsked) {
  TempDir dir;
  {
    StoreOptions fast;
    fast.bulk = true;  // a generator: no WAL, flushed at close
    auto store = Store::Open(dir.Sub("db"), fast);
    ASSERT_TRUE(store.ok()) << store.status();
    HistoryOptions history;
    history.jobs = 1'000'000;
    history.events_per_job = 5;
    auto began = std::chrono::steady_clock::now();
    ASSERT_TRUE(WriteFinishedHistory(**store, history).ok());
    std::printf("wrote 1,000,000 jobs and 5,000,000 events in %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  }
  LoadCounter counter;
  Harness h(TestOptions(), dir.path(), &counter);
  EXPECT_EQ(counter.loaded.load(), 0u) << "finished jobs must not be loaded at start-up";

  // `baton status` of an old job: its record and its events, from the store.
  auto old = h.jm().Get(Alice(), 17);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(old->spec().name(), "history-17");
  ASSERT_EQ(old->events_size(), 5);
  EXPECT_EQ(old->events(0).reason(), "submitted by user-4");
  EXPECT_EQ(old->events(4).to(), v1::JOB_STATE_SUCCEEDED);
  // `baton events --job`: the global log's index.
  auto events = h.jm().event_log().Read(LogQuery{.job_id = 999'999});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 5u);
  EXPECT_EQ((*events)[0].log_seq(), 999'998u * 5 + 1);
  EXPECT_EQ((*events)[4].to(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(h.jm().Get(Alice(), 1'000'001).status().code(), absl::StatusCode::kNotFound);

  // What acts on a job knows an old one is over.
  EXPECT_EQ(h.Cancel(17, Admin()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(h.Cancel(17, Alice()).status().code(), absl::StatusCode::kPermissionDenied)
      << "user-4's job";
  EXPECT_EQ(h.jm().Signal(Admin(), 17, SIGUSR1).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto explain = h.jm().Explain(17);
  ASSERT_TRUE(explain.ok());
  EXPECT_EQ(explain->outcome(), "finished");

  // New work continues the numbering; the queue lists it alone, `--all` pages on into
  // history in id order.
  auto id = h.Submit(Spec());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 1'000'001u);
  EXPECT_EQ(Ids(*h.jm().List(Admin(), {})), std::vector<uint64_t>{*id});
  v1::ListRequest all;
  all.set_all(true);
  all.set_limit(3);
  auto first = h.jm().List(Admin(), all);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Ids(*first), (std::vector<uint64_t>{*id, 1, 2}));
  all.set_page_token(first->next_page_token());
  EXPECT_EQ(Ids(*h.jm().List(Admin(), all)), (std::vector<uint64_t>{3, 4, 5}));
}

// A restart with a large queue (issue 51): every pending job is back, in the queue's order
// (class, then submit time, then id), whole (its packed env and command), with its events
// and its tenant's fair-share standing. 200,000 jobs here; baton-bench-restart times a
// million.
TEST(History, ALargeQueueComesBackInOrderWholeAndWithItsFairShare) {
  TempDir dir;
  constexpr uint64_t kJobs = 200'000;
  const std::vector<std::string> classes = {"training", "experiment", "labeling"};
  const std::vector<std::string> tenants = {"vision", "speech"};
  FakeClock clock;
  {
    StoreOptions fast;
    fast.bulk = true;
    auto store = Store::Open(dir.Sub("db"), fast);
    ASSERT_TRUE(store.ok()) << store.status();
    PendingOptions pending;
    pending.jobs = kJobs;
    pending.tenants = tenants;
    pending.priority_classes = classes;
    ASSERT_TRUE(WritePendingJobs(**store, pending).ok());
    StoreBatch usage;
    usage.usage.emplace();
    usage.usage->set_as_of_ms(clock.NowMs());
    (*usage.usage->mutable_gpu_seconds())["vision"] = 360'000;
    (*usage.usage->mutable_gpu_seconds())["speech"] = 36'000;
    ASSERT_TRUE((*store)->Commit(usage).ok());
  }
  LoadCounter counter;
  Harness h(TestOptions(), dir.path(), &counter);
  EXPECT_EQ(counter.loaded.load(), kJobs);

  // The order the queue must have, computed here from what was written.
  const Policy policy = TestPolicy();
  std::vector<std::tuple<int32_t, int64_t, uint64_t>> want;
  for (uint64_t id = 1; id <= kJobs; ++id) {
    want.emplace_back(-policy.Find(classes[id % classes.size()])->value,
                      int64_t{1'700'000'000'000} + static_cast<int64_t>(id), id);
  }
  std::sort(want.begin(), want.end());
  std::vector<uint64_t> want_ids;
  for (const auto& w : want) want_ids.push_back(std::get<2>(w));
  EXPECT_EQ(ListAll(h.jm(), {}), want_ids);

  // Whole: a job's spec and its submit event, as written.
  for (uint64_t id : {uint64_t{1}, kJobs / 2, kJobs}) {
    auto job = h.jm().Get(Admin(), id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state(), v1::JOB_STATE_PENDING);
    EXPECT_EQ(job->spec().tenant(), tenants[id % tenants.size()]);
    ASSERT_EQ(job->spec().command_size(), 5);
    EXPECT_EQ(job->spec().command(4), "--resume");
    ASSERT_EQ(job->spec().env_size(), 10);
    EXPECT_EQ(job->spec().env().at("BATON_SWEEP_VAR_3"),
              "value-" + std::to_string(id % 1000) + "-3");
    ASSERT_EQ(job->events_size(), 1);
    EXPECT_EQ(job->events(0).reason(), "submitted by user-" + std::to_string(id % 13));
  }

  // Fair share: the ledger as stored (no time has passed on the clock).
  std::map<std::string, double> usage;
  const v1::SharesResponse shares = h.jm().Shares();
  for (const auto& t : shares.tenants()) usage[t.tenant()] = t.usage_gpu_seconds();
  EXPECT_NEAR(usage["vision"], 360'000, 1);
  EXPECT_NEAR(usage["speech"], 36'000, 1);

  // And the queue works on: a cancel of a waiting job stores it whole.
  ASSERT_TRUE(h.Cancel(kJobs / 2, Admin()).ok());
  h.Restart();
  auto cancelled = h.jm().Get(Admin(), kJobs / 2);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled->spec().env_size(), 10) << "a packed spec is stored whole";
  EXPECT_EQ(cancelled->spec().command(0), "python3");
}

// Finished jobs leave memory; everything a user does with them still works, across
// memory, the store and a restart.
TEST(History, FinishedJobsOutOfMemoryServeEveryCall) {
  JobManagerOptions options = TestOptions();
  options.finished_in_memory = 2;
  Harness h(options);
  auto link = h.Connect("n1", 4);
  std::vector<uint64_t> done;
  for (int i = 0; i < 6; ++i) {
    auto id = h.Submit(Spec(1, 1));
    ASSERT_TRUE(id.ok());
    h.jm().SchedulePass();
    h.jm().Flush();
    h.Report("n1", Report(*id, 1, v1::AttemptReport::PHASE_RUNNING));
    h.Report("n1", Report(*id, 1, v1::AttemptReport::PHASE_EXITED, 0));
    ASSERT_EQ(h.State(*id), v1::JOB_STATE_SUCCEEDED);
    done.push_back(*id);
  }
  // No pass runs from here on: these two stay pending (one is cancelled there).
  auto cancelled = h.Submit(Spec(1, 1));
  ASSERT_TRUE(cancelled.ok());
  ASSERT_TRUE(h.Cancel(*cancelled).ok());
  auto waiting = h.Submit(Spec(1, 1));
  ASSERT_TRUE(waiting.ok());
  h.Tick();

  for (bool restarted : {false, true}) {
    SCOPED_TRACE(restarted ? "after a restart" : "before a restart");
    // The oldest is only in the store; every one reads the same.
    for (uint64_t id : done) {
      v1::Job job = h.Get(id);
      EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << id;
      EXPECT_GE(job.events_size(), 4) << id;
      EXPECT_EQ(job.attempts_size(), 1) << id;
    }
    EXPECT_EQ(h.Cancel(*cancelled).value_or(v1::JOB_STATE_UNSPECIFIED), v1::JOB_STATE_CANCELLED)
        << "cancel stays idempotent";
    EXPECT_EQ(h.Cancel(done[0]).status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(h.Cancel(done[0], Bob()).status().code(), absl::StatusCode::kPermissionDenied)
        << "access is checked for finished jobs too";
    v1::LogsRequest logs;
    logs.set_job_id(done[0]);
    auto target = h.jm().FindLogs(Alice(), logs);
    ASSERT_TRUE(target.ok()) << target.status();
    EXPECT_EQ(target->node, "n1");
    std::vector<v1::JobState> seen;
    auto token = h.jm().Watch(done[0], [&](const v1::Job& j) { seen.push_back(j.state()); });
    ASSERT_TRUE(token.ok());
    h.jm().Unwatch(*token);
    EXPECT_EQ(seen, std::vector<v1::JobState>{v1::JOB_STATE_SUCCEEDED});

    // Listings: every job once, unfinished first, then history in id order, whatever the
    // page size and wherever each finished job is read from.
    std::vector<uint64_t> expected = {*waiting};
    for (uint64_t id : done) expected.push_back(id);
    expected.push_back(*cancelled);
    for (uint32_t limit : {0u, 1u, 2u, 3u, 5u}) {
      v1::ListRequest all;
      all.set_all(true);
      all.set_limit(limit);
      EXPECT_EQ(ListAll(h.jm(), all), expected) << "limit " << limit;
    }
    v1::ListRequest cancelled_only;
    cancelled_only.add_states(v1::JOB_STATE_CANCELLED);
    cancelled_only.set_limit(1);
    EXPECT_EQ(ListAll(h.jm(), cancelled_only), std::vector<uint64_t>{*cancelled});
    v1::ListRequest queue;
    EXPECT_EQ(ListAll(h.jm(), queue), std::vector<uint64_t>{*waiting});
    h.Restart();
    link = h.Connect("n1", 4);
  }
}

// A job cancelled while it cools down after an eviction leaves memory with nothing
// pointing at it: the next ticks and passes run (they would crash on a stale id).
TEST(History, AJobCancelledInCooldownLeavesMemoryWhole) {
  JobManagerOptions options = TestOptions();
  options.finished_in_memory = 0;
  for (auto& c : options.policy.classes) {
    c.min_runtime_s = 0;
    c.cooldown_base_s = 10;
  }
  Harness h(options);
  h.Connect("n1", /*gpus=*/2);
  auto train = h.Submit(Spec(1, 2));
  ASSERT_TRUE(train.ok());
  h.jm().SchedulePass();
  h.jm().Flush();
  h.Report("n1", Report(*train, 1, v1::AttemptReport::PHASE_RUNNING));
  v1::JobSpec serve = Spec(1, 2, {"serve"});
  serve.set_priority_class("inference");
  serve.set_restart_policy(v1::RESTART_POLICY_UNSPECIFIED);
  ASSERT_TRUE(h.Submit(serve).ok());
  h.jm().SchedulePass();
  h.jm().Flush();
  ASSERT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING);
  v1::AttemptReport gone = Report(*train, 1, v1::AttemptReport::PHASE_EXITED);
  gone.set_killed(true);
  h.Report("n1", gone);
  ASSERT_EQ(h.State(*train), v1::JOB_STATE_COOLDOWN);
  ASSERT_EQ(h.Cancel(*train).value_or(v1::JOB_STATE_UNSPECIFIED), v1::JOB_STATE_CANCELLED);
  h.clock().AdvanceMs(11'000);
  h.jm().AgentHeartbeat("n1");
  h.Tick();
  h.jm().SchedulePass();
  h.jm().Flush();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_CANCELLED);
}

// A store written before the live/ended indexes existed gets them at its first open:
// nothing unfinished is left behind, nothing finished is loaded.
TEST(History, AStoreFromBeforeTheIndexesIsIndexedAtItsFirstOpen) {
  TempDir dir;
  {
    // The older layout: its seven column families, records only.
    rocksdb::DBOptions db_opts;
    db_opts.create_if_missing = true;
    db_opts.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    for (const char* name : {"default", "jobs", "events", "nodes", "meta", "log", "log_job"}) {
      families.emplace_back(name, rocksdb::ColumnFamilyOptions());
    }
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(db_opts, dir.Sub("db"), families, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    for (uint64_t id = 1; id <= 3; ++id) {
      v1::Job job;
      job.set_id(id);
      job.set_state(id == 2 ? v1::JOB_STATE_PENDING : v1::JOB_STATE_FAILED);
      job.set_finished_ms(id == 2 ? 0 : 1000 * id);
      job.mutable_spec()->add_command("true");
      ASSERT_TRUE(db->Put({}, handles[1], PaddedKey(id), job.SerializeAsString()).ok());
    }
    for (auto* handle : handles) db->DestroyColumnFamilyHandle(handle);
  }
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok()) << store.status();
  auto snap = (*store)->Load();
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->jobs.size(), 1u);
  EXPECT_EQ(snap->jobs[0].id(), 2u);
  EXPECT_EQ((*store)->CountFinished().value_or(0), 2u);
  EXPECT_EQ((*store)->EndedBefore(1000, 10).value_or(std::vector<uint64_t>{}),
            std::vector<uint64_t>{1});
  auto three = (*store)->ReadJob(3, /*with_events=*/true);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->state(), v1::JOB_STATE_FAILED);
}

}  // namespace
}  // namespace baton::testing
