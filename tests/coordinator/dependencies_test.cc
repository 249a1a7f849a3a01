// Dependencies between jobs (issue 49): what each end means for each kind, from tables;
// then the JobManager — a chain prep -> train(ok:prep) -> eval(ok:train) that runs in
// order, and that ends CANCELLED "dependency never satisfied" down the chain when prep
// fails; any and notok; refusals at submit (a missing job, a service, a bad entry); a
// dependency met or broken before the submit; waiting across a restart.
#include "coordinator/dependencies.h"

#include "coordinator/arrays.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;
using deps::Verdict;

TEST(Dependencies, WhatEachEndMeansForEachKind) {
  struct Row {
    v1::JobState state;
    Verdict ok, any, notok;
  } rows[] = {
      {v1::JOB_STATE_PENDING, Verdict::kWaiting, Verdict::kWaiting, Verdict::kWaiting},
      {v1::JOB_STATE_RUNNING, Verdict::kWaiting, Verdict::kWaiting, Verdict::kWaiting},
      {v1::JOB_STATE_COOLDOWN, Verdict::kWaiting, Verdict::kWaiting, Verdict::kWaiting},
      {v1::JOB_STATE_PREEMPTING, Verdict::kWaiting, Verdict::kWaiting, Verdict::kWaiting},
      {v1::JOB_STATE_SUCCEEDED, Verdict::kMet, Verdict::kMet, Verdict::kNever},
      {v1::JOB_STATE_FAILED, Verdict::kNever, Verdict::kMet, Verdict::kMet},
      {v1::JOB_STATE_CANCELLED, Verdict::kNever, Verdict::kMet, Verdict::kMet},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(v1::JobState_Name(row.state));
    EXPECT_EQ(deps::Judge(v1::DEPENDENCY_KIND_OK, row.state), row.ok);
    EXPECT_EQ(deps::Judge(v1::DEPENDENCY_KIND_ANY, row.state), row.any);
    EXPECT_EQ(deps::Judge(v1::DEPENDENCY_KIND_NOTOK, row.state), row.notok);
  }
}

TEST(Dependencies, TextsNameTheJobAndWhatIsAwaited) {
  EXPECT_EQ(deps::WaitText(Dependency(v1::DEPENDENCY_KIND_OK, 17), v1::JOB_STATE_RUNNING, 0),
            "waiting for job 17 to succeed (it is running)");
  EXPECT_EQ(deps::WaitText(Dependency(v1::DEPENDENCY_KIND_NOTOK, 19), v1::JOB_STATE_PENDING, 2),
            "waiting for job 19 to fail or be cancelled (it is pending); and 2 more");
  EXPECT_EQ(deps::NeverText(Dependency(v1::DEPENDENCY_KIND_OK, 17), v1::JOB_STATE_FAILED),
            "dependency never satisfied: job 17 failed (ok:17)");
  EXPECT_EQ(deps::NeverText(Dependency(v1::DEPENDENCY_KIND_OK, 17), v1::JOB_STATE_UNSPECIFIED),
            "dependency never satisfied: job 17 is no longer on record (ok:17)");
  EXPECT_EQ(deps::WaitText(Dependency(v1::DEPENDENCY_KIND_OK, 21), v1::JOB_STATE_UNSPECIFIED, 0,
                           /*array=*/true),
            "waiting for array 21 to succeed (as a whole, once every task has ended)");
  EXPECT_EQ(deps::MetText(Dependency(v1::DEPENDENCY_KIND_ANY, 18), v1::JOB_STATE_CANCELLED),
            "dependency any:18 met: job 18 cancelled");
}

TEST(Dependencies, BadEntriesAreRefusedNamingThem) {
  struct Row {
    std::vector<v1::JobDependency> after;
    const char* says;  // "" : valid
  } rows[] = {
      {{Dependency(v1::DEPENDENCY_KIND_OK, 1), Dependency(v1::DEPENDENCY_KIND_NOTOK, 2)}, ""},
      {{Dependency(v1::DEPENDENCY_KIND_OK, 1), Dependency(v1::DEPENDENCY_KIND_UNSPECIFIED, 2)},
       "after[1]: no kind (ok, any or notok)"},
      {{Dependency(static_cast<v1::DependencyKind>(9), 2)}, "after[0]: no kind"},
      {{Dependency(v1::DEPENDENCY_KIND_ANY, 0)}, "after[0]: no job id"},
      {std::vector<v1::JobDependency>(deps::kMaxDependencies + 1,
                                      Dependency(v1::DEPENDENCY_KIND_OK, 1)),
       "65 dependencies; at most 64"},
  };
  for (const Row& row : rows) {
    v1::JobSpec spec;
    for (const auto& d : row.after) *spec.add_after() = d;
    absl::Status s = deps::CheckSpec(spec);
    if (std::string(row.says).empty()) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(std::string(s.message()).find(row.says), std::string::npos) << s;
    }
  }
}

