// Outages cost no work (the coordinator's side): a silent node is lost for new work at
// lease + margin, but its batch attempts are replaced only once their agent has stopped
// them (stop_after_disconnect + grace + margin), services at lease + margin; an attempt
// its agent stopped for lack of us resumes as evicted; a restarted coordinator gives every
// node lease + margin from its own start. Services restart after a doubling backoff that
// resets after a healthy run, an exit 0 is no failure, and their GPUs stay held meanwhile.
// inference-critical evicts inside a minimum runtime. On simulated time.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;
using ::testing::HasSubstr;

// The built-in classes with their default outage rules; alice is in vision.
JobManagerOptions Defaults() {
  JobManagerOptions o;
  o.policy = Policy::Default();
  o.policy.access.members = {{"vision", {"alice"}}};
  o.policy.access.class_tenants = {{"inference", {"vision"}}, {"inference-critical", {"vision"}}};
  o.lease = absl::Seconds(10);
  o.lost_margin = absl::Seconds(5);
  return o;
}

v1::JobSpec Service(uint32_t gpus, const std::string& cls = "inference") {
  v1::JobSpec s = Spec(/*nodes=*/1, gpus, {"serve"});
  s.set_priority_class(cls);
  s.set_restart_policy(v1::RESTART_POLICY_UNSPECIFIED);  // services: always
  return s;
}

v1::JobSpec Training(uint32_t gpus) {
  v1::JobSpec s = Spec(/*nodes=*/1, gpus, {"train"});
  s.set_priority_class("training");
  s.set_grace_seconds(30);
  return s;
}

// Heartbeats from every node but `silent`, `ms` later.
void Pass(Harness& h, int64_t ms, const std::vector<std::string>& alive) {
  h.clock().AdvanceMs(ms);
  for (const auto& n : alive) h.jm().AgentHeartbeat(n);
  h.Tick();
}

TEST(Outage, BatchAttemptsOfALostNodeWaitForTheirAgentToStopThemServicesDoNot) {
  Harness h(Defaults());
  h.Connect("n1", /*gpus=*/4);
  auto train = h.Submit(Training(2));
  auto serve = h.Submit(Service(2));
  h.Schedule();
  auto launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 2u);
  for (const auto& l : launches) {
    EXPECT_EQ(l.stop_after_disconnect_ms(), l.job_id() == *train ? 300'000u : 0u)
        << "5 min for batch classes, never for services";
  }
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(*serve, 1, Phase::PHASE_RUNNING));
  h.Connect("n2", /*gpus=*/4);
  h.Disconnect("n1");
  Pass(h, 16'000, {"n2"});  // past lease + margin
  EXPECT_EQ(h.jm().ListNodes()[0].state(), v1::NODE_STATE_LOST) << "no new work for n1";
  EXPECT_EQ(h.State(*serve), v1::JOB_STATE_PENDING) << "a service is replaced at once";
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_RUNNING) << "its agent has not stopped it yet";
  Pass(h, 300'000 + 30'000 + 5'000 - 16'000 - 1'000, {"n2"});
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_RUNNING) << "1 s before stop + grace + margin";
  Pass(h, 2'000, {"n2"});
  v1::Job job = h.Get(*train);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.failures(), 0u);
  h.Schedule();
  EXPECT_EQ(h.Get(*train).attempts(1).placement(0).node(), "n2");
}

TEST(Outage, ANodeThatComesBackWithinTheBoundKeepsItsAttempts) {
  Harness h(Defaults());
  h.Connect("n1", /*gpus=*/4);
  auto train = h.Submit(Training(2));
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  h.Disconnect("n1");
  Pass(h, 120'000, {});  // two minutes of partition: lost for new work
  EXPECT_EQ(h.jm().ListNodes()[0].state(), v1::NODE_STATE_LOST);
  v1::Register back = Registration("n1", 4);
  *back.add_attempts() = Report(*train, 1, Phase::PHASE_RUNNING);
  auto link = h.Connect("n1", 4, back);
  EXPECT_EQ(h.jm().ListNodes()[0].state(), v1::NODE_STATE_READY);
  v1::Job job = h.Get(*train);
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.attempts_size(), 1) << "the same attempt, never replaced";
}

TEST(Outage, AnAttemptItsAgentStoppedForWantOfUsResumesAndTheGangStops) {
  Harness h(Defaults());
  h.Connect("n1", 4);
  h.Connect("n2", 4);
  v1::JobSpec gang = Training(2);
  gang.set_nodes(2);
  auto id = h.Submit(gang);
  h.Schedule();
  h.Commands("n1");
  h.Commands("n2");
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  h.Report("n2", Report(*id, 1, Phase::PHASE_RUNNING));
  v1::AttemptReport stopped = Report(*id, 1, Phase::PHASE_EXITED, /*exit_code=*/0);
  stopped.set_stopped_disconnected(true);
  stopped.set_checkpoint_step(40);
  stopped.set_message("stopped on n1 after 300 s without the coordinator");
  h.Report("n1", stopped);  // it checkpointed and exited 0: not a success
  bool told = false;
  for (const auto& c : h.Commands("n2")) told |= c.has_kill() && c.kill().job_id() == *id;
  EXPECT_TRUE(told) << "the rest of the gang is stopped";
  h.Report("n2", Report(*id, 1, Phase::PHASE_EXITED, 143));
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.failures(), 0u);
  EXPECT_EQ(job.attempts(0).checkpoint_step(), 40) << "it resumes from its own save";
  EXPECT_THAT(job.attempts(0).end_reason(), HasSubstr("without the coordinator"));
}

