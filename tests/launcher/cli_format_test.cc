#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/cli/format.h"
#include "tests/launcher/cli_samples.h"

namespace baton::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Table, AlignsColumnsToTheWidestCellWithTwoSpaces) {
  std::string t =
      Table({{"ID", "NAME", "STATE"}, {"1", "train-big", "running"}, {"12345", "x", "pending"}});
  EXPECT_EQ(t,
            "ID     NAME       STATE\n"
            "1      train-big  running\n"
            "12345  x          pending\n");
}

TEST(Table, ShortRowsAndEmptyInput) {
  EXPECT_EQ(Table({}), "");
  EXPECT_EQ(Table({{"A", "B"}, {"long"}}), "A     B\nlong\n");
}

TEST(ToJson, UsesLowerCamelCaseAndParsesBack) {
  v1::Job job = SampleJob();
  std::string json = ToJson(job);
  EXPECT_THAT(json, Not(HasSubstr("\n")));
  EXPECT_THAT(json, HasSubstr("\"exitCode\":3"));
  EXPECT_THAT(json, HasSubstr("\"gpusPerNode\":8"));
  EXPECT_THAT(json, HasSubstr("\"endReason\""));
  EXPECT_THAT(json, HasSubstr("\"JOB_STATE_FAILED\""));
  EXPECT_THAT(json, Not(HasSubstr("exit_code")));
  EXPECT_THAT(json, Not(HasSubstr("gpus_per_node")));
  // Defaults are printed too, so scripts can rely on every field being there.
  EXPECT_THAT(json, HasSubstr("\"evictions\":0"));

  v1::Job back;
  auto status = google::protobuf::util::JsonStringToMessage(json, &back);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(job, back));
}

