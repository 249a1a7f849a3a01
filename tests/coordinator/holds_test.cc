// Hold, release and requeue (issue 49): the pure decisions from tables, then the
// JobManager — a held job keeps its place in line but never starts, who may hold and
// release (an admin's hold only by an admin), submit --hold, the hold across a restart; a
// requeued job stops as a drain stops it and is back in line with nothing counted, across
// a restart too.
#include <csignal>

#include "coordinator/arrays.h"
#include "coordinator/job_state.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;

TEST(Holds, DecideHoldAndReleaseTable) {
  using C = absl::StatusCode;
  struct Row {
    v1::JobState state;
    bool held_by_admin;  // the job is already held, by an admin
    bool admin;          // the caller
    C hold, release;     // kOk: it does
  } rows[] = {
      {v1::JOB_STATE_PENDING, false, false, C::kOk, C::kFailedPrecondition},
      {v1::JOB_STATE_COOLDOWN, false, false, C::kOk, C::kFailedPrecondition},
      {v1::JOB_STATE_SCHEDULED, false, false, C::kFailedPrecondition, C::kFailedPrecondition},
      {v1::JOB_STATE_RUNNING, false, true, C::kFailedPrecondition, C::kFailedPrecondition},
      {v1::JOB_STATE_PREEMPTING, false, false, C::kFailedPrecondition, C::kFailedPrecondition},
      {v1::JOB_STATE_SUCCEEDED, false, true, C::kFailedPrecondition, C::kFailedPrecondition},
      {v1::JOB_STATE_CANCELLED, false, false, C::kFailedPrecondition, C::kFailedPrecondition},
      {v1::JOB_STATE_PENDING, true, false, C::kOk, C::kPermissionDenied},
      {v1::JOB_STATE_PENDING, true, true, C::kOk, C::kOk},
  };
  for (const Row& row : rows) {
    v1::Job job;
    job.set_id(7);
    job.set_state(row.state);
    if (row.held_by_admin) {
      job.mutable_hold()->set_by("root");
      job.mutable_hold()->set_by_admin(true);
    }
    SCOPED_TRACE(v1::JobState_Name(row.state) + (row.held_by_admin ? ", an admin's hold" : "") +
                 (row.admin ? ", asked by an admin" : ""));
    absl::StatusOr<v1::JobHold> hold = DecideHold(job, "alice", row.admin, "why", 5);
    EXPECT_EQ(hold.status().code(), row.hold) << hold.status();
    if (hold.ok()) {
      EXPECT_EQ(hold->by(), "alice");
      EXPECT_EQ(hold->by_admin(), row.admin || row.held_by_admin) << "an admin's hold stays one";
      EXPECT_EQ(hold->reason(), "why");
      EXPECT_EQ(hold->at_ms(), 5);
    }
    EXPECT_EQ(CheckRelease(job, row.admin).code(), row.release);
  }
  v1::JobHold h;
  h.set_by("root");
  h.set_by_admin(true);
  h.set_reason("dataset not there yet");
  EXPECT_EQ(HoldText(h),
            "held by admin root: dataset not there yet; baton release to let it start");
}

TEST(Holds, CheckRequeueTable) {
  using C = absl::StatusCode;
  struct Row {
    v1::JobState state;
    bool leaving, service, admin;
    C want;
  } rows[] = {
      {v1::JOB_STATE_RUNNING, false, false, false, C::kOk},
      {v1::JOB_STATE_SCHEDULED, false, false, false, C::kOk},
      {v1::JOB_STATE_RUNNING, true, false, true, C::kFailedPrecondition},
      {v1::JOB_STATE_PREEMPTING, true, false, true, C::kFailedPrecondition},
      {v1::JOB_STATE_PENDING, false, false, true, C::kFailedPrecondition},
      {v1::JOB_STATE_COOLDOWN, false, false, true, C::kFailedPrecondition},
      {v1::JOB_STATE_SUCCEEDED, false, false, true, C::kFailedPrecondition},
      {v1::JOB_STATE_RUNNING, false, true, false, C::kPermissionDenied},
      {v1::JOB_STATE_RUNNING, false, true, true, C::kOk},
  };
  for (const Row& row : rows) {
    v1::Job job;
    job.set_state(row.state);
    EXPECT_EQ(CheckRequeue(job, row.leaving, row.service, row.admin).code(), row.want)
        << v1::JobState_Name(row.state) << (row.leaving ? ", leaving" : "")
        << (row.service ? ", a service" : "") << (row.admin ? ", by an admin" : "");
  }
}

