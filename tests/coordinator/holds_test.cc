// Hold, release and requeue (issue 49): the pure decisions from tables, then the
// JobManager — a held job keeps its place in line but never starts, who may hold and
// release (an admin's hold only by an admin), submit --hold, the hold across a restart; a
// requeued job stops as a drain stops it and is back in line with nothing counted, across
// a restart too.
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

absl::StatusOr<v1::JobHold> Hold(Harness& h, uint64_t id, const Caller& who,
                                 const std::string& reason = "") {
  std::promise<absl::StatusOr<v1::JobHold>> p;
  h.jm().Hold(who, id, reason, [&](absl::StatusOr<v1::JobHold> s) { p.set_value(s); });
  return p.get_future().get();
}

absl::Status Release(Harness& h, uint64_t id, const Caller& who) {
  std::promise<absl::Status> p;
  h.jm().Release(who, id, [&](absl::Status s) { p.set_value(s); });
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
  EXPECT_EQ(Release(h, *id, Alice()).code(), absl::StatusCode::kFailedPrecondition) << "not held";

  auto by_admin = Hold(h, *id, Admin(), "maintenance");
  ASSERT_TRUE(by_admin.ok());
  EXPECT_TRUE(by_admin->by_admin());
  auto again = Hold(h, *id, Alice(), "mine now?");
  ASSERT_TRUE(again.ok()) << "holding a held job replaces the reason";
  EXPECT_TRUE(again->by_admin()) << "but an admin's hold stays an admin's";
  absl::Status denied = Release(h, *id, Alice());
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(denied.message()).find("only an admin releases it"), std::string::npos);
  EXPECT_EQ(Release(h, *id, Bob()).code(), absl::StatusCode::kPermissionDenied);
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

absl::StatusOr<v1::JobState> Requeue(Harness& h, uint64_t id, const Caller& who) {
  std::promise<absl::StatusOr<v1::JobState>> p;
  h.jm().Requeue(who, id, "new data", [&](absl::StatusOr<v1::JobState> s) { p.set_value(s); });
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
    EXPECT_EQ(*state, v1::JOB_STATE_PREEMPTING);
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

}  // namespace
}  // namespace baton::testing