TEST(Dependencies, TheIndexGivesEachDependentOnceAndForgetsIt) {
  deps::DependentsIndex index;
  index.Add(17, 20);
  index.Add(17, 19);
  index.Add(17, 20);  // ok:17 and any:17
  index.Add(18, 20);
  EXPECT_TRUE(index.Waited(17));
  EXPECT_EQ(index.Take(17), (std::vector<uint64_t>{19, 20}));
  EXPECT_FALSE(index.Waited(17));
  EXPECT_TRUE(index.Take(17).empty());
  EXPECT_EQ(index.size(), 1u);
}

v1::JobSpec After(std::vector<v1::JobDependency> after) {
  v1::JobSpec s = Spec(1, 1);
  for (auto& d : after) *s.add_after() = d;
  return s;
}

// Runs the job now on n1 (the only thing the pass may launch) and ends it with `exit_code`.
void RunAndEnd(Harness& h, uint64_t id, int exit_code) {
  h.Schedule();
  auto launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u) << "job " << id << " should start now";
  ASSERT_EQ(launches[0].job_id(), id);
  h.Report("n1", Report(id, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(id, 1, Phase::PHASE_EXITED, exit_code));
}

std::vector<std::string> Codes(const v1::Job& job) {
  std::vector<std::string> out;
  for (const v1::Event& ev : job.events()) out.push_back(ev.code());
  return out;
}

TEST(Dependencies, AChainRunsInOrderEachAfterTheLastSucceeded) {
  Harness h;
  h.Connect("n1", 1);
  auto prep = h.Submit(Spec(1, 1));
  ASSERT_TRUE(prep.ok());
  auto train = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_OK, *prep)}));
  ASSERT_TRUE(train.ok()) << train.status();
  auto eval = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_OK, *train)}));
  ASSERT_TRUE(eval.ok()) << eval.status();

  RunAndEnd(h, *prep, 0);  // the pass may start only prep: the others wait
  EXPECT_EQ(h.Get(*train).after_met_size(), 1);
  h.Schedule();
  h.Schedule();  // a pass tells what it saw as it began: train scheduled by the last one
  // eval waits for train; the queue says so (the pass's reason is the job's message).
  EXPECT_EQ(h.Get(*eval).message(),
            "waiting for job " + std::to_string(*train) + " to succeed (it is scheduled)");
  h.Commands("n1");
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(*train, 1, Phase::PHASE_EXITED, 0));
  RunAndEnd(h, *eval, 0);
  EXPECT_EQ(h.State(*eval), v1::JOB_STATE_SUCCEEDED);
  const v1::Job done = h.Get(*eval);
  EXPECT_GE(done.attempts(0).scheduled_ms(), h.Get(*train).finished_ms());
  auto codes = Codes(done);
  EXPECT_NE(std::find(codes.begin(), codes.end(), "dependency_met"), codes.end());
}

TEST(Dependencies, AFailureCancelsTheChainBelowItButNotWhatRunsAnyway) {
  Harness h;
  h.Connect("n1", 1);
  auto prep = h.Submit(Spec(1, 1));
  ASSERT_TRUE(prep.ok());
  auto train = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_OK, *prep)}));
  auto eval = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_OK, *train)}));
  auto cleanup = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_ANY, *prep)}));
  auto alert = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_NOTOK, *train)}));
  ASSERT_TRUE(train.ok() && eval.ok() && cleanup.ok() && alert.ok());

  RunAndEnd(h, *prep, 3);
  ASSERT_EQ(h.State(*prep), v1::JOB_STATE_FAILED);
  // In the same commit as prep's end: train can never start, so eval neither.
  for (uint64_t id : {*train, *eval}) {
    const v1::Job job = h.Get(id);
    EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED) << id;
    EXPECT_NE(job.message().find("dependency never satisfied"), std::string::npos) << job.message();
    auto codes = Codes(job);
    EXPECT_NE(std::find(codes.begin(), codes.end(), "dependency_never_satisfied"), codes.end());
  }
  EXPECT_EQ(h.Get(*train).message(), "dependency never satisfied: job " + std::to_string(*prep) +
                                         " failed (ok:" + std::to_string(*prep) + ")");
  // any:prep runs anyway, and notok:train is met by train's cancellation.
  RunAndEnd(h, *cleanup, 0);
  RunAndEnd(h, *alert, 0);
}

TEST(Dependencies, RefusedAtSubmitMissingJobsServicesAndBadEntries) {
  Harness h;
  h.Connect("n1", 1);
  auto missing = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_OK, 999)}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "after ok:999: job 999 not found");
  v1::JobSpec svc = Spec(1, 1, {"serve"});
  svc.set_priority_class("inference");
  svc.set_restart_policy(v1::RESTART_POLICY_ALWAYS);
  auto service = h.Submit(svc);
  ASSERT_TRUE(service.ok()) << service.status();
  auto on_service = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_ANY, *service)}));
  EXPECT_EQ(on_service.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(on_service.status().message().find("is a service"), std::string::npos);
  auto no_kind = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_UNSPECIFIED, *service)}));
  EXPECT_EQ(no_kind.status().code(), absl::StatusCode::kInvalidArgument);
  // Nothing was made: the next id follows the service's.
  auto next = h.Submit(Spec(1, 1));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, *service + 1);
}

