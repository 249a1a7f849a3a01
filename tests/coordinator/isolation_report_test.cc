// What the coordinator does with the agents' isolation: Launch names the class's kind,
// the limits and throttling an agent reports stay on the attempt (`baton status`), and
// ListNodes shows running attempts' limits with the node's isolation (`baton nodes`).
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;

v1::Launch FirstLaunch(const std::vector<v1::CoordinatorCommand>& cmds) {
  for (const auto& c : cmds) {
    if (c.has_launch()) return c.launch();
  }
  return v1::Launch();
}

TEST(IsolationReports, LaunchCarriesTheKindOfTheJobsClass) {
  Harness h;
  h.Connect("n1");
  v1::JobSpec inference = Spec();
  inference.set_priority_class("inference");
  auto serving = h.Submit(inference);
  ASSERT_TRUE(serving.ok()) << serving.status();
  h.Schedule();
  EXPECT_EQ(FirstLaunch(h.Commands("n1")).kind(), v1::WORKLOAD_KIND_INFERENCE);
  auto training = h.Submit(Spec());
  h.Schedule();
  EXPECT_EQ(FirstLaunch(h.Commands("n1")).kind(), v1::WORKLOAD_KIND_TRAINING);
}

TEST(IsolationReports, LimitsAndThrottlingStayOnTheAttemptAndShowOnTheNode) {
  Harness h;
  v1::Register reg = Registration("n1");
  reg.mutable_isolation()->set_mode("cgroup-v2");
  reg.mutable_isolation()->set_nic("eth1");
  h.Connect("n1", 4, reg);
  auto id = h.Submit(Spec());
  h.Schedule();
  v1::AttemptReport r = Report(*id, 1, Phase::PHASE_RUNNING);
  v1::AttemptIsolation* iso = r.mutable_isolation();
  iso->set_job_id(*id);
  iso->set_attempt(1);
  iso->mutable_limits()->set_cpus("0-3");
  iso->mutable_stats()->set_nr_throttled(5);
  h.Report("n1", r);
  iso->mutable_stats()->set_nr_throttled(9);  // a later stats report replaces the first
  h.Report("n1", r);
  v1::Job job = h.Get(*id);
  ASSERT_EQ(job.attempts(0).isolation_size(), 1);
  EXPECT_EQ(job.attempts(0).isolation(0).node(), "n1");
  EXPECT_EQ(job.attempts(0).isolation(0).limits().cpus(), "0-3");
  EXPECT_EQ(job.attempts(0).isolation(0).stats().nr_throttled(), 9u);
  auto nodes = h.jm().ListNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].isolation().mode(), "cgroup-v2");
  ASSERT_EQ(nodes[0].attempts_size(), 1);
  EXPECT_EQ(nodes[0].attempts(0).job_id(), *id);
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED));
  EXPECT_EQ(h.jm().ListNodes()[0].attempts_size(), 0) << "only running attempts";
}

}  // namespace
}  // namespace baton::testing