absl::StatusOr<v1::HoldResponse> Hold(Harness& h, uint64_t id, const Caller& who,
                                      const std::string& reason = "") {
  std::promise<absl::StatusOr<v1::HoldResponse>> p;
  h.jm().Hold(who, id, reason, [&](absl::StatusOr<v1::HoldResponse> s) { p.set_value(s); });
  return p.get_future().get();
}

absl::StatusOr<v1::ReleaseResponse> Release(Harness& h, uint64_t id, const Caller& who) {
  std::promise<absl::StatusOr<v1::ReleaseResponse>> p;
  h.jm().Release(who, id, [&](absl::StatusOr<v1::ReleaseResponse> s) { p.set_value(s); });
  return p.get_future().get();
}

TEST(Holds, AHeldJobKeepsItsPlaceButNeverStartsUntilReleased) {
  Harness h;
  h.Connect("n1", 1);
  auto first = h.Submit(Spec(1, 1));
  auto second = h.Submit(Spec(1, 1));
  ASSERT_TRUE(first.ok() && second.ok());
  auto hold = Hold(h, *first, Alice(), "waiting for the dataset");
  ASSERT_TRUE(hold.ok()) << hold.status();
  h.Schedule();
  auto launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].job_id(), *second) << "the job behind a held one runs";
  v1::Job held = h.Get(*first);
  EXPECT_EQ(held.state(), v1::JOB_STATE_PENDING) << "a flag, not a state";
  EXPECT_EQ(held.message(),
            "held by alice: waiting for the dataset; baton release to let it start");

  ASSERT_TRUE(Release(h, *first, Alice()).ok());
  EXPECT_FALSE(h.Get(*first).has_hold());
  h.Report("n1", Report(*second, 1, Phase::PHASE_EXITED));
  h.Schedule();
  launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].job_id(), *first);

  std::vector<std::string> codes;
  const v1::Job done = h.Get(*first);
  for (const v1::Event& ev : done.events()) codes.push_back(ev.code());
  EXPECT_NE(std::find(codes.begin(), codes.end(), "held"), codes.end());
  EXPECT_NE(std::find(codes.begin(), codes.end(), "released"), codes.end());
  EXPECT_EQ(std::count(codes.begin(), codes.end(), "held"), 1) << "the pass does not repeat it";
}

TEST(Holds, WhoMayHoldAndReleaseAndInWhichState) {
  Harness h;
  h.Connect("n1", 1);
  auto id = h.Submit(Spec(1, 1));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(Hold(h, *id, Bob()).status().code(), absl::StatusCode::kPermissionDenied)
      << "not a member of its tenant";
  EXPECT_EQ(Hold(h, 999, Alice()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Release(h, *id, Alice()).status().code(), absl::StatusCode::kFailedPrecondition)
      << "not held";

  auto by_admin = Hold(h, *id, Admin(), "maintenance");
  ASSERT_TRUE(by_admin.ok());
  EXPECT_TRUE(by_admin->hold().by_admin());
  auto again = Hold(h, *id, Alice(), "mine now?");
  ASSERT_TRUE(again.ok()) << "holding a held job replaces the reason";
  EXPECT_TRUE(again->hold().by_admin()) << "but an admin's hold stays an admin's";
  absl::Status denied = Release(h, *id, Alice()).status();
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(denied.message()).find("only an admin releases it"), std::string::npos);
  EXPECT_EQ(Release(h, *id, Bob()).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(Release(h, *id, Admin()).ok());

  h.Schedule();
  ASSERT_EQ(h.State(*id), v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(Hold(h, *id, Alice()).status().code(), absl::StatusCode::kFailedPrecondition)
      << "a started job is requeued or cancelled, not held";
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED));
  EXPECT_EQ(Hold(h, *id, Alice()).status().code(), absl::StatusCode::kFailedPrecondition)
      << "nor a finished one";
}

TEST(Holds, SubmitHeldWaitsAcrossARestartUntilReleased) {
  Harness h;
  h.Connect("n1", 1);
  std::promise<absl::StatusOr<uint64_t>> p;
  h.jm().Submit(Alice(), Spec(1, 1), "", /*hold=*/true,
                [&](absl::StatusOr<uint64_t> id) { p.set_value(id); });
  absl::StatusOr<uint64_t> id = p.get_future().get();
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(h.Get(*id).hold().by(), "alice");
  EXPECT_FALSE(h.Get(*id).hold().by_admin());

  h.Restart();
  h.Connect("n1", 1);
  h.Schedule();
  EXPECT_TRUE(Launches(h.Commands("n1")).empty()) << "still held after the restart";
  v1::Job job = h.Get(*id);
  ASSERT_TRUE(job.has_hold());
  EXPECT_EQ(job.hold().reason(), "held at submit");
  ASSERT_TRUE(Release(h, *id, Alice()).ok());
  h.Schedule();
  ASSERT_EQ(Launches(h.Commands("n1")).size(), 1u);
}