TEST(Dependencies, EndedBeforeTheSubmitMetAtOnceOrCancelledAtOnce) {
  Harness h;
  h.Connect("n1", 1);
  auto good = h.Submit(Spec(1, 1));
  ASSERT_TRUE(good.ok());
  RunAndEnd(h, *good, 0);
  auto bad = h.Submit(Spec(1, 1));
  ASSERT_TRUE(bad.ok());
  RunAndEnd(h, *bad, 1);
  auto runs = h.Submit(After(
      {Dependency(v1::DEPENDENCY_KIND_OK, *good), Dependency(v1::DEPENDENCY_KIND_NOTOK, *bad)}));
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(h.Get(*runs).after_met_size(), 2);
  RunAndEnd(h, *runs, 0);
  auto never = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_OK, *bad)}));
  ASSERT_TRUE(never.ok()) << "accepted, as with a dependency that fails later";
  const v1::Job cancelled = h.Get(*never);
  EXPECT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_NE(cancelled.message().find("dependency never satisfied"), std::string::npos);
}

TEST(Dependencies, ADependentWaitsAcrossRestartsAndIsSettledAfter) {
  Harness h;
  h.Connect("n1", 1);
  auto first = h.Submit(Spec(1, 1));
  auto second = h.Submit(Spec(1, 1));
  ASSERT_TRUE(first.ok() && second.ok());
  auto both = h.Submit(After(
      {Dependency(v1::DEPENDENCY_KIND_OK, *first), Dependency(v1::DEPENDENCY_KIND_OK, *second)}));
  ASSERT_TRUE(both.ok());
  RunAndEnd(h, *first, 0);
  h.Restart();
  h.Connect("n1", 1);
  EXPECT_EQ(h.Get(*both).after_met_size(), 1) << "met before the restart: stays met";
  RunAndEnd(h, *second, 0);  // both must not start: one dependency is still unmet
  h.Restart();
  h.Connect("n1", 1);
  RunAndEnd(h, *both, 0);
  EXPECT_EQ(h.State(*both), v1::JOB_STATE_SUCCEEDED);
}

TEST(Dependencies, OnATaskOfAnArrayOrOnTheWholeArray) {
  Harness h;
  h.Connect("n1", 1);
  v1::JobSpec array = Spec(1, 1);
  array.mutable_array()->set_first(0);
  array.mutable_array()->set_last(2);
  auto a = h.Submit(array);
  ASSERT_TRUE(a.ok()) << a.status();
  v1::JobDependency on_task = Dependency(v1::DEPENDENCY_KIND_OK, *a);
  on_task.set_task(1);
  auto after_task = h.Submit(After({on_task}));
  ASSERT_TRUE(after_task.ok()) << after_task.status();
  EXPECT_EQ(h.Get(*after_task).spec().after(0).job(), arrays::TaskJobId(*a, 1))
      << "stored as the task's job id";
  auto after_all = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_OK, *a)}));
  auto after_any = h.Submit(After({Dependency(v1::DEPENDENCY_KIND_ANY, *a)}));
  ASSERT_TRUE(after_all.ok() && after_any.ok());
  on_task.set_task(99);
  auto missing = h.Submit(After({on_task}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("has no task 99"), std::string::npos)
      << missing.status();

  h.Schedule();  // task 0 starts; the queue says what the others wait for
  EXPECT_EQ(h.Get(*after_all).message(), "waiting for array " + std::to_string(*a) +
                                             " to succeed (as a whole, once every task has "
                                             "ended)");
  h.Report("n1", Report(arrays::TaskJobId(*a, 0), 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(arrays::TaskJobId(*a, 0), 1, Phase::PHASE_EXITED));
  h.Commands("n1");
  RunAndEnd(h, arrays::TaskJobId(*a, 1), 0);
  EXPECT_EQ(h.Get(*after_task).after_met_size(), 1) << "task 1 succeeded";
  RunAndEnd(h, arrays::TaskJobId(*a, 2), 5);
  // The array has ended, one task failed: ok on it can never be met; any can.
  const v1::Job all = h.Get(*after_all);
  EXPECT_EQ(all.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(all.message(), "dependency never satisfied: job " + std::to_string(*a) +
                               " failed (ok:" + std::to_string(*a) + ")");
  EXPECT_EQ(h.Get(*after_any).after_met_size(), 1);
  RunAndEnd(h, *after_task, 0);
  h.Restart();  // settled dependencies stay settled
  h.Connect("n1", 1);
  RunAndEnd(h, *after_any, 0);
}

}  // namespace
}  // namespace baton::testing
