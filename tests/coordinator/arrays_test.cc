// Job arrays (issue 49): the arithmetic and refusals from tables; then the JobManager — a
// 64-task array with %8 never has more than 8 tasks unfinished, runs every index once with
// its own %a checkpoint dir and BATON_ARRAY_* values, waits as one record until its tasks
// may start; cancel of one task leaves the others, cancel of the array ends them all; an
// array survives a restart; a 10,000-task array fits the default policy.
#include "coordinator/arrays.h"

#include <set>

#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;

v1::ArraySpec Range(uint32_t first, uint32_t last, std::optional<uint32_t> step = std::nullopt,
                    std::optional<uint32_t> max_running = std::nullopt) {
  v1::ArraySpec a;
  a.set_first(first);
  a.set_last(last);
  if (step) a.set_step(*step);
  if (max_running) a.set_max_running(*max_running);
  return a;
}

TEST(Arrays, ShapeIndexesAndPositions) {
  const v1::ArraySpec a = Range(4, 20, 4);
  EXPECT_EQ(arrays::TaskCount(a), 5u);  // 4 8 12 16 20
  EXPECT_EQ(arrays::IndexAt(a, 3), 16u);
  EXPECT_EQ(arrays::PositionOf(a, 12), 2u);
  EXPECT_EQ(arrays::PositionOf(a, 13), std::nullopt);
  EXPECT_EQ(arrays::PositionOf(a, 24), std::nullopt);
  EXPECT_EQ(arrays::PositionOf(a, 0), std::nullopt);
  EXPECT_EQ(arrays::TaskCount(Range(0, 63)), 64u);
  EXPECT_EQ(arrays::TaskCount(Range(0, 62, 2)), 32u);
  EXPECT_EQ(arrays::TaskJobId(17, 5), 23u);
  v1::JobArray rec;
  rec.set_id(17);
  *rec.mutable_spec()->mutable_array() = Range(0, 63, std::nullopt, 8);
  EXPECT_EQ(arrays::Label(rec), "17_[0-63%8]");
  *rec.mutable_spec()->mutable_array() = Range(5, 5);
  EXPECT_EQ(arrays::Label(rec), "17_[5]");
}