absl::StatusOr<v1::RequeueResponse> Requeue(Harness& h, uint64_t id, const Caller& who) {
  std::promise<absl::StatusOr<v1::RequeueResponse>> p;
  h.jm().Requeue(who, id, "new data",
                 [&](absl::StatusOr<v1::RequeueResponse> s) { p.set_value(s); });
  return p.get_future().get();
}

bool SentPreempt(const std::vector<v1::CoordinatorCommand>& cmds) {
  return std::any_of(cmds.begin(), cmds.end(),
                     [](const v1::CoordinatorCommand& c) { return c.has_preempt(); });
}

TEST(Holds, ARequeuedJobCheckpointsAndIsBackInLineWithNothingCounted) {
  for (bool restart : {false, true}) {
    SCOPED_TRACE(restart ? "the coordinator restarts while it stops" : "no restart");
    Harness h;
    h.Connect("n1", 1);
    auto id = h.Submit(Spec(1, 1, {"sleep", "100"}));
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(Requeue(h, *id, Alice()).status().code(), absl::StatusCode::kFailedPrecondition)
        << "not started yet";
    h.Schedule();
    h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
    h.Commands("n1");
    EXPECT_EQ(Requeue(h, *id, Bob()).status().code(), absl::StatusCode::kPermissionDenied);

    auto state = Requeue(h, *id, Alice());
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_EQ(state->state(), v1::JOB_STATE_PREEMPTING);
    EXPECT_FALSE(state->has_array());
    EXPECT_TRUE(SentPreempt(h.Commands("n1"))) << "stopped as a drain stops it: SIGUSR1, grace";
    EXPECT_EQ(Requeue(h, *id, Alice()).status().code(), absl::StatusCode::kFailedPrecondition)
        << "already stopping";
    if (restart) {
      h.Restart();
      h.Connect("n1", 1);
    }
    v1::AttemptReport done = Report(*id, 1, Phase::PHASE_EXITED);
    done.set_checkpoint_step(12);
    h.Report("n1", done);
    v1::Job job = h.Get(*id);
    EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING) << "back in line at once";
    EXPECT_EQ(job.evictions(), 0u);
    EXPECT_EQ(job.failures(), 0u);
    EXPECT_LE(job.cooldown_until_ms(), h.clock().NowMs()) << "no cooldown";
    EXPECT_EQ(job.attempts(0).requeued_by(), "alice");
    for (const v1::Event& ev : job.events()) {
      EXPECT_NE(ev.kind(), v1::EVENT_KIND_EVICTION) << "no eviction: " << ev.reason();
    }
    h.Schedule();
    auto launches = Launches(h.Commands("n1"));
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0].attempt(), 2u);
  }
}

