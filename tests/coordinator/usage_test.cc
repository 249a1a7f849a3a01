// Accounting (issue 49): the usage rollup's arithmetic from tables, the store's merge
// operator on a real RocksDB, the rollup against a brute-force sum over job records on a
// random history across day boundaries and restarts, who may read whose usage, and
// `baton history`'s query over the ended index.
#include <cmath>
#include <random>
#include <set>

#include "coordinator/usage/report.h"
#include "coordinator/usage/rollup.h"
#include "gtest/gtest.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

constexpr int64_t kDay = usage::kDayMs;
constexpr int64_t kHour = 3'600'000;

TEST(UsageRollup, WaitBucketsAreOrderedAndWithinTheirBounds) {
  EXPECT_EQ(usage::WaitBucket(0), 0u);
  EXPECT_EQ(usage::WaitBucket(0.999), 0u);
  EXPECT_EQ(usage::WaitBucket(std::nan("")), 0u);
  EXPECT_EQ(usage::WaitBucket(1e12), usage::kBuckets - 1);
  uint32_t last = 0;
  for (double s = 1; s < 1e9; s *= 1.013) {
    const uint32_t b = usage::WaitBucket(s);
    EXPECT_GE(b, last) << s;
    last = b;
    // The value a bucket reports is within 1/16 of every wait in it.
    EXPECT_NEAR(usage::BucketSeconds(b), s, s / 16 + 1e-9) << s;
  }
}

TEST(UsageRollup, PercentilesComeFromTheMergedHistogram) {
  std::array<uint64_t, usage::kBuckets> h{};
  EXPECT_EQ(usage::Percentile(h, 0.5), 0);
  h[usage::WaitBucket(10)] = 90;   // 90 waits of 10 s
  h[usage::WaitBucket(600)] = 10;  // 10 of 10 min
  EXPECT_NEAR(usage::Percentile(h, 0.50), 10, 10.0 / 16);
  EXPECT_NEAR(usage::Percentile(h, 0.90), 10, 10.0 / 16);
  EXPECT_NEAR(usage::Percentile(h, 0.95), 600, 600.0 / 16);
}

v1::Attempt Ran(int64_t from, int64_t to, uint32_t gpus) {
  v1::Attempt a;
  a.set_scheduled_ms(from);
  a.set_started_ms(from);
  a.set_ended_ms(to);
  auto* p = a.add_placement();
  for (uint32_t i = 0; i < gpus; ++i) p->add_gpu_ids("GPU-" + std::to_string(i));
  return a;
}

v1::Job JobOf(const std::string& tenant, const std::string& user, const std::string& cls,
              int64_t submitted) {
  v1::Job job;
  job.set_id(1);
  job.set_user(user);
  job.mutable_spec()->set_tenant(tenant);
  job.mutable_spec()->set_priority_class(cls);
  job.set_submitted_ms(submitted);
  job.set_state(v1::JOB_STATE_PENDING);
  return job;
}

