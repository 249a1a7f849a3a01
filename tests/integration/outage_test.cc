// Outages cost no work, on a 3-node namespace cluster (agent lease 4 s, margin 2 s): a
// train_mlp gang and an inference service run while the coordinator is kill -9'ed.
// - Down 120 s under the default policy (training stops only after 5 minutes without the
//   coordinator, services never): both run throughout — same attempt, same service pid,
//   no rank and no heartbeat silent for more than 2 s — the gang ends with the weights of
//   an uninterrupted run, and its event log holds every transition, in order.
// - A class with stop_after_disconnect 5s: its gang checkpoints and exits about 5 s after
//   the coordinator went away (a graceful eviction: every rank writes its "end"), and
//   resumes from that step once the coordinator is back; the service is not stopped.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/outage_scenario.h"
#include "tests/integration/witness.h"

namespace baton::testing {
namespace {

// The longest a rank or the service may go silent. One paused, stopped or restarted for the
// outage is silent for seconds at least (the outage, or a stop, cooldown and relaunch);
// scheduling on a loaded 2-core machine has been seen to take 2 s. Between the two.
constexpr int64_t kMaxSilenceMs = 5000;

// The job's state machine as its events tell it: "" when the transitions are numbered
// 1, 2, … without a hole and each starts where the one before ended; else what is wrong.
std::string TransitionChain(const v1::Job& job, std::vector<v1::JobState>* states) {
  uint64_t seq = 0;
  v1::JobState at = v1::JOB_STATE_UNSPECIFIED;
  for (const v1::Event& e : job.events()) {
    if (e.kind() != v1::EVENT_KIND_TRANSITION && e.kind() != v1::EVENT_KIND_UNSPECIFIED) continue;
    if (e.seq() != seq + 1)
      return "event " + std::to_string(e.seq()) + " after " + std::to_string(seq);
    seq = e.seq();
    if (seq > 1 && e.from() != at) {
      return "event " + std::to_string(seq) + " starts from " + v1::JobState_Name(e.from()) +
             " but the job was " + v1::JobState_Name(at);
    }
    if (e.to() != at) states->push_back(e.to());
    at = e.to();
  }
  return seq == 0 ? "no transitions" : "";
}

TEST(Outage, AJobAndAServiceRideThroughTwoMinutesWithoutTheCoordinator) {
  TempDir dir("baton-outage");
  MakeShared(dir.path());
  NetnsCluster cluster(/*nodes=*/3, /*gpus=*/2,
                       TrainingAndServicePolicy(dir.Sub("policy.yaml"), ""), "u");
  if (!cluster.ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster.why();

  const OutageReport r = RunCoordinatorOutage(cluster, dir.path(), std::chrono::seconds(120));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.jobs_killed, 0) << cluster.Describe(r.training) << cluster.Describe(r.service);
  EXPECT_EQ(r.work_lost_s, 0);
  EXPECT_LE(r.training_max_gap_ms, kMaxSilenceMs) << ReadFile(r.ckpt + "/WITNESS");
  EXPECT_LE(r.service_max_gap_ms, kMaxSilenceMs) << ReadFile(r.heartbeat);
  EXPECT_EQ(r.service_pids, 1) << "the service was never restarted";
  EXPECT_EQ(TrainMlpFinalHash(r.training_log), UninterruptedTrainMlpHash(r.training_flags));

  const v1::Job training = *cluster.GetJob(r.training);
  std::vector<v1::JobState> states;
  EXPECT_EQ(TransitionChain(training, &states), "");
  EXPECT_EQ(states, (std::vector<v1::JobState>{v1::JOB_STATE_PENDING, v1::JOB_STATE_SCHEDULED,
                                               v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED}))
      << cluster.Describe(r.training);
  const v1::Job service = *cluster.GetJob(r.service);
  states.clear();
  EXPECT_EQ(TransitionChain(service, &states), "");
  EXPECT_EQ(states.back(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(cluster.Baton({"cancel", std::to_string(r.service)}, kRoot).exit_code, 0);
}

TEST(Outage, StopAfterDisconnectCheckpointsTheGangAndItResumesFromThatStep) {
  TempDir dir("baton-disconnect");
  MakeShared(dir.path());
  NetnsCluster cluster(
      /*nodes=*/3, /*gpus=*/2,
      TrainingAndServicePolicy(dir.Sub("policy.yaml"), ", stop_after_disconnect: 5s"), "d");
  if (!cluster.ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster.why();
  OutageReport r = StartOutageJobs(cluster, dir.path(), /*train_seconds=*/30);
  ASSERT_EQ(r.error, "");

  const int64_t down_ms = UnixNowMs();
  ASSERT_TRUE(cluster.StopCoordinator("KILL"));
  // Every rank of attempt 1 ends by itself (a checkpoint, then "end"), the coordinator away.
  const std::string witness_path = r.ckpt + "/WITNESS";
  ASSERT_TRUE(WaitFor(
      [&] {
        int ends = 0;
        for (const auto& rec : WitnessRecords(ReadFile(witness_path))) {
          ends += rec.event == "end" && rec.attempt == 1;
        }
        return ends == 4;
      },
      std::chrono::seconds(30)))
      << ReadFile(witness_path);
  int64_t stopped_ms = 0;
  for (const auto& rec : WitnessRecords(ReadFile(witness_path))) {
    if (rec.attempt == 1 && rec.event == "end") stopped_ms = std::max(stopped_ms, rec.time_ms);
  }
  // 5 s after the agents last heard the coordinator (a heartbeat every 0.5 s), plus the
  // step boundary and the save.
  EXPECT_GE(stopped_ms - down_ms, 4000);
  EXPECT_LE(stopped_ms - down_ms, 9000);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::max<int64_t>(0, down_ms + 12000 - UnixNowMs())));
  ASSERT_TRUE(cluster.StartCoordinator());

  ASSERT_TRUE(cluster.WaitForState(r.training, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
      << cluster.Describe(r.training);
  const v1::Job j = *cluster.GetJob(r.training);
  ASSERT_EQ(j.attempts_size(), 2) << cluster.Describe(r.training);
  const std::string log = cluster.Baton({"logs", std::to_string(r.training)}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("restored step (\\d+)"))) << log;
  EXPECT_EQ(std::stoll(m[1]), j.attempts(0).checkpoint_step())
      << "resumed from the step saved when it stopped";
  EXPECT_LE(j.attempts(0).ended_ms() - j.attempts(0).checkpoint_time_ms(), 3000)
      << "nothing to redo: it saved as it stopped";
  EXPECT_EQ(TrainMlpFinalHash(log), UninterruptedTrainMlpHash(r.training_flags));
  EXPECT_EQ(WitnessOverlap(ReadFile(witness_path)), "");

  MeasureService(r);
  const v1::Job service = *cluster.GetJob(r.service);
  EXPECT_EQ(service.attempts_size(), 1);
  EXPECT_EQ(service.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(r.service_pids, 1);
  EXPECT_LE(r.service_max_gap_ms, kMaxSilenceMs) << ReadFile(r.heartbeat);
}

}  // namespace
}  // namespace baton::testing