TEST(Arrays, BadShapesAreRefusedNamingTheProblem) {
  struct Row {
    v1::ArraySpec a;
    const char* says;  // "" : valid
  } rows[] = {
      {Range(0, 63), ""},
      {Range(7, 7), ""},
      {Range(0, 9'999), ""},
      {Range(63, 0), "the range 63-0 is reversed"},
      {Range(0, 63, 0), "step 0"},
      {Range(0, 63, std::nullopt, 0), "%0 would never run a task"},
      {Range(0, 10'000), "10001 tasks; at most 10000 (admission.max_array_tasks)"},
      {Range(0, 4'000'000'000u, 2), "tasks; at most 10000"},
  };
  for (const Row& row : rows) {
    absl::Status s = arrays::CheckSpec(row.a, 10'000);
    if (std::string(row.says).empty()) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(std::string(s.message()).find(row.says), std::string::npos) << s;
    }
  }
}

TEST(Arrays, SubstitutionOfTheArrayAndTheIndex) {
  EXPECT_EQ(arrays::Substitute("/ckpt/%A/%a", 17, 5), "/ckpt/17/5");
  EXPECT_EQ(arrays::Substitute("lr-%a%%", 17, 5), "lr-5%");
  EXPECT_EQ(arrays::Substitute("%x%", 17, 5), "%x%") << "other escapes stay as written";
  v1::JobSpec s;
  s.set_name("sweep-%a");
  s.set_working_dir("/w/%A");
  s.set_checkpoint_dir("/c/%A_%a");
  s.add_command("train.py");
  s.add_command("--lr-index=%a");  // argv is the job's own: not substituted
  *s.mutable_array() = Range(0, 3);
  v1::JobSpec t = arrays::TaskSpec(s, 17, 2);
  EXPECT_EQ(t.name(), "sweep-2");
  EXPECT_EQ(t.working_dir(), "/w/17");
  EXPECT_EQ(t.checkpoint_dir(), "/c/17_2");
  EXPECT_EQ(t.command(1), "--lr-index=%a");
  EXPECT_FALSE(t.has_array());
}

TEST(Arrays, HowManyTasksBecomeJobs) {
  v1::JobArray rec;
  rec.set_tasks(64);
  *rec.mutable_spec()->mutable_array() = Range(0, 63, std::nullopt, 8);
  EXPECT_EQ(arrays::ToMake(rec, 0, 0, 0).make, 8u);
  EXPECT_EQ(arrays::ToMake(rec, 5, 2, 0).make, 3u) << "up to 8 unfinished";
  EXPECT_EQ(arrays::ToMake(rec, 8, 0, 0).make, 0u);
  rec.set_made(62);
  EXPECT_EQ(arrays::ToMake(rec, 0, 0, 0).make, 2u) << "only what is left";
  rec.set_made(0);
  rec.mutable_spec()->add_after()->set_job(3);
  EXPECT_EQ(arrays::ToMake(rec, 0, 0, 0).make, 0u) << "its dependency is not met";
  rec.add_after_met(0);
  EXPECT_EQ(arrays::ToMake(rec, 0, 0, 0).make, 8u) << "met";
  rec.mutable_hold()->set_by("alice");
  EXPECT_EQ(arrays::ToMake(rec, 0, 0, 0).make, 0u) << "a held array makes none";
  rec.clear_hold();
  rec.set_cancelled_by("alice");
  EXPECT_EQ(arrays::ToMake(rec, 0, 0, 0).make, 0u) << "a cancelled array makes no more";
  v1::JobArray open;
  open.set_tasks(10'000);
  *open.mutable_spec()->mutable_array() = Range(0, 9'999);
  struct Step {
    uint32_t unfinished, waiting, last, make, batch;
  } steps[] = {
      {0, 0, 0, arrays::kFirstBatch, arrays::kFirstBatch},  // first: a small batch
      {16, 0, 16, 32, 32},                                  // all of them started: twice as many
      {48, 0, 128, 256, 256},                               // up to the largest batch
      {304, 0, 256, 256, 256},                              // and no more
      {500, 3, 256, 0, 0},     // some wait: the cluster is full for them
      {500, 0, 0, 16, 16},     // room again: small first
      {5'000, 0, 16, 32, 32},  // running tasks do not count, only waiting ones
  };
  for (const Step& s : steps) {
    arrays::MakePlan plan = arrays::ToMake(open, s.unfinished, s.waiting, s.last);
    EXPECT_EQ(plan.make, s.make) << s.unfinished << " " << s.waiting << " " << s.last;
    EXPECT_EQ(plan.batch, s.batch) << s.unfinished << " " << s.waiting << " " << s.last;
  }
  open.add_skipped(0);
  open.add_skipped(1);
  EXPECT_EQ(arrays::NextPosition(open), 2u);
  open.set_made(1);
  EXPECT_EQ(arrays::Unmade(open), 9'998u) << "positions 1.. less the skipped 1";
}

v1::JobSpec ArraySpec(v1::ArraySpec a, uint32_t gpus = 1) {
  v1::JobSpec s = Spec(1, gpus);
  s.set_name("sweep-%a");
  s.set_checkpoint_dir("/shared/ckpt/%A/%a");
  *s.mutable_array() = std::move(a);
  return s;
}

absl::StatusOr<v1::JobArray> GetArray(Harness& h, uint64_t id, const Caller& who = Alice()) {
  return h.jm().GetArray(who, id);
}

TEST(Arrays, AThrottledArrayRunsEveryIndexOnceNeverMoreThanItsLimitAtOnce) {
  Harness h;
  for (int i = 0; i < 4; ++i) h.Connect("n" + std::to_string(i), 8);  // room for 32 tasks
  auto id = h.Submit(ArraySpec(Range(0, 63, std::nullopt, 8)));
  ASSERT_TRUE(id.ok()) << id.status();
  std::map<uint32_t, int> seen;  // index -> launches
  std::set<std::string> dirs;
  size_t most = 0;
  for (int pass = 0; pass < 200 && seen.size() < 64; ++pass) {
    h.Schedule();
    std::vector<std::pair<std::string, v1::Launch>> started;
    for (int i = 0; i < 4; ++i) {
      const std::string node = "n" + std::to_string(i);
      for (const v1::Launch& l : Launches(h.Commands(node))) started.emplace_back(node, l);
    }
    auto arr = GetArray(h, *id);
    ASSERT_TRUE(arr.ok());
    size_t unfinished = 0;
    for (const auto& [state, n] : arr->unfinished()) unfinished += state == "pending" ? 0 : n;
    most = std::max(most, unfinished);
    for (const auto& [node, l] : started) {
      EXPECT_EQ(l.array().array_id(), *id);
      EXPECT_EQ(l.array().count(), 64u);
      EXPECT_EQ(l.array().max(), 63u);
      EXPECT_EQ(l.job_id(), arrays::TaskJobId(*id, l.array().index()));
      EXPECT_EQ(l.spec().name(), "sweep-" + std::to_string(l.array().index()));
      ++seen[l.array().index()];
      dirs.insert(l.spec().checkpoint_dir());
    }
    for (const auto& [node, l] : started) {  // each ends right after it started
      h.Report(node, Report(l.job_id(), 1, Phase::PHASE_RUNNING));
      h.Report(node, Report(l.job_id(), 1, Phase::PHASE_EXITED));
    }
  }
  EXPECT_EQ(seen.size(), 64u);
  for (const auto& [index, n] : seen) EXPECT_EQ(n, 1) << "task " << index;
  EXPECT_EQ(dirs.size(), 64u) << "%a makes each task's checkpoint dir its own";
  EXPECT_LE(most, 8u) << "%8";
  EXPECT_EQ(most, 8u) << "and it does run 8 at once when there is room";
  auto done = GetArray(h, *id);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->succeeded(), 64u);
  EXPECT_NE(done->finished_ms(), 0);
}

TEST(Arrays, ItWaitsAsOneRecordAndCancelEndsOneTaskOrAll) {
  Harness h;
  h.Connect("n1", 2);
  auto id = h.Submit(ArraySpec(Range(0, 9'999)));
  ASSERT_TRUE(id.ok()) << id.status() << " (10,000 tasks fit the default policy)";
  h.Schedule();
  EXPECT_EQ(Launches(h.Commands("n1")).size(), 2u);
  auto arr = GetArray(h, *id);
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->made(), arrays::kFirstBatch) << "a batch of tasks, not 10,000 jobs";
  EXPECT_EQ(arr->unfinished().at("scheduled"), 2u);
  EXPECT_EQ(arr->unfinished().at("pending"), 9'998u);
  h.Schedule();
  EXPECT_EQ(GetArray(h, *id)->made(), arrays::kFirstBatch) << "none more while some wait";

  // A task far down the array is not a job yet, but is shown as one and can be cancelled.
  const uint64_t far = arrays::TaskJobId(*id, 5'000);
  v1::Job unmade = h.Get(far);
  EXPECT_EQ(unmade.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(unmade.array_index(), 5'000u);
  EXPECT_EQ(unmade.spec().name(), "sweep-5000");
  ASSERT_EQ(h.Cancel(far).status().code(), absl::StatusCode::kOk);
  EXPECT_EQ(h.State(far), v1::JOB_STATE_CANCELLED);
  // One that is a job (waiting) is cancelled as any job; its neighbours stay.
  const uint64_t near = arrays::TaskJobId(*id, 3);
  ASSERT_LT(3u, arrays::kFirstBatch);
  ASSERT_TRUE(h.Cancel(near).ok());
  EXPECT_EQ(h.State(near), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(h.State(arrays::TaskJobId(*id, 4)), v1::JOB_STATE_PENDING);
  arr = GetArray(h, *id);
  EXPECT_EQ(arr->cancelled(), 2u);
  EXPECT_EQ(h.Cancel(*id, Bob()).status().code(), absl::StatusCode::kPermissionDenied)
      << "another tenant's array";

  // The whole array: the running tasks are stopped, the rest never start.
  ASSERT_TRUE(h.Cancel(*id).ok());
  arr = GetArray(h, *id);
  EXPECT_EQ(arr->cancelled_by(), "alice");
  EXPECT_EQ(h.State(arrays::TaskJobId(*id, 9'999)), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(h.State(arrays::TaskJobId(*id, 4)), v1::JOB_STATE_CANCELLED);
  bool stopped = false;
  for (const auto& c : h.Commands("n1")) stopped |= c.has_kill();
  EXPECT_TRUE(stopped) << "the scheduled tasks are told to stop";
  h.Report("n1", Report(arrays::TaskJobId(*id, 0), 1, Phase::PHASE_EXITED, 143));
  h.Report("n1", Report(arrays::TaskJobId(*id, 1), 1, Phase::PHASE_EXITED, 143));
  arr = GetArray(h, *id);
  EXPECT_EQ(arr->cancelled(), 10'000u);
  EXPECT_NE(arr->finished_ms(), 0);
  h.Schedule();
  EXPECT_TRUE(Launches(h.Commands("n1")).empty());
}

// An array with dependencies (sbatch --array --dependency) waits as a whole: no task is
// made until every dependency is met, its line says what it waits for, and the wait
// survives a restart; one never met cancels the array and every task, and whatever waits
// for the whole array in turn.
TEST(Arrays, AnArrayWithDependenciesWaitsWholeThenRunsOrEndsCancelled) {
  Harness h;  // no node yet: everything waits
  auto prep = h.Submit(Spec(1, 1));
  auto bad = h.Submit(Spec(1, 1));
  ASSERT_TRUE(prep.ok() && bad.ok());
  v1::JobSpec sweep = ArraySpec(Range(0, 3));
  *sweep.add_after() = Dependency(v1::DEPENDENCY_KIND_OK, *prep);
  auto id = h.Submit(sweep);
  ASSERT_TRUE(id.ok()) << id.status();
  v1::JobSpec doomed = ArraySpec(Range(0, 3));
  *doomed.add_after() = Dependency(v1::DEPENDENCY_KIND_OK, *bad);
  auto doomed_id = h.Submit(doomed);
  ASSERT_TRUE(doomed_id.ok()) << doomed_id.status();
  v1::JobSpec after_doomed = Spec(1, 1);
  *after_doomed.add_after() = Dependency(v1::DEPENDENCY_KIND_OK, *doomed_id);  // the whole array
  auto tail = h.Submit(after_doomed);
  ASSERT_TRUE(tail.ok()) << tail.status();
  for (int pass = 0; pass < 3; ++pass) h.Schedule();
  auto arr = GetArray(h, *id);
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->made(), 0u) << "no task before its dependency is met";
  EXPECT_EQ(arr->unfinished().at("pending"), 4u);
  EXPECT_NE(arr->message().find("waiting for job " + std::to_string(*prep) + " to succeed"),
            std::string::npos)
      << arr->message();
  EXPECT_NE(h.Get(arrays::TaskJobId(*id, 2)).message().find("the array is waiting for job"),
            std::string::npos);

  h.Restart();  // still waiting, from the store
  h.Connect("n1", 4);
  h.Schedule();
  std::set<uint64_t> launched;
  for (const v1::Launch& l : Launches(h.Commands("n1"))) launched.insert(l.job_id());
  EXPECT_EQ(launched, (std::set<uint64_t>{*prep, *bad})) << "the arrays still wait";
  EXPECT_EQ(GetArray(h, *id)->made(), 0u);
  for (uint64_t job : {*prep, *bad}) h.Report("n1", Report(job, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(*prep, 1, Phase::PHASE_EXITED, 0));
  h.Report("n1", Report(*bad, 1, Phase::PHASE_EXITED, 3));
  arr = GetArray(h, *id);
  EXPECT_EQ(arr->after_met_size(), 1);
  EXPECT_EQ(arr->message(), "");
  h.Schedule();
  std::set<uint32_t> indexes;
  for (const v1::Launch& l : Launches(h.Commands("n1"))) {
    indexes.insert(l.array().index());
    EXPECT_EQ(l.spec().after_size(), 0) << "the tasks do not wait again";
  }
  EXPECT_EQ(indexes, (std::set<uint32_t>{0, 1, 2, 3})) << "every task once its prep succeeded";

  auto gone = GetArray(h, *doomed_id);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->cancelled_by(), "scheduler");
  EXPECT_EQ(gone->cancelled(), 4u);
  EXPECT_NE(gone->finished_ms(), 0);
  EXPECT_NE(gone->message().find("dependency never satisfied"), std::string::npos)
      << gone->message();
  EXPECT_EQ(h.State(arrays::TaskJobId(*doomed_id, 1)), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(h.State(*tail), v1::JOB_STATE_CANCELLED) << "the cascade reaches what waits for it";
  EXPECT_NE(h.Get(*tail).message().find("dependency never satisfied"), std::string::npos);
  h.Restart();
  EXPECT_EQ(GetArray(h, *doomed_id)->cancelled_by(), "scheduler") << "stored";
  EXPECT_EQ(GetArray(h, *id)->after_met_size(), 1);
}

TEST(Arrays, AnEmptyClusterFillsInAFewPassesAndAFullOneHoldsFewJobs) {
  Harness h;
  for (int i = 0; i < 4; ++i) {  // 256 GPUs, 512 cores
    const std::string node = "n" + std::to_string(i);
    h.Connect(node, 64, Registration(node, 64, 128));
  }
  auto id = h.Submit(ArraySpec(Range(0, 999)));
  ASSERT_TRUE(id.ok());
  size_t started = 0;
  int passes = 0;
  while (started < 256 && passes < 10) {
    h.Schedule();
    ++passes;
    for (int i = 0; i < 4; ++i) started += Launches(h.Commands("n" + std::to_string(i))).size();
  }
  EXPECT_EQ(started, 256u);
  EXPECT_LE(passes, 6) << "16, 32, 64, 128, then the rest";
  for (int i = 0; i < 5; ++i) h.Schedule();
  auto arr = GetArray(h, *id);
  ASSERT_TRUE(arr.ok());
  EXPECT_LE(arr->made() - 256, arrays::kMaxBatch) << "the full cluster stops the batches";
}

TEST(Arrays, AnArrayCarriesOnAcrossRestarts) {
  Harness h;
  h.Connect("n1", 1);
  auto id = h.Submit(ArraySpec(Range(10, 14, std::nullopt, 1)));
  ASSERT_TRUE(id.ok());
  h.Restart();  // the record alone: no task is a job yet
  h.Connect("n1", 1);
  std::vector<uint32_t> order;
  for (int pass = 0; pass < 10 && order.size() < 5; ++pass) {
    h.Schedule();
    for (const v1::Launch& l : Launches(h.Commands("n1"))) {
      order.push_back(l.array().index());
      h.Report("n1", Report(l.job_id(), 1, Phase::PHASE_RUNNING));
      h.Report("n1", Report(l.job_id(), 1, Phase::PHASE_EXITED, l.array().index() == 12 ? 1 : 0));
    }
    h.Restart();  // between every two tasks
    h.Connect("n1", 1);
  }
  EXPECT_EQ(order, (std::vector<uint32_t>{10, 11, 12, 13, 14})) << "each once, in order";
  auto arr = GetArray(h, *id);
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->succeeded(), 4u);
  EXPECT_EQ(arr->failed(), 1u);
  EXPECT_NE(arr->finished_ms(), 0);
}

TEST(Arrays, AnEndedArraysRecordGoesAfterTheRetentionAndStaysGoneAfterARestart) {
  JobManagerOptions options = TestOptions();
  options.retention = absl::Hours(1);
  Harness h(options);
  h.Connect("n1", 1);
  auto id = h.Submit(ArraySpec(Range(0, 1)));
  auto open = h.Submit(ArraySpec(Range(0, 1)));
  ASSERT_TRUE(id.ok() && open.ok());
  ASSERT_TRUE(h.Cancel(*id).ok());
  ASSERT_NE(GetArray(h, *id)->finished_ms(), 0);
  h.clock().Advance(absl::Minutes(59));
  h.Tick();
  EXPECT_TRUE(GetArray(h, *id).ok()) << "within the retention";
  h.clock().Advance(absl::Minutes(2));
  h.Tick();
  EXPECT_EQ(GetArray(h, *id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(GetArray(h, *open).ok()) << "an array that has not ended stays";
  h.Restart();
  EXPECT_EQ(GetArray(h, *id).status().code(), absl::StatusCode::kNotFound) << "deleted in store";
  EXPECT_TRUE(GetArray(h, *open).ok());
}

TEST(Arrays, RefusedWithTheFieldNamed) {
  Harness h;
  h.Connect("n1", 1);
  struct Case {
    v1::JobSpec spec;
    absl::StatusCode code;
    const char* says;
  };
  v1::JobSpec long_name = ArraySpec(Range(0, 9));
  long_name.set_name(std::string(60, 'x') + "-%A-%a");
  v1::JobSpec with_after = ArraySpec(Range(0, 9));
  with_after.add_after()->set_job(1);
  with_after.mutable_after(0)->set_kind(v1::DEPENDENCY_KIND_OK);
  std::vector<Case> cases = {
      {ArraySpec(Range(9, 0)), absl::StatusCode::kInvalidArgument, "reversed"},
      {ArraySpec(Range(0, 9, 0)), absl::StatusCode::kInvalidArgument, "step 0"},
      {ArraySpec(Range(0, 9, std::nullopt, 0)), absl::StatusCode::kInvalidArgument, "%0"},
      {ArraySpec(Range(0, 10'000)), absl::StatusCode::kInvalidArgument, "max_array_tasks"},
      {long_name, absl::StatusCode::kInvalidArgument, "name"},
      {with_after, absl::StatusCode::kNotFound, "after ok:1"},
  };
  for (const Case& c : cases) {
    auto id = h.Submit(c.spec);
    EXPECT_EQ(id.status().code(), c.code) << c.says << ": " << id.status();
    EXPECT_NE(id.status().message().find(c.says), std::string::npos) << id.status();
  }
  // A tenant's arrays together: at most max_array_tasks_per_tenant tasks not yet ended,
  // whether still to be made or jobs already (all of the first array's are).
  auto made = h.Submit(ArraySpec(Range(0, 9)));
  ASSERT_TRUE(made.ok());
  h.Schedule();
  ASSERT_EQ(GetArray(h, *made)->made(), 10u);
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(h.Submit(ArraySpec(Range(0, 9'999))).ok()) << i;
  ASSERT_TRUE(h.Submit(ArraySpec(Range(0, 9'989))).ok()) << "exactly at the bound";
  auto over = h.Submit(ArraySpec(Range(0, 0)));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  EXPECT_NE(over.status().message().find("max_array_tasks_per_tenant"), std::string::npos);
}

}  // namespace
}  // namespace baton::testing