// GPU-seconds go to the days they were held in; an evicted attempt's lost work and count
// to its end day; the wait before the first placement to that day; the end to its day.
TEST(UsageRollup, ChargesSplitAtMidnightAndCountOnce) {
  const int64_t d0 = 20'000 * kDay;
  v1::Job job = JobOf("vision", "alice", "training", d0 + 22 * kHour);
  usage::Rollup r;
  usage::Mark m = r.Charge(job, {});
  EXPECT_TRUE(r.empty()) << "a pending job charges nothing";
  // Placed 1 h after submit at 23:00 on day 0, evicted at 02:00 on day 1 with 2 GPUs.
  v1::Attempt first = Ran(d0 + 23 * kHour, d0 + kDay + 2 * kHour, 2);
  first.set_ended_ms(0);
  *job.add_attempts() = first;
  job.set_state(v1::JOB_STATE_RUNNING);
  m = r.Charge(job, m);
  EXPECT_EQ(m.attempts, 0u);
  EXPECT_TRUE(m.waited);
  job.mutable_attempts(0)->set_ended_ms(d0 + kDay + 2 * kHour);
  job.mutable_attempts(0)->set_eviction("preempted");
  job.mutable_attempts(0)->set_lost_gpu_seconds(1800);
  job.set_state(v1::JOB_STATE_PENDING);
  m = r.Charge(job, m);
  // Attempt 2 on day 1: 4 GPUs for 3 h, then the job succeeds.
  *job.add_attempts() = Ran(d0 + kDay + 5 * kHour, d0 + kDay + 8 * kHour, 4);
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.set_finished_ms(d0 + kDay + 8 * kHour);
  m = r.Charge(job, m);
  EXPECT_EQ(m, (usage::Mark{2, true, true}));
  EXPECT_EQ(m, usage::MarkOf(job));

  const auto& days = r.days();
  ASSERT_EQ(days.size(), 2u);
  const usage::Cell& c0 = days.at({20'000, "vision"}).at({"alice", "training"});
  const usage::Cell& c1 = days.at({20'001, "vision"}).at({"alice", "training"});
  EXPECT_DOUBLE_EQ(c0.gpu_seconds, 2 * 3600.0);
  EXPECT_DOUBLE_EQ(c1.gpu_seconds, 2 * 2 * 3600.0 + 4 * 3 * 3600.0);
  EXPECT_EQ(c0.evictions, 0u);
  EXPECT_EQ(c1.evictions, 1u);
  EXPECT_DOUBLE_EQ(c1.lost_gpu_seconds, 1800);
  EXPECT_EQ(c0.waits, (std::map<uint32_t, uint32_t>{{usage::WaitBucket(3600), 1}}));
  EXPECT_TRUE(c1.waits.empty()) << "only the first placement's wait";
  EXPECT_EQ(c1.succeeded, 1u);

  // Charged from scratch, the record gives the same rollup (what the brute force does).
  usage::Rollup brute;
  brute.Charge(job, {});
  EXPECT_EQ(brute.days(), r.days());
  // And charging again from its mark adds nothing.
  usage::Rollup again;
  again.Charge(job, m);
  EXPECT_TRUE(again.empty());
}

TEST(UsageRollup, EndsCountByState) {
  struct Row {
    v1::JobState state;
    uint32_t succeeded, failed, cancelled;
  };
  for (const Row& row : std::vector<Row>{{v1::JOB_STATE_SUCCEEDED, 1, 0, 0},
                                         {v1::JOB_STATE_FAILED, 0, 1, 0},
                                         {v1::JOB_STATE_CANCELLED, 0, 0, 1}}) {
    v1::Job job = JobOf("t", "u", "c", 5 * kDay);
    job.set_state(row.state);
    job.set_finished_ms(5 * kDay + 7);
    usage::Rollup r;
    r.Charge(job, {});
    const usage::Cell& c = r.days().at({5, "t"}).at({"u", "c"});
    EXPECT_EQ(c.succeeded, row.succeeded);
    EXPECT_EQ(c.failed, row.failed);
    EXPECT_EQ(c.cancelled, row.cancelled);
    EXPECT_TRUE(c.waits.empty()) << "cancelled before any placement: no wait";
  }
}

TEST(UsageRollup, RecordsMergeAndDamagedRowsAddNothing) {
  usage::Cells a, b;
  a[{"alice", "training"}].gpu_seconds = 10;
  a[{"alice", "training"}].waits[3] = 2;
  b[{"alice", "training"}].gpu_seconds = 5;
  b[{"alice", "training"}].waits[3] = 1;
  b[{"alice", "training"}].waits[9] = 4;
  b[{"bob", "batch"}].failed = 2;
  usage::Cells sum;
  EXPECT_TRUE(usage::AddRecord(usage::Merge(usage::ToRecord(a), usage::ToRecord(b)), sum));
  EXPECT_DOUBLE_EQ((sum[{"alice", "training"}].gpu_seconds), 15);
  EXPECT_EQ((sum[{"alice", "training"}].waits), (std::map<uint32_t, uint32_t>{{3, 3}, {9, 4}}));
  EXPECT_EQ((sum[{"bob", "batch"}].failed), 2u);

  // Damaged records add nothing: a name out of range, rows of unequal length, waits that
  // run past their arrays.
  std::vector<v1::UsageRecord> damaged(3, usage::ToRecord(a));
  damaged[0].set_user(0, 99);
  damaged[1].add_failed(1);
  damaged[2].set_wait_end(0, 5);
  for (const auto& bad : damaged) {
    usage::Cells out;
    EXPECT_FALSE(usage::AddRecord(bad, out)) << bad.ShortDebugString();
    EXPECT_TRUE(out.empty());
    usage::Report report(v1::USAGE_GROUP_USER, {});
    report.Add("t", bad);
    EXPECT_EQ(report.Finish().lines_size(), 0);
  }
}

// The store's `usage` family adds what each commit writes (RocksDB merges), across a
// reopen, and --usage-retention's range delete drops whole days.
TEST(UsageStore, CommitsAddUpAndOldDaysAreDeleted) {
  TempDir dir;
  auto delta = [](int64_t day, const std::string& tenant, double gpu_seconds) {
    usage::Cells cells;
    cells[{"alice", "training"}].gpu_seconds = gpu_seconds;
    cells[{"alice", "training"}].waits[usage::WaitBucket(60)] = 1;
    v1::UsageDelta d;
    d.set_day(day);
    d.set_tenant(tenant);
    *d.mutable_record() = usage::ToRecord(cells);
    return d;
  };
  auto read = [](Store& store, int64_t first, int64_t last) {
    std::map<std::pair<int64_t, std::string>, usage::Cells> out;
    EXPECT_TRUE(
        store
            .ScanUsage(first, last,
                       [&](int64_t day, const std::string& tenant, const v1::UsageRecord& rec) {
                         usage::AddRecord(rec, out[{day, tenant}]);
                       })
            .ok());
    return out;
  };
  {
    auto store = Store::Open(dir.path() + "/db", {});
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 3; ++i) {
      StoreBatch b;
      b.usage_deltas = {delta(100, "vision", 10), delta(101, "vision", 1), delta(101, "speech", 2)};
      ASSERT_TRUE((*store)->Commit(b).ok());
    }
  }
  auto store = Store::Open(dir.path() + "/db", {});
  ASSERT_TRUE(store.ok());
  auto all = read(**store, 0, 1000);
  ASSERT_EQ(all.size(), 3u);
  const usage::Cell& c = all[{100, "vision"}].at({"alice", "training"});
  EXPECT_DOUBLE_EQ(c.gpu_seconds, 30);
  EXPECT_EQ(c.waits.at(usage::WaitBucket(60)), 3u);
  EXPECT_EQ(read(**store, 101, 101).size(), 2u) << "only the days asked for";
  StoreBatch expire;
  expire.usage_before_day = 101;
  ASSERT_TRUE((*store)->Commit(expire).ok());
  all = read(**store, 0, 1000);
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(all.count({100, "vision"}), 0u);
}

// --- the coordinator's rollup against a brute-force sum -----------------------------------

// Every job on record, finished ones included.
std::vector<v1::Job> AllJobs(JobManager& jm) {
  std::vector<v1::Job> out;
  v1::ListRequest req;
  req.set_all(true);
  for (int pages = 0; pages < 100; ++pages) {
    auto page = jm.List(Admin(), req);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) break;
    for (const auto& j : page->jobs()) out.push_back(j);
    if (page->next_page_token().empty()) break;
    req.set_page_token(page->next_page_token());
  }
  return out;
}

void ExpectSameReport(const v1::UsageResponse& got, const v1::UsageResponse& want,
                      const std::string& what) {
  ASSERT_EQ(got.lines_size(), want.lines_size()) << what;
  for (int i = 0; i < want.lines_size(); ++i) {
    const v1::UsageLine& g = got.lines(i);
    const v1::UsageLine& w = want.lines(i);
    SCOPED_TRACE(what + " line " + w.key());
    EXPECT_EQ(g.key(), w.key());
    EXPECT_NEAR(g.gpu_hours(), w.gpu_hours(), 1e-6 * (1 + w.gpu_hours()));
    EXPECT_NEAR(g.lost_gpu_hours(), w.lost_gpu_hours(), 1e-6 * (1 + w.lost_gpu_hours()));
    EXPECT_EQ(g.succeeded(), w.succeeded());
    EXPECT_EQ(g.failed(), w.failed());
    EXPECT_EQ(g.cancelled(), w.cancelled());
    EXPECT_EQ(g.evictions(), w.evictions());
    EXPECT_EQ(g.waits(), w.waits());
    EXPECT_EQ(g.wait_p50_seconds(), w.wait_p50_seconds());
    EXPECT_EQ(g.wait_p95_seconds(), w.wait_p95_seconds());
  }
}

// A random history on two nodes — jobs of two tenants in three classes that run, fail,
// get cancelled and get evicted by services, hours apart so that attempts span midnights,
// with coordinator restarts — then, for each day and for the whole range, by tenant, user
// and class: the coordinator's rollup equals the sum over the job records.
TEST(UsageRollup, EqualsABruteForceSumOverJobRecordsAcrossDaysAndRestarts) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    Harness h;
    h.clock().SetMs(20'000 * kDay + 20 * kHour);
    const int64_t start = h.clock().NowMs();
    auto connect = [&] {
      h.Connect("n1", 4);
      h.Connect("n2", 4);
    };
    connect();
    // The agents: each launch runs; each stop (kill, preempt) ends it.
    auto agents = [&] {
      for (const char* node : {"n1", "n2"}) {
        for (const auto& cmd : h.Commands(node)) {
          if (cmd.has_launch()) {
            h.Report(node, Report(cmd.launch().job_id(), cmd.launch().attempt(),
                                  v1::AttemptReport::PHASE_RUNNING));
          } else if (cmd.has_kill() || cmd.has_preempt()) {
            const uint64_t job = cmd.has_kill() ? cmd.kill().job_id() : cmd.preempt().job_id();
            const uint32_t attempt =
                cmd.has_kill() ? cmd.kill().attempt() : cmd.preempt().attempt();
            h.Report(node, Report(job, attempt, v1::AttemptReport::PHASE_EXITED));
          }
        }
      }
    };
    std::vector<uint64_t> ids;
    const std::vector<std::string> classes = {"experiment", "training", "inference"};
    for (int step = 0; step < 120; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 4) {
        v1::JobSpec spec = Spec(1, 1 + rng() % 4);
        spec.set_priority_class(classes[rng() % 3]);
        if (spec.priority_class() == "inference") spec.set_gpus_per_node(1);
        spec.set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
        spec.set_max_restarts(1);
        const bool alice = rng() % 2 == 0;
        auto id = h.Submit(spec, alice ? Alice() : Bob());
        ASSERT_TRUE(id.ok()) << id.status();
        ids.push_back(*id);
      } else if (op < 6 && !ids.empty()) {
        // A running job's ranks exit, with success or not.
        const uint64_t id = ids[rng() % ids.size()];
        v1::Job job = h.Get(id);
        if (job.state() == v1::JOB_STATE_RUNNING) {
          const auto& a = *job.attempts().rbegin();
          h.Report(a.placement(0).node(),
                   Report(id, a.number(), v1::AttemptReport::PHASE_EXITED, rng() % 3 == 0 ? 1 : 0));
        }
      } else if (op == 6 && !ids.empty()) {
        const uint64_t id = ids[rng() % ids.size()];
        (void)h.Cancel(id, h.Get(id).user() == "alice" ? Alice() : Bob());
      } else if (op < 9) {
        h.clock().AdvanceMs(static_cast<int64_t>(rng() % (9 * kHour)));
        h.Tick();
      } else {
        h.Restart();
        connect();
      }
      h.Schedule();
      agents();
      h.Tick();
      agents();
    }
    h.jm().Flush();

    // The brute force: every record charged from scratch.
    usage::Rollup brute;
    int attempts = 0, evicted = 0;
    for (const v1::Job& job : AllJobs(h.jm())) {
      brute.Charge(job, {});
      attempts += job.attempts_size();
      for (const auto& a : job.attempts()) evicted += a.eviction().empty() ? 0 : 1;
    }
    EXPECT_GT(attempts, 20) << "the history ran jobs";
    EXPECT_GT(evicted, 0) << "the history evicted some";
    const int64_t end = h.clock().NowMs() + kDay;
    EXPECT_GT(usage::DayOf(end) - usage::DayOf(start), 3) << "the history spans days";
    for (v1::UsageGroup by :
         {v1::USAGE_GROUP_TENANT, v1::USAGE_GROUP_USER, v1::USAGE_GROUP_CLASS}) {
      auto report = [&](int64_t first_day, int64_t last_day) {
        usage::Report want(by, {});
        for (const auto& [key, cells] : brute.days()) {
          if (key.first >= first_day && key.first <= last_day) {
            want.Add(key.second, usage::ToRecord(cells));
          }
        }
        v1::UsageRequest req;
        req.set_by(by);
        req.set_since_ms(first_day * kDay);
        req.set_until_ms((last_day + 1) * kDay);
        auto got = h.jm().Usage(Admin(), req);
        EXPECT_TRUE(got.ok()) << got.status();
        ExpectSameReport(got.ok() ? *got : v1::UsageResponse(), want.Finish(),
                         v1::UsageGroup_Name(by) + " days " + std::to_string(first_day) + ".." +
                             std::to_string(last_day));
      };
      report(usage::DayOf(start), usage::DayOf(end));
      for (int64_t d = usage::DayOf(start); d <= usage::DayOf(end); ++d) report(d, d);
    }
  }
}