TEST(Ago, FormatsElapsedTimeAndDashForUnset) {
  EXPECT_EQ(Ago(0, kNow), "-");
  EXPECT_EQ(Ago(kNow - 12'000, kNow), "12.0s ago");
  EXPECT_EQ(Ago(kNow - 93'000, kNow), "1m33s ago");
}

TEST(DescribeJob, TerminalJobShowsStateExitCodeAttemptsAndEvents) {
  std::string text = DescribeJob(SampleJob(), kNow);
  EXPECT_THAT(text, HasSubstr("Job 17 (llama-ft)"));
  EXPECT_THAT(text, HasSubstr("State:      failed"));
  EXPECT_THAT(text, HasSubstr("rank 2 exited with code 3"));
  EXPECT_THAT(text, HasSubstr("Exit code:  3"));
  EXPECT_THAT(text, HasSubstr("torchrun train.py"));
  EXPECT_THAT(text, HasSubstr("Attempts:"));
  EXPECT_THAT(text, HasSubstr("#1  on node-a (2 GPUs), node-b"));
  EXPECT_THAT(text, HasSubstr("checkpoint step 1200"));
  EXPECT_THAT(text, HasSubstr("failed: rank 2 exited with code 3"));
  EXPECT_THAT(text, HasSubstr("Events:"));
  EXPECT_THAT(text, HasSubstr("new -> pending  submitted by alice  (alice)"));
  EXPECT_THAT(text, HasSubstr("running -> failed"));
  EXPECT_THAT(text, HasSubstr("(agent:node-a)"));
  EXPECT_THAT(text, HasSubstr("failures 1/1"));
}

TEST(DescribeJob, RunningJobHasNoExitCodeAndShowsAPendingCancel) {
  v1::Job job = SampleJob();
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_message("");
  job.set_cancel_requested_by("bob");
  job.set_cancel_reason("cancelled by bob");
  job.mutable_attempts(0)->set_ended_ms(0);
  job.mutable_attempts(0)->set_checkpoint_step(-1);
  job.clear_events();
  std::string text = DescribeJob(job, kNow);
  EXPECT_THAT(text, HasSubstr("State:      running\n"));
  EXPECT_THAT(text, Not(HasSubstr("Exit code")));
  EXPECT_THAT(text, HasSubstr("Stopping:   cancelled by bob"));
  EXPECT_THAT(text, Not(HasSubstr("checkpoint step")));
  EXPECT_THAT(text, Not(HasSubstr("Events:")));
}

TEST(DescribeJob, CooldownShowsTheTimeLeft) {
  v1::Job job = SampleJob();
  job.set_state(v1::JOB_STATE_COOLDOWN);
  job.set_cooldown_until_ms(kNow + 90'000);
  std::string text = DescribeJob(job, kNow);
  EXPECT_THAT(text, HasSubstr("Waits:      1m30s more"));
}

v1::AttemptIsolation SampleIsolation() {
  v1::AttemptIsolation iso;
  iso.set_node("n1");
  iso.set_job_id(7);
  iso.set_attempt(2);
  v1::IsolationLimits* l = iso.mutable_limits();
  l->set_cgroup("baton/n1/job-7-a2");
  l->set_kind(v1::WORKLOAD_KIND_TRAINING);
  l->set_cpus("0-2");
  l->set_narrowed_cpus(1);
  l->set_cpu_quota_millis(3000);
  l->set_cpu_weight(200);
  l->set_memory_limit_bytes(1ull << 30);
  l->set_net_ceil_mbps(700);
  l->set_net_class("1:100");
  v1::IsolationStats* s = iso.mutable_stats();
  s->set_nr_periods(340);
  s->set_nr_throttled(12);
  s->set_throttled_us(1'200'000);
  s->set_memory_peak_bytes(20ull << 20);
  return iso;
}

TEST(Isolation, LimitsAndThrottlingReadAsOneLineEach) {
  v1::AttemptIsolation iso = SampleIsolation();
  std::string limits = DescribeLimits(iso.limits());
  EXPECT_THAT(limits, HasSubstr("training, cpus 0-2 (1 held by inference)"));
  EXPECT_THAT(limits, HasSubstr("quota 3, weight 200, memory 1Gi"));
  EXPECT_THAT(limits, HasSubstr("net <= 700 Mbit/s (1:100)"));
  std::string stats = DescribeThrottling(iso.stats());
  EXPECT_THAT(stats, HasSubstr("throttled 12/340 periods (1.2s)"));
  EXPECT_THAT(stats, HasSubstr("peak memory 20Mi"));
}

TEST(Isolation, StatusShowsEachNodesLimitsUnderItsAttempt) {
  v1::Job job = SampleJob();
  *job.mutable_attempts(job.attempts_size() - 1)->add_isolation() = SampleIsolation();
  std::string text = DescribeJob(job, kNow);
  EXPECT_THAT(text, HasSubstr("n1: training, cpus 0-2"));
  EXPECT_THAT(text, HasSubstr("throttled 12/340 periods"));
}

// A 2-node attempt, 2 ranks a node: node-a's agent reported where its ranks run; node-b's
// did not (yet), so the scheduler's choice shows, with an inference rank's charged CPUs.
v1::Attempt BoundAttempt() {
  v1::Attempt a;
  for (const char* name : {"node-a", "node-b"}) {
    v1::NodeAssignment* p = a.add_placement();
    p->set_node(name);
    p->set_first_rank(a.placement_size() == 1 ? 0 : 2);
    for (int32_t numa : {0, 1}) p->add_ranks()->set_numa(numa);
  }
  a.mutable_placement(1)->mutable_ranks(1)->add_cpus(6);
  a.mutable_placement(1)->mutable_ranks(1)->add_cpus(7);
  a.mutable_placement(1)->mutable_ranks(0)->set_numa(-1);
  v1::AttemptIsolation* iso = a.add_isolation();
  iso->set_node("node-a");
  for (int r = 0; r < 2; ++r) {
    v1::RankPlacement* rp = iso->mutable_limits()->add_ranks();
    rp->set_local_rank(r);
    rp->set_numa(r);
    rp->set_cpus(r == 0 ? "0-3" : "4-5");
    rp->set_mems(std::to_string(r));
  }
  return a;
}

TEST(Isolation, StatusShowsEachRanksBindingPerNode) {
  EXPECT_EQ(DescribeRankBindings(BoundAttempt()),
            "node-a: rank 0 numa 0 cpus 0-3 mems 0; rank 1 numa 1 cpus 4-5 mems 1\n"
            "node-b: rank 2 spans; rank 3 numa 1 cpus 6,7 (charged)\n");
  v1::Job job = SampleJob();
  *job.mutable_attempts(job.attempts_size() - 1) = BoundAttempt();
  EXPECT_THAT(DescribeJob(job, kNow), HasSubstr("        node-a: rank 0 numa 0 cpus 0-3 mems 0;"));
  EXPECT_THAT(ToJson(job), HasSubstr("\"ranks\":[{\"localRank\":0,\"numa\":0,\"cpus\":\"0-3\""));
}

TEST(Isolation, NodesTableListsRunningAttemptsLimits) {
  v1::Node n;
  n.set_name("n1");
  EXPECT_EQ(LimitsTable({n}), "") << "no table without attempts";
  *n.add_attempts() = SampleIsolation();
  std::string t = LimitsTable({n});
  EXPECT_THAT(t, HasSubstr("NODE"));
  EXPECT_THAT(t, HasSubstr("7#2"));
  EXPECT_THAT(t, HasSubstr("700Mbit"));
  EXPECT_THAT(t, HasSubstr("12/340"));
}

}  // namespace
}  // namespace baton::cli

namespace baton::cli {
namespace {

TEST(EventLine, SaysWhatHappenedToWhomAndWhoDidIt) {
  v1::Event t;
  t.set_log_seq(12);
  t.set_time_ms(kNow);
  t.set_kind(v1::EVENT_KIND_TRANSITION);
  t.set_job_id(3);
  t.set_from(v1::JOB_STATE_RUNNING);
  t.set_to(v1::JOB_STATE_PENDING);
  t.set_reason("node n1 lost; requeued from its last checkpoint");
  t.set_actor("coordinator");
  std::string line = EventLine(t);
  EXPECT_EQ(line.rfind("#12 ", 0), 0u) << line;
  EXPECT_THAT(line, HasSubstr("  transition    job 3      running -> pending: node n1 lost; "
                              "requeued from its last checkpoint  (coordinator)"));

  v1::Event node;
  node.set_log_seq(13);
  node.set_kind(v1::EVENT_KIND_NODE);
  node.set_node("n1");
  node.set_code("lost");
  node.set_reason("no contact for 15000 ms");
  node.set_actor("coordinator");
  EXPECT_THAT(EventLine(node), HasSubstr("node          node n1    lost: no contact for 15000 ms"));

  v1::Event policy;
  policy.set_kind(v1::EVENT_KIND_POLICY);
  policy.set_code("policy_changed");
  policy.set_reason("tenant vision: weight 1 -> 2");
  policy.set_actor("root");
  EXPECT_THAT(EventLine(policy),
              HasSubstr("policy        -          policy_changed: tenant vision: "
                        "weight 1 -> 2  (root)"));
}

}  // namespace
}  // namespace baton::cli
