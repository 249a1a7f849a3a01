// MPS shares through the JobManager: an agent's GPUs offered as pools (Gpu.mps_pool) are
// counted from the store's attempts, pass after pass and across a restart: shares of one
// user fill a pool to its 100 units and no further, another user's share waits, whole-GPU
// jobs never get the pool.
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

JobManagerOptions SharingOptions() {
  JobManagerOptions o = TestOptions();
  for (auto& c : o.policy.classes) {
    if (c.name == "inference") c.gpu_sharing = "mps";
  }
  return o;
}

// n1: GPU 0 an 80Gi MPS pool, GPU 1 whole.
v1::Register PoolNode() {
  v1::Register r = Registration("n1", 2, 16);
  for (v1::Gpu& g : *r.mutable_inventory()->mutable_gpus()) g.set_memory_bytes(80ull << 30);
  r.mutable_inventory()->mutable_gpus(0)->set_mps_pool(true);
  return r;
}

v1::JobSpec ShareSpec(uint32_t percent, uint64_t gpu_memory) {
  v1::JobSpec s = Spec(1, 1);
  s.set_priority_class("inference");
  s.set_gpu_share_percent(percent);
  s.set_gpu_memory_bytes(gpu_memory);
  s.set_cpu_millis_per_node(1000);
  s.set_memory_bytes_per_node(1ull << 30);
  return s;
}

std::string GpuOf(const v1::Job& job) {
  if (job.attempts_size() == 0 || job.attempts(0).placement_size() == 0) return "";
  const auto& p = job.attempts(0).placement(0);
  return p.gpu_ids_size() == 1 ? p.gpu_ids(0) : "";
}

TEST(JobManagerShares, SharesFillAPoolAcrossPassesAndRestartsOneUserAtATime) {
  Harness h(SharingOptions());
  h.Connect("n1", 2, PoolNode());
  auto a = h.Submit(ShareSpec(60, 20ull << 30));
  ASSERT_TRUE(a.ok()) << a.status();
  h.Schedule();
  auto b = h.Submit(ShareSpec(40, 20ull << 30));
  auto c = h.Submit(ShareSpec(10, 1ull << 30));
  auto bob = h.Submit(ShareSpec(10, 1ull << 30), Bob());
  auto whole = h.Submit(Spec(1, 1));
  ASSERT_TRUE(b.ok() && c.ok() && bob.ok() && whole.ok());
  h.Schedule();
  EXPECT_EQ(GpuOf(h.Get(*a)), "GPU-n1-0");
  EXPECT_EQ(GpuOf(h.Get(*b)), "GPU-n1-0") << "a second pass counts the first share held";
  EXPECT_EQ(h.State(*c), v1::JOB_STATE_PENDING) << "60% + 40% fill the pool";
  EXPECT_EQ(h.State(*bob), v1::JOB_STATE_PENDING);
  EXPECT_EQ(GpuOf(h.Get(*whole)), "GPU-n1-1") << "the pool never goes whole";
  v1::Node node = h.jm().ListNodes().at(0);
  ASSERT_EQ(node.mps_pools_size(), 1) << node.DebugString();
  EXPECT_EQ(node.mps_pools(0).uuid(), "GPU-n1-0");
  EXPECT_EQ(node.mps_pools(0).allocated_percent(), 100u);
  EXPECT_EQ(node.mps_pools(0).allocated_memory_bytes(), 40ull << 30);
  EXPECT_EQ(node.mps_pools(0).user(), "alice");
  EXPECT_EQ(node.mps_pools(0).jobs_size(), 2);
  EXPECT_EQ(node.allocated_gpus(), 1u) << "whole GPUs only: the training job's";

  h.Restart();
  h.Connect("n1", 2, PoolNode());
  h.Schedule();
  EXPECT_EQ(h.State(*c), v1::JOB_STATE_PENDING) << "the held shares are counted after a restart";
  EXPECT_EQ(h.State(*bob), v1::JOB_STATE_PENDING);
  auto why = h.jm().Explain(*bob);
  ASSERT_TRUE(why.ok()) << why.status();
  EXPECT_NE(why->text().find("one user at a time"), std::string::npos) << why->text();

  // alice's shares end: bob's goes to the pool (c, alice's, is first in line and goes too).
  for (uint64_t id : {*a, *b}) {
    ASSERT_TRUE(h.Cancel(id).ok());
  }
  for (uint64_t id : {*a, *b}) {
    h.Report("n1", Report(id, 1, v1::AttemptReport::PHASE_EXITED, 0));
  }
  h.Schedule();
  EXPECT_EQ(GpuOf(h.Get(*c)), "GPU-n1-0");
  EXPECT_EQ(h.State(*bob), v1::JOB_STATE_PENDING) << "alice's share holds the pool now";
}

// A class whose policy names an MPS service user: alice's and bob's shares run as that
// user, so they fill one pool together; its attempts and launches say whom they run as.
// A share of a class naming none still waits for the pool to empty (one uid per server).
TEST(JobManagerShares, AServiceUserThePolicyNamesLetsOwnersShareAPool) {
  JobManagerOptions o = SharingOptions();
  sched::PriorityClass serve = *o.policy.Find("inference");
  serve.name = "serve";
  serve.value = 950;  // placed before class inference's share
  serve.mps_user = "svc-infer";
  o.policy.classes.push_back(serve);
  o.policy.access.class_tenants["serve"] = {"*"};
  o.policy.access.members["speech"].push_back("carol");
  Harness h(o);
  h.Connect("n1", 2, PoolNode());
  v1::JobSpec shared = ShareSpec(30, 10ull << 30);
  shared.set_priority_class("serve");
  auto a = h.Submit(shared);
  auto b = h.Submit(shared, Bob());
  auto own = h.Submit(ShareSpec(10, 1ull << 30), Bob());  // class inference: runs as bob
  ASSERT_TRUE(a.ok() && b.ok() && own.ok());
  h.Schedule();
  EXPECT_EQ(GpuOf(h.Get(*a)), "GPU-n1-0") << h.jm().Explain(*a)->text();
  EXPECT_EQ(GpuOf(h.Get(*b)), "GPU-n1-0") << "two owners, one service user: one pool";
  EXPECT_EQ(h.State(*own), v1::JOB_STATE_PENDING) << "bob as himself is another uid";
  EXPECT_EQ(h.Get(*a).attempts(0).run_as(), "svc-infer");
  EXPECT_EQ(h.Get(*b).user(), "bob") << "the owner stays the owner";
  std::vector<v1::Launch> launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 2u);
  for (const v1::Launch& l : launches) EXPECT_EQ(l.user(), "svc-infer") << l.job_id();
  v1::Node node = h.jm().ListNodes().at(0);
  ASSERT_EQ(node.mps_pools_size(), 1);
  EXPECT_EQ(node.mps_pools(0).user(), "svc-infer");
  EXPECT_EQ(node.mps_pools(0).allocated_percent(), 60u);

  // Counted from the stored attempts after a restart: bob's own share still waits, and
  // a third owner's share of the class joins the pool.
  h.Restart();
  h.Connect("n1", 2, PoolNode());
  auto c = h.Submit(shared, Who("carol"));
  ASSERT_TRUE(c.ok()) << c.status();
  h.Schedule();
  EXPECT_EQ(h.State(*own), v1::JOB_STATE_PENDING);
  EXPECT_EQ(GpuOf(h.Get(*c)), "GPU-n1-0");
  EXPECT_EQ(h.jm().ListNodes().at(0).mps_pools(0).allocated_percent(), 90u);
}

}  // namespace
}  // namespace baton::testing