// Members read their own tenants' usage; another tenant's is refused, and "every tenant"
// means theirs. Admins read all.
TEST(UsageAccess, AMemberReadsOnlyItsOwnTenants) {
  Harness h;
  h.Connect("n1", 4);
  for (const Caller& who : {Alice(), Bob()}) {
    auto id = h.Submit(Spec(1, 1), who);
    ASSERT_TRUE(id.ok());
    ASSERT_EQ(h.Cancel(*id, who).value(), v1::JOB_STATE_CANCELLED);
  }
  v1::UsageRequest req;
  req.set_since_ms(h.clock().NowMs() - kDay);
  req.set_tenant("speech");
  auto refused = h.jm().Usage(Alice(), req);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(refused.status().message().find("'speech'"), std::string::npos);
  req.clear_tenant();
  auto own = h.jm().Usage(Alice(), req);
  ASSERT_TRUE(own.ok()) << own.status();
  ASSERT_EQ(own->lines_size(), 1);
  EXPECT_EQ(own->lines(0).key(), "vision");
  EXPECT_EQ(own->lines(0).cancelled(), 1u);
  req.set_by(v1::USAGE_GROUP_USER);
  own = h.jm().Usage(Alice(), req);
  ASSERT_EQ(own->lines_size(), 1);
  EXPECT_EQ(own->lines(0).key(), "alice") << "bob's usage is speech's";
  req.set_by(v1::USAGE_GROUP_TENANT);
  auto all = h.jm().Usage(Admin(), req);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->lines_size(), 2);
  req.set_until_ms(req.since_ms());
  EXPECT_EQ(h.jm().Usage(Admin(), req).status().code(), absl::StatusCode::kInvalidArgument);
}

