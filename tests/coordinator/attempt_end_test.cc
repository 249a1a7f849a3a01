// DecideAttemptEnd as a table: how an attempt ended (outcome, exit, signal), the job's
// counters, its restart policy and the policy's backoffs in; the attempt's end reason, the
// counters, the cooldown, the eviction record and the job's transitions out.
#include "coordinator/attempt_end.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace baton {
namespace {

using O = AttemptOutcome;

struct Row {
  const char* name;
  AttemptEndInput in;
  // Expected:
  std::vector<v1::JobState> states;
  std::string end_reason;
  std::string first_reason;  // the first transition's reason ("" not checked)
  uint32_t failures, evictions, restarts_in_a_row;
  std::optional<absl::Duration> cooldown;
  std::optional<int32_t> exit_code;
  std::string eviction;
};

AttemptEndInput In(O outcome, const std::string& why = "") {
  AttemptEndInput in;
  in.outcome = outcome;
  in.outcome_reason = why;
  in.retry_base = absl::Seconds(10);
  in.retry_max = absl::Seconds(300);
  in.service.backoff_s = 1;
  in.service.backoff_cap_s = 60;
  in.service.healthy_after_s = 600;
  // 30 s for the first eviction of the class, doubling (as sched::CooldownMs).
  in.eviction_cooldown = [](uint32_t n) { return absl::Seconds(30) * (1 << (n - 1)); };
  return in;
}

template <typename F>
AttemptEndInput With(AttemptEndInput in, F change) {
  change(in);
  return in;
}

TEST(AttemptEnd, Table) {
  const auto P = v1::JOB_STATE_PENDING, C = v1::JOB_STATE_COOLDOWN, F = v1::JOB_STATE_FAILED,
             S = v1::JOB_STATE_SUCCEEDED, X = v1::JOB_STATE_CANCELLED;
  const std::vector<Row> rows = {
      {"every rank exited 0",
       In(O::kNone),
       {S},
       "succeeded",
       "every rank exited 0",
       0,
       0,
       0,
       std::nullopt,
       0,
       ""},
      {"a service that exits 0 restarts after its backoff, no failure counted",
       With(In(O::kNone),
            [](auto& i) {
              i.restart_policy = v1::RESTART_POLICY_ALWAYS;
              i.ran = absl::Seconds(5);
              i.restarts_in_a_row = 2;
            }),
       {P},
       "succeeded",
       "service exited 0; restarting in 4.0 s, its GPUs held",
       0,
       0,
       3,
       absl::Seconds(4),
       std::nullopt,
       ""},
      {"a service after a healthy run starts its backoff over",
       With(In(O::kFailed, "rank(s) on n1 failed: exit code 3"),
            [](auto& i) {
              i.restart_policy = v1::RESTART_POLICY_ALWAYS;
              i.ran = absl::Seconds(600);
              i.restarts_in_a_row = 5;
              i.exit_code = 3;
              i.failures = 7;
            }),
       {P},
       "failed: rank(s) on n1 failed: exit code 3",
       "",
       8,
       0,
       1,
       absl::Seconds(1),
       std::nullopt,
       ""},
      {"a failure without retries left fails the job with its code",
       With(In(O::kFailed, "boom"), [](auto& i) { i.exit_code = 3; }),
       {F},
       "failed: boom",
       "boom",
       0,
       0,
       0,
       std::nullopt,
       3,
       ""},
      {"a signal is reported as 128 + signal",
       With(In(O::kFailed, "killed"), [](auto& i) { i.term_signal = SIGSEGV; }),
       {F},
       "failed: killed",
       "",
       0,
       0,
       0,
       std::nullopt,
       128 + SIGSEGV,
       ""},
      {"on-failure retries count the failure and back off by it",
       With(In(O::kFailed, "boom"),
            [](auto& i) {
              i.exit_code = 1;
              i.restart_policy = v1::RESTART_POLICY_ON_FAILURE;
              i.max_restarts = 3;
              i.failures = 1;
            }),
       {P},
       "failed: boom",
       "boom; retry 2 of 3",
       2,
       0,
       0,
       absl::Seconds(20),
       std::nullopt,
       ""},
      {"on-failure with its retries used up fails",
       With(In(O::kFailed, "boom"),
            [](auto& i) {
              i.exit_code = 1;
              i.restart_policy = v1::RESTART_POLICY_ON_FAILURE;
              i.max_restarts = 3;
              i.failures = 3;
            }),
       {F},
       "failed: boom",
       "boom",
       3,
       0,
       0,
       std::nullopt,
       1,
       ""},
      {"an eviction that checkpointed cools down, counted, and resumes from its step",
       With(In(O::kEvicted, "for job 9"),
            [](auto& i) {
              i.evictions = 1;
              i.checkpoint_step = 120;
            }),
       {C},
       "evicted: checkpointed and exited; resumes from step 120",
       "evicted: checkpointed and exited; resumes from step 120; cooldown 60 s",
       0,
       2,
       0,
       absl::Seconds(60),
       std::nullopt,
       "preempted"},
      {"an eviction killed at its deadline, with no checkpoint",
       With(In(O::kEvicted),
            [](auto& i) {
              i.term_signal = SIGKILL;
              i.reports_progress = true;
            }),
       {C},
       "evicted: killed after its grace period; no checkpoint: restarts from the beginning",
       "",
       0,
       1,
       0,
       absl::Seconds(30),
       std::nullopt,
       "preempted"},
      {"an eviction of a job that does not report progress, exiting with a code",
       With(In(O::kEvicted), [](auto& i) { i.exit_code = 2; }),
       {C},
       "evicted: exited with code 2; checkpoint unknown: the job does not report progress",
       "",
       0,
       1,
       0,
       absl::Seconds(30),
       std::nullopt,
       "preempted"},
      {"a drain is not counted and has no cooldown: pending at once",
       With(In(O::kEvicted, "node n1 drained"),
            [](auto& i) {
              i.drained = true;
              i.evictions = 4;
              i.checkpoint_step = 7;
            }),
       {C, P},
       "evicted: checkpointed and exited; resumes from step 7",
       "",
       0,
       4,
       0,
       absl::ZeroDuration(),
       std::nullopt,
       "drained"},
      {"a requeue is no eviction: not counted, no cooldown, no eviction event",
       With(In(O::kEvicted, "requeued by alice"),
            [](auto& i) {
              i.requeued = true;
              i.evictions = 2;
              i.checkpoint_step = 9;
            }),
       {C, P},
       "requeued: checkpointed and exited; resumes from step 9",
       "",
       0,
       2,
       0,
       absl::ZeroDuration(),
       std::nullopt,
       ""},
      {"a class without an eviction cooldown goes back to pending at once",
       With(In(O::kEvicted), [](auto& i) { i.eviction_cooldown = nullptr; }),
       {C, P},
       "",
       "",
       0,
       1,
       0,
       absl::ZeroDuration(),
       std::nullopt,
       "preempted"},
      {"a lost node requeues from the last checkpoint at once, not a failure",
       With(In(O::kNodeLost, "node n2 lost"), [](auto& i) { i.failures = 2; }),
       {P},
       "node n2 lost",
       "node n2 lost; requeued from its last checkpoint",
       2,
       0,
       0,
       absl::ZeroDuration(),
       std::nullopt,
       "node_lost"},
      {"past its max runtime the job fails with SIGTERM's code",
       In(O::kMaxRuntime, "exceeded its max runtime of 60 s"),
       {F},
       "exceeded its max runtime of 60 s",
       "",
       0,
       0,
       0,
       std::nullopt,
       128 + SIGTERM,
       ""},
      {"past its max runtime, killed: its own code",
       With(In(O::kMaxRuntime, "exceeded"), [](auto& i) { i.term_signal = SIGKILL; }),
       {F},
       "exceeded",
       "",
       0,
       0,
       0,
       std::nullopt,
       128 + SIGKILL,
       ""},
      {"a cancel ends it as cancelled, by whom it says",
       With(In(O::kCancelled),
            [](auto& i) {
              i.cancel_reason = "cancelled by alice: not needed";
              i.cancel_requested_by = "alice";
              i.term_signal = SIGTERM;
            }),
       {X},
       "cancelled",
       "cancelled by alice: not needed",
       0,
       0,
       0,
       std::nullopt,
       std::nullopt,
       ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const AttemptEnd end = DecideAttemptEnd(row.in);
    std::vector<v1::JobState> states;
    for (const auto& s : end.steps) states.push_back(s.to);
    EXPECT_EQ(states, row.states);
    if (!row.end_reason.empty()) {
      EXPECT_EQ(end.end_reason, row.end_reason);
    }
    if (!row.first_reason.empty() && !end.steps.empty()) {
      EXPECT_EQ(end.steps[0].reason, row.first_reason);
    }
    EXPECT_EQ(end.failures, row.failures);
    EXPECT_EQ(end.evictions, row.evictions);
    EXPECT_EQ(end.restarts_in_a_row, row.restarts_in_a_row);
    EXPECT_EQ(end.cooldown, row.cooldown);
    EXPECT_EQ(end.job_exit_code, row.exit_code);
    EXPECT_EQ(end.eviction, row.eviction);
  }
}

TEST(AttemptEnd, ACancelledJobIsCancelledByItsRequester) {
  AttemptEndInput in = In(O::kCancelled);
  in.cancel_requested_by = "bob";
  const AttemptEnd end = DecideAttemptEnd(in);
  ASSERT_EQ(end.steps.size(), 1u);
  EXPECT_EQ(end.steps[0].actor, "bob");
}

TEST(AttemptEnd, FailuresCarryTheirEventCode) {
  AttemptEndInput in = In(O::kFailed, "boom");
  in.restart_policy = v1::RESTART_POLICY_ON_FAILURE;
  in.max_restarts = 1;
  EXPECT_EQ(DecideAttemptEnd(in).steps.at(0).code, "failure");
  in.restart_policy = v1::RESTART_POLICY_ALWAYS;
  EXPECT_EQ(DecideAttemptEnd(in).steps.at(0).code, "failure");
  EXPECT_EQ(DecideAttemptEnd(In(O::kNone)).steps.at(0).code, "");
  in.outcome = O::kNone;
  EXPECT_EQ(DecideAttemptEnd(in).steps.at(0).code, "service_exit");
}

}  // namespace
}  // namespace baton