TEST(Outage, ARestartedCoordinatorGivesEveryNodeLeasePlusMarginFromItsOwnStart) {
  Harness h(Defaults());
  h.Connect("n1", 4);
  auto id = h.Submit(Training(2));
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  h.clock().AdvanceMs(120'000);  // the coordinator was down two minutes
  h.Restart();
  Pass(h, 14'000, {});
  EXPECT_NE(h.jm().ListNodes()[0].state(), v1::NODE_STATE_LOST) << "within the window";
  v1::Register back = Registration("n1", 4);
  *back.add_attempts() = Report(*id, 1, Phase::PHASE_RUNNING);
  h.Connect("n1", 4, back);
  Pass(h, 60'000, {"n1"});
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.attempts_size(), 1);
}

TEST(Services, AnExitZeroIsARestartNotAFailure) {
  Harness h(Defaults());
  h.Connect("n1", 4);
  auto id = h.Submit(Service(1));
  for (uint32_t attempt = 1; attempt <= 3; ++attempt) {
    h.Schedule();
    h.Report("n1", Report(*id, attempt, Phase::PHASE_RUNNING));
    h.Report("n1", Report(*id, attempt, Phase::PHASE_EXITED, /*exit_code=*/0));
    EXPECT_EQ(h.State(*id), v1::JOB_STATE_PENDING);
    h.clock().AdvanceMs(10'000);
  }
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.failures(), 0u) << "exiting 0 is what services may do";
  EXPECT_EQ(job.attempts_size(), 3);
}

TEST(Services, CrashesBackOff1s2s4sWithTheirGpusHeldAndAHealthyRunStartsOver) {
  Harness h(Defaults());
  h.Connect("n1", /*gpus=*/4);
  auto serve = h.Submit(Service(4));
  h.Schedule();
  uint32_t attempt = 1;
  auto crash = [&] {
    h.Report("n1", Report(*serve, attempt, Phase::PHASE_RUNNING));
    h.Report("n1", Report(*serve, attempt, Phase::PHASE_EXITED, /*exit_code=*/1));
  };
  crash();
  auto train = h.Submit(Training(2));  // wants GPUs the crashed service held
  for (int64_t backoff : {1'000, 2'000, 4'000}) {
    v1::Job job = h.Get(*serve);
    ASSERT_EQ(job.state(), v1::JOB_STATE_PENDING);
    EXPECT_EQ(job.cooldown_until_ms() - h.clock().NowMs(), backoff);
    h.clock().AdvanceMs(backoff - 1);
    h.Schedule();
    EXPECT_EQ(h.State(*train), v1::JOB_STATE_PENDING) << "the service's GPUs stay held";
    EXPECT_EQ(h.State(*serve), v1::JOB_STATE_PENDING);
    h.clock().AdvanceMs(1);
    h.Schedule();
    ASSERT_EQ(h.State(*serve), v1::JOB_STATE_SCHEDULED) << "back after " << backoff << " ms";
    ++attempt;
    crash();
  }
  EXPECT_EQ(h.Get(*serve).failures(), 4u);
  EXPECT_EQ(h.Get(*serve).restarts_in_a_row(), 4u);
  h.clock().AdvanceMs(8'000);
  h.Schedule();
  ++attempt;
  h.Report("n1", Report(*serve, attempt, Phase::PHASE_RUNNING));
  h.clock().AdvanceMs(3600'000);  // a healthy hour
  h.Report("n1", Report(*serve, attempt, Phase::PHASE_EXITED, /*exit_code=*/1));
  v1::Job job = h.Get(*serve);
  EXPECT_EQ(job.restarts_in_a_row(), 1u);
  EXPECT_EQ(job.cooldown_until_ms() - h.clock().NowMs(), 1'000) << "the backoff starts over";
}

TEST(Services, AClassHasItsOwnBackoff) {
  JobManagerOptions o = Defaults();
  o.policy.class_service_restart["inference-critical"].backoff_s = 5;
  o.policy.class_service_restart["inference-critical"].backoff_cap_s = 8;
  Harness h(o);
  h.Connect("n1", /*gpus=*/4);
  auto critical = h.Submit(Service(2, "inference-critical"));
  auto plain = h.Submit(Service(2));
  h.Schedule();
  for (int64_t want : {5'000, 8'000}) {  // 5 s, then 10 s capped at 8 s
    for (auto id : {*critical, *plain}) {
      const uint32_t attempt = h.Get(id).attempts_size();
      h.Report("n1", Report(id, attempt, Phase::PHASE_RUNNING));
      h.Report("n1", Report(id, attempt, Phase::PHASE_EXITED, /*exit_code=*/1));
    }
    EXPECT_EQ(h.Get(*critical).cooldown_until_ms() - h.clock().NowMs(), want);
    EXPECT_EQ(h.Get(*plain).cooldown_until_ms() - h.clock().NowMs(), want == 5'000 ? 1'000 : 2'000)
        << "the other class keeps the defaults";
    h.clock().AdvanceMs(want);
    h.Schedule();
  }
}

TEST(Services, InferenceCriticalEvictsTrainingInsideItsMinimumRuntimeInferenceDoesNot) {
  Harness h(Defaults());  // training: min_runtime 10 min
  h.Connect("n1", /*gpus=*/2);
  auto train = h.Submit(Training(2));
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  h.clock().AdvanceMs(60'000);  // one minute into its ten
  auto plain = h.Submit(Service(2, "inference"));
  h.Schedule();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_RUNNING) << "inference waits out the minimum";
  auto critical = h.Submit(Service(2, "inference-critical"));
  h.Schedule();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING) << "inference-critical does not";
  EXPECT_EQ(h.Get(*train).attempts(0).evicted_for(), *critical);
  (void)plain;
}

}  // namespace
}  // namespace baton::testing