// The rollup's days past --usage-retention go; the job records' retention is another.
TEST(UsageRollup, DaysPastTheUsageRetentionAreDeleted) {
  JobManagerOptions o = TestOptions();
  o.usage_retention = absl::Hours(24 * 10);
  o.retention = absl::ZeroDuration();
  Harness h(o);
  auto id = h.Submit(Spec(1, 1));
  ASSERT_EQ(h.Cancel(*id).value(), v1::JOB_STATE_CANCELLED);
  v1::UsageRequest req;
  req.set_since_ms(h.clock().NowMs() - 30 * kDay);
  req.set_until_ms(h.clock().NowMs() + 30 * kDay);
  h.clock().AdvanceMs(10 * kDay);
  h.Tick();
  EXPECT_EQ(h.jm().Usage(Admin(), req)->lines_size(), 1) << "day 10 still kept";
  h.clock().AdvanceMs(2 * kDay);
  h.Tick();
  EXPECT_EQ(h.jm().Usage(Admin(), req)->lines_size(), 0);
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_CANCELLED) << "the job record has its own retention";
}

// History: finished jobs newest end first, filtered by user, tenant and state from the
// ended index, paged.
TEST(History, FiltersAndPagesNewestFirst) {
  Harness h;
  std::vector<uint64_t> alices;
  for (int i = 0; i < 7; ++i) {
    const bool alice = i % 2 == 0;
    auto id = h.Submit(Spec(1, 1), alice ? Alice() : Bob());
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(h.Cancel(*id, alice ? Alice() : Bob()).ok());
    if (alice) alices.insert(alices.begin(), *id);
    h.clock().AdvanceMs(1000);
  }
  auto running = h.Submit(Spec(1, 1), Alice());
  ASSERT_TRUE(running.ok());
  v1::HistoryRequest req;
  req.set_user("alice");
  req.set_limit(3);
  std::vector<uint64_t> seen;
  for (int page = 0; page < 5; ++page) {
    auto got = h.jm().History(Bob(), req);
    ASSERT_TRUE(got.ok()) << got.status();
    for (const auto& j : got->jobs()) seen.push_back(j.id());
    if (got->next_page_token().empty()) break;
    req.set_page_token(got->next_page_token());
  }
  EXPECT_EQ(seen, alices) << "alice's finished jobs, newest first, across pages";
  req.clear_page_token();
  req.clear_user();
  req.set_tenant("speech");
  req.set_limit(0);
  EXPECT_EQ(h.jm().History(Alice(), req)->jobs_size(), 3);
  req.add_states(v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(h.jm().History(Alice(), req)->jobs_size(), 0);
  req.clear_states();
  req.add_states(v1::JOB_STATE_RUNNING);
  EXPECT_EQ(h.jm().History(Alice(), req).status().code(), absl::StatusCode::kInvalidArgument);
  req.clear_states();
  req.set_page_token("../../etc");
  EXPECT_EQ(h.jm().History(Alice(), req).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace baton::testing
