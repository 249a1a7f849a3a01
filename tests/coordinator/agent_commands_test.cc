// The commands the coordinator sends agents, from a stored job and the policy alone.
#include "coordinator/agent_commands.h"

#include <csignal>

#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::agent_commands_test {
namespace {

v1::JobSpec Spec(const std::string& cls, const std::string& tenant) {
  v1::JobSpec s;
  s.set_priority_class(cls);
  s.set_tenant(tenant);
  return s;
}

TEST(AgentCommands, LaunchTermsFollowThePolicy) {
  Policy p = Policy::Default();
  p.access.root_tenants = {"ops"};
  p.class_pids_limits["experiment"] = 64;
  p.class_stop_after_disconnect_s["labeling"] = 0;
  p.steer_capped_training_to_sockets = false;

  LaunchTerms training = LaunchTermsOf(p, Spec("training", "vision"));
  EXPECT_EQ(training.kind, v1::WORKLOAD_KIND_TRAINING);
  EXPECT_FALSE(training.allow_root) << "only the policy's root tenants";
  EXPECT_EQ(training.pids_limit, p.default_pids_limit);
  EXPECT_TRUE(training.keep_nccl_transport_under_cap);
  EXPECT_EQ(training.stop_after_disconnect_ms, 300'000u) << "the batch default, 5 min";

  LaunchTerms service = LaunchTermsOf(p, Spec("inference", "ops"));
  EXPECT_EQ(service.kind, v1::WORKLOAD_KIND_INFERENCE);
  EXPECT_TRUE(service.allow_root);
  EXPECT_EQ(service.stop_after_disconnect_ms, 0u) << "a service is never stopped for it";

  EXPECT_EQ(LaunchTermsOf(p, Spec("experiment", "vision")).pids_limit, 64u);
  EXPECT_EQ(LaunchTermsOf(p, Spec("labeling", "vision")).stop_after_disconnect_ms, 0u);
  p.steer_capped_training_to_sockets = true;
  EXPECT_FALSE(LaunchTermsOf(p, Spec("training", "vision")).keep_nccl_transport_under_cap);
  EXPECT_EQ(LaunchTermsOf(p, Spec("no-such-class", "vision")).kind, v1::WORKLOAD_KIND_TRAINING);
}

TEST(AgentCommands, LaunchCarriesTheLastAttemptForItsNode) {
  v1::Job job;
  job.set_id(42);
  job.set_user("alice");
  *job.mutable_spec() = Spec("training", "vision");
  job.add_attempts()->set_number(1);
  v1::Attempt* a = job.add_attempts();
  a->set_number(2);
  a->set_master_port(29501);
  a->add_placement()->set_node("n1");
  a->add_placement()->set_node("n2");
  LaunchTerms terms;
  terms.kind = v1::WORKLOAD_KIND_INFERENCE;
  terms.pids_limit = 7;
  terms.stop_after_disconnect_ms = 1234;
  v1::CoordinatorCommand cmd = LaunchCommand(job, 1, "s3cret", terms, {"10.0.0.1:7071", ""});
  ASSERT_TRUE(cmd.has_launch());
  const v1::Launch& l = cmd.launch();
  EXPECT_EQ(l.job_id(), 42u);
  EXPECT_EQ(l.attempt(), 2u) << "the last attempt";
  EXPECT_EQ(l.node_rank(), 1u);
  EXPECT_EQ(l.master_port(), 29501u);
  EXPECT_EQ(l.user(), "alice");
  EXPECT_EQ(l.exec_secret(), "s3cret");
  EXPECT_EQ(l.spec().priority_class(), "training");
  ASSERT_EQ(l.placement_size(), 2);
  EXPECT_EQ(l.placement(1).node(), "n2");
  EXPECT_EQ(l.kind(), v1::WORKLOAD_KIND_INFERENCE);
  EXPECT_EQ(l.pids_limit(), 7u);
  EXPECT_EQ(l.stop_after_disconnect_ms(), 1234u);
  ASSERT_EQ(l.agent_addresses_size(), 2);
  EXPECT_EQ(l.agent_addresses(0), "10.0.0.1:7071");
  EXPECT_EQ(l.agent_addresses(1), "");
}

TEST(AgentCommands, PreemptKillAndAck) {
  v1::CoordinatorCommand p =
      PreemptCommand(7, 3, absl::FromUnixMillis(1'700'000'000'123), "room for job 9");
  ASSERT_TRUE(p.has_preempt());
  EXPECT_EQ(p.preempt().job_id(), 7u);
  EXPECT_EQ(p.preempt().attempt(), 3u);
  EXPECT_EQ(p.preempt().deadline_ms(), 1'700'000'000'123);
  EXPECT_EQ(p.preempt().reason(), "room for job 9");

  v1::CoordinatorCommand k = KillCommand(7, 3, SIGTERM, 30, "cancelled");
  ASSERT_TRUE(k.has_kill());
  EXPECT_EQ(k.kill().signal(), SIGTERM);
  EXPECT_EQ(k.kill().grace_seconds(), 30u);
  EXPECT_EQ(k.kill().reason(), "cancelled");

  v1::CoordinatorCommand ack = AckCommand(7, 3);
  ASSERT_TRUE(ack.has_ack());
  EXPECT_EQ(ack.ack().job_id(), 7u);
  EXPECT_EQ(ack.ack().attempt(), 3u);
}

}  // namespace
}  // namespace baton::agent_commands_test