TEST(Holds, OnlyAnAdminRequeuesAService) {
  Harness h;
  h.Connect("n1", 1);
  v1::JobSpec serve = Spec(1, 1, {"serve"});
  serve.set_priority_class("inference");
  auto id = h.Submit(serve);
  ASSERT_TRUE(id.ok()) << id.status();
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  EXPECT_EQ(Requeue(h, *id, Alice()).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(Requeue(h, *id, Admin()).ok());
}

// scontrol hold/release/requeue/signal on an array's id: they reach its tasks. A held
// array makes no task a job and its waiting tasks are held with it (a task not yet a job
// says so); release undoes both, but a member cannot release an admin's hold; requeue and
// signal reach the started and running tasks; submit --hold on an array holds it, across
// a restart too.
TEST(Holds, AWholeArrayIsHeldReleasedRequeuedAndSignalledByItsId) {
  Harness h;
  h.Connect("n1", 2);
  v1::JobSpec sweep = Spec(1, 1, {"train"});
  sweep.mutable_array()->set_last(39);  // 40 tasks: a first batch of 16 becomes jobs
  auto id = h.Submit(sweep);
  ASSERT_TRUE(id.ok()) << id.status();
  h.Schedule();
  const uint64_t t0 = arrays::TaskJobId(*id, 0), t1 = arrays::TaskJobId(*id, 1);
  const uint64_t waiting = arrays::TaskJobId(*id, 5), unmade = arrays::TaskJobId(*id, 30);
  ASSERT_EQ(Launches(h.Commands("n1")).size(), 2u);
  h.Report("n1", Report(t0, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(t1, 1, Phase::PHASE_RUNNING));
  EXPECT_EQ(Hold(h, waiting + 1000, Alice()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Hold(h, *id, Bob()).status().code(), absl::StatusCode::kPermissionDenied);

  auto held = Hold(h, *id, Alice(), "dataset v2 not there");
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_TRUE(held->has_array());
  EXPECT_EQ(held->array().tasks(), 38u) << "14 waiting jobs and the 24 not yet jobs";
  EXPECT_EQ(held->hold().by(), "alice");
  auto arr = h.jm().GetArray(Alice(), *id);
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->message(), "held by alice: dataset v2 not there; baton release to let it start");
  EXPECT_TRUE(h.Get(waiting).has_hold());
  EXPECT_FALSE(h.Get(t0).has_hold()) << "a running task runs on";
  v1::Job later = h.Get(unmade);
  EXPECT_TRUE(later.has_hold());
  EXPECT_EQ(later.message(), "task " + std::to_string(*id) +
                                 "_30 waits in its array, which is held by alice: dataset v2 not "
                                 "there; baton release to let it start");

  // Signal and requeue reach the running tasks.
  auto signalled = h.jm().Signal(Alice(), *id, SIGUSR1);
  ASSERT_TRUE(signalled.ok()) << signalled.status();
  EXPECT_EQ(signalled->array().tasks(), 2u);
  int signals = 0;
  for (const auto& c : h.Commands("n1")) signals += c.has_signal();
  EXPECT_EQ(signals, 2);
  auto requeued = Requeue(h, *id, Alice());
  ASSERT_TRUE(requeued.ok()) << requeued.status();
  EXPECT_EQ(requeued->array().tasks(), 2u);
  EXPECT_TRUE(SentPreempt(h.Commands("n1")));
  EXPECT_EQ(h.jm().Signal(Alice(), *id, SIGUSR1).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "no task runs now";
  EXPECT_EQ(Requeue(h, *id, Alice()).status().code(), absl::StatusCode::kFailedPrecondition);
  h.Report("n1", Report(t0, 1, Phase::PHASE_EXITED));
  h.Report("n1", Report(t1, 1, Phase::PHASE_EXITED));
  EXPECT_EQ(h.State(t0), v1::JOB_STATE_PENDING) << "requeued, back in line";
  EXPECT_EQ(h.Get(t0).hold().by(), "alice") << "and held with its array";

  // Held across a restart: nothing starts, no task is made.
  h.Restart();
  h.Connect("n1", 2);
  h.Schedule();
  h.Schedule();
  EXPECT_TRUE(Launches(h.Commands("n1")).empty()) << "the array is held";
  EXPECT_EQ(h.jm().GetArray(Alice(), *id)->made(), arrays::kFirstBatch);

  // An admin's hold on top is an admin's; a member may not release it.
  ASSERT_TRUE(Hold(h, *id, Admin(), "maintenance").ok());
  absl::Status denied = Release(h, *id, Alice()).status();
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied) << denied;
  auto released = Release(h, *id, Admin());
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(released->array().tasks(), 40u)
      << "the 16 held jobs (the two requeued ones too) and the 24 not yet jobs";
  EXPECT_FALSE(h.Get(waiting).has_hold());
  EXPECT_EQ(Release(h, *id, Alice()).status().code(), absl::StatusCode::kFailedPrecondition)
      << "not held any more";
  h.Schedule();
  EXPECT_EQ(Launches(h.Commands("n1")).size(), 2u) << "it runs again";

  // Submitted held: the array's record holds, no task becomes a job until released.
  std::promise<absl::StatusOr<uint64_t>> p;
  h.jm().Submit(Alice(), sweep, "", /*hold=*/true,
                [&](absl::StatusOr<uint64_t> i) { p.set_value(i); });
  absl::StatusOr<uint64_t> second = p.get_future().get();
  ASSERT_TRUE(second.ok()) << second.status();
  arr = h.jm().GetArray(Alice(), *second);
  EXPECT_EQ(arr->hold().reason(), "held at submit");
  EXPECT_EQ(arr->made(), 0u);
  h.Schedule();
  EXPECT_EQ(h.jm().GetArray(Alice(), *second)->made(), 0u);
  ASSERT_TRUE(Release(h, *second, Alice()).ok());
  h.Schedule();
  EXPECT_EQ(h.jm().GetArray(Alice(), *second)->made(), arrays::kFirstBatch);

  // One that ended cannot be held.
  ASSERT_TRUE(h.Cancel(*second).ok());
  EXPECT_EQ(Hold(h, *second, Alice()).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace baton::testing
