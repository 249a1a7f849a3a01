// The job lifecycle as the JobManager runs it: real store, simulated time, recording
// agents. Each test narrates one behaviour.
#include <csignal>

#include "coordinator/events.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;

std::vector<v1::Kill> Kills(const std::vector<v1::CoordinatorCommand>& cmds) {
  std::vector<v1::Kill> out;
  for (const auto& c : cmds) {
    if (c.has_kill()) out.push_back(c.kill());
  }
  return out;
}

bool HasAck(const std::vector<v1::CoordinatorCommand>& cmds, uint64_t job, uint32_t attempt) {
  for (const auto& c : cmds) {
    if (c.has_ack() && c.ack().job_id() == job && c.ack().attempt() == attempt) return true;
  }
  return false;
}

TEST(JobManager, SubmitIsStoredPendingAndSurvivesRestart) {
  Harness h;
  auto id = h.Submit(Spec());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_PENDING);
  v1::Job job = h.Get(*id);
  ASSERT_EQ(job.events_size(), 1);
  EXPECT_EQ(job.events(0).to(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.events(0).reason(), "submitted by alice");
  EXPECT_EQ(job.spec().tenant(), "vision");  // defaulted from the caller
  h.Restart();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_PENDING);
  EXPECT_EQ(h.Get(*id).events_size(), 1);
  auto next = h.Submit(Spec());
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, *id) << "ids are never reused after a restart";
}

TEST(JobManager, RunsAJobFromLaunchToSuccess) {
  Harness h;
  h.Connect("n1", /*gpus=*/4);
  auto id = h.Submit(Spec(/*nodes=*/1, /*gpus=*/2));
  h.Schedule();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_SCHEDULED);
  auto launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].attempt(), 1u);
  ASSERT_EQ(launches[0].placement_size(), 1);
  EXPECT_EQ(launches[0].placement(0).gpu_ids_size(), 2);
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_RUNNING);
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED, 0));
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.exit_code(), 0);
  EXPECT_GT(job.finished_ms(), 0);
  EXPECT_TRUE(HasAck(h.Commands("n1"), *id, 1)) << "the agent may forget a recorded end";
}

TEST(JobManager, PlacesWholeGangsOrNothing) {
  Harness h;
  h.Connect("n1", 4);
  h.Connect("n2", 4);
  auto first = h.Submit(Spec(/*nodes=*/2, /*gpus=*/3));
  auto second = h.Submit(Spec(/*nodes=*/2, /*gpus=*/2));
  h.Schedule();
  EXPECT_EQ(h.State(*first), v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(h.State(*second), v1::JOB_STATE_PENDING) << "only 1 GPU left per node";
  EXPECT_TRUE(Launches(h.Commands("n2")).size() == 1u);
  h.Commands("n1");
  for (const char* n : {"n1", "n2"}) h.Report(n, Report(*first, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(*first, 1, Phase::PHASE_EXITED));
  h.Schedule();
  EXPECT_EQ(h.State(*second), v1::JOB_STATE_PENDING) << "n2 still holds the first gang";
  h.Report("n2", Report(*first, 1, Phase::PHASE_EXITED));
  h.Schedule();
  EXPECT_EQ(h.State(*second), v1::JOB_STATE_SCHEDULED);
}

TEST(JobManager, RejectsGangsLargerThanTheCluster) {
  Harness h;
  h.Connect("n1", 4);
  auto too_many_nodes = h.Submit(Spec(/*nodes=*/2, /*gpus=*/1));
  EXPECT_EQ(too_many_nodes.status().code(), absl::StatusCode::kInvalidArgument);
  auto too_many_gpus = h.Submit(Spec(/*nodes=*/1, /*gpus=*/5));
  EXPECT_EQ(too_many_gpus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(too_many_gpus.status().message()).find("gpus_per_node"), std::string::npos);
  v1::ListRequest all;
  all.set_all(true);
  EXPECT_EQ(h.jm().List(Alice(), all)->jobs_size(), 0) << "nothing stored for refused specs";
}

TEST(JobManager, HigherClassesStartFirst) {
  Harness h;
  h.Connect("n1", 1);
  auto blocker = h.Submit(Spec(1, 1));
  h.Schedule();
  v1::JobSpec low = Spec(1, 1);
  low.set_priority_class("experiment");
  v1::JobSpec high = Spec(1, 1);
  high.set_priority_class("inference");
  high.set_restart_policy(v1::RESTART_POLICY_NEVER);
  auto low_id = h.Submit(low);
  auto high_id = h.Submit(high);
  h.Report("n1", Report(*blocker, 1, Phase::PHASE_EXITED));
  h.Schedule();
  EXPECT_EQ(h.State(*high_id), v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(h.State(*low_id), v1::JOB_STATE_PENDING);
}

TEST(JobManager, RetriesFailuresWithBackoffThenFails) {
  JobManagerOptions opts = TestOptions();
  opts.retry_backoff_base = absl::Seconds(1);
  Harness h(opts);
  h.Connect("n1");
  v1::JobSpec spec = Spec();
  spec.set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
  spec.set_max_restarts(1);
  auto id = h.Submit(spec);
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED, /*exit_code=*/7));
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.failures(), 1u);
  EXPECT_GT(job.cooldown_until_ms(), h.clock().NowMs());
  h.Schedule();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_PENDING) << "still backing off";
  h.clock().AdvanceMs(1001);
  h.Schedule();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_SCHEDULED);
  h.Report("n1", Report(*id, 2, Phase::PHASE_EXITED, /*exit_code=*/7));
  job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(job.exit_code(), 7);
  EXPECT_EQ(job.attempts_size(), 2);
}

TEST(JobManager, OneFailedNodeStopsTheRestOfTheGang) {
  Harness h;
  h.Connect("n1");
  h.Connect("n2");
  auto id = h.Submit(Spec(/*nodes=*/2));
  h.Schedule();
  h.Commands("n1");
  h.Commands("n2");
  for (const char* n : {"n1", "n2"}) h.Report(n, Report(*id, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED, /*exit_code=*/1));
  auto kills = Kills(h.Commands("n2"));
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].signal(), SIGTERM);
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_RUNNING) << "not over until n2 confirms";
  v1::AttemptReport killed = Report(*id, 1, Phase::PHASE_EXITED);
  killed.set_term_signal(SIGTERM);
  killed.set_killed(true);
  h.Report("n2", killed);
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(job.exit_code(), 1) << "the first failure names the job's exit";
}

TEST(JobManager, CancelsPendingAtOnceAndRunningAfterExit) {
  Harness h;
  h.Connect("n1", 1);
  auto running = h.Submit(Spec(1, 1, {"sleep", "100"}));
  h.Schedule();
  auto pending = h.Submit(Spec(1, 1));
  h.Report("n1", Report(*running, 1, Phase::PHASE_RUNNING));
  h.Commands("n1");

  EXPECT_EQ(*h.Cancel(*pending), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(*h.Cancel(*running), v1::JOB_STATE_RUNNING);
  auto kills = Kills(h.Commands("n1"));
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].signal(), SIGTERM);
  EXPECT_EQ(kills[0].grace_seconds(), 30u) << "the class default grace";
  EXPECT_TRUE(h.Cancel(*running).ok()) << "idempotent while stopping";
  h.Report("n1", Report(*running, 1, Phase::PHASE_EXITED, 143));
  EXPECT_EQ(h.State(*running), v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(h.Cancel(*running).ok()) << "idempotent once cancelled";
}

TEST(JobManager, CancelChecksTheCallersTenantAndTheState) {
  Harness h;
  h.Connect("n1");
  auto id = h.Submit(Spec());
  EXPECT_EQ(h.Cancel(*id, Bob()).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(h.Cancel(999).status().code(), absl::StatusCode::kNotFound);
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED));
  EXPECT_EQ(h.Cancel(*id).status().code(), absl::StatusCode::kFailedPrecondition);
  auto other = h.Submit(Spec());
  EXPECT_EQ(*h.Cancel(*other, Admin()), v1::JOB_STATE_CANCELLED) << "admins act on any job";
}

TEST(JobManager, ResearchersSubmitOnlyForTheirTenantAndRootJobsNeedThePolicysLeave) {
  JobManagerOptions opts = TestOptions();
  opts.policy.access.admins = {"root", "ops"};
  Harness h(opts);
  v1::JobSpec spec = Spec();
  spec.set_tenant("speech");
  EXPECT_EQ(h.Submit(spec).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(h.Submit(spec, Who("ops")).ok()) << "admins submit for any tenant";
  absl::StatusOr<uint64_t> root = h.Submit(spec, Admin());
  EXPECT_EQ(root.status().code(), absl::StatusCode::kPermissionDenied)
      << "root's job would run as root on the nodes";
  EXPECT_NE(std::string(root.status().message()).find("tenants[].allow_root"), std::string::npos);

  opts.policy.access.root_tenants = {"speech"};
  Harness allowed(opts);
  allowed.Connect("n1");
  auto id = allowed.Submit(spec, Admin());
  ASSERT_TRUE(id.ok()) << id.status();
  allowed.Schedule();
  auto launches = Launches(allowed.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_TRUE(launches[0].allow_root()) << "the agent is told root is allowed here";
  EXPECT_EQ(launches[0].user(), "root");
  EXPECT_EQ(launches[0].pids_limit(), 16384u) << "the policy's default pids limit";
  EXPECT_FALSE(launches[0].keep_nccl_transport_under_cap()) << "steering is on by default";
}

TEST(JobManager, LaunchCarriesThePolicysNcclSteering) {
  JobManagerOptions opts = TestOptions();
  opts.policy.steer_capped_training_to_sockets = false;
  Harness h(opts);
  h.Connect("n1");
  auto id = h.Submit(Spec());
  ASSERT_TRUE(id.ok()) << id.status();
  h.Schedule();
  auto launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_TRUE(launches[0].keep_nccl_transport_under_cap());
}

// The agent's topology reaches the scheduler: on a node whose 4 CPUs are 2 SMT cores,
// (0,2) and (1,3), a 1-CPU inference job is charged one whole core, the highest.
TEST(JobManager, InferenceIsChargedWholeCoresOfTheAgentsTopology) {
  Harness h;
  v1::Register reg = Registration("n1", /*gpus=*/0, /*cpus=*/4);
  v1::NumaNode* numa = reg.mutable_inventory()->add_numa_nodes();
  numa->set_id(0);
  numa->set_memory_bytes(64ull << 30);
  for (uint32_t c = 0; c < 4; ++c) numa->add_cpus(c);
  for (uint32_t first : {0u, 1u}) {
    v1::CpuCore* core = reg.mutable_inventory()->add_cores();
    core->set_id(first);
    core->add_cpus(first);
    core->add_cpus(first + 2);
  }
  h.Connect("n1", 0, reg);
  v1::JobSpec spec = Spec();
  spec.set_priority_class("inference");
  spec.set_cpu_millis_per_node(1000);
  auto id = h.Submit(spec);
  ASSERT_TRUE(id.ok()) << id.status();
  h.Schedule();
  auto launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u);
  ASSERT_EQ(launches[0].placement(0).ranks_size(), 1);
  const auto& cpus = launches[0].placement(0).ranks(0).cpus();
  EXPECT_EQ(std::vector<uint32_t>(cpus.begin(), cpus.end()), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(launches[0].placement(0).cpu_millis(), 1000u) << "the node counts the request";
}

// An agent's inventory is not trusted: a CPU id beyond any real machine's (which would
// size the scheduler's per-node tables) refuses the registration, naming it.
TEST(JobManager, RegistrationWithAnOutOfRangeCpuIdIsRefused) {
  Harness h;
  for (bool in_cores : {false, true}) {
    v1::Register reg = Registration("n1", /*gpus=*/0, /*cpus=*/4);
    v1::NumaNode* numa = reg.mutable_inventory()->add_numa_nodes();
    numa->set_memory_bytes(64ull << 30);
    for (uint32_t c = 0; c < 4; ++c) numa->add_cpus(c);
    v1::CpuCore* core = reg.mutable_inventory()->add_cores();
    core->add_cpus(0);
    if (in_cores) {
      core->add_cpus(4'000'000'000u);
    } else {
      numa->add_cpus(1u << 20);
    }
    absl::Status s = h.jm().AgentRegister(reg, std::make_shared<RecordingLink>());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << in_cores;
    EXPECT_NE(s.message().find(in_cores ? "cores: CPU id 4000000000" : "numa_nodes: CPU id"),
              std::string::npos)
        << s;
  }
  EXPECT_EQ(h.jm().ListNodes().size(), 0u) << "nothing of it is kept";
}

TEST(JobManager, LostNodeRequeuesItsJobsAfterLeasePlusMargin) {
  JobManagerOptions opts = TestOptions();
  opts.lease = absl::Seconds(10);
  opts.lost_margin = absl::Seconds(5);
  Harness h(opts);
  h.Connect("n1");
  v1::JobSpec spec = Spec();
  spec.set_grace_seconds(1);  // its agent stops it 1 s after losing us, kills it 1 s later
  auto id = h.Submit(spec);
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  h.Connect("n2");
  h.Disconnect("n1");
  h.clock().AdvanceMs(14'000);
  h.jm().AgentHeartbeat("n2");
  h.Tick();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_RUNNING) << "within lease + margin";
  h.clock().AdvanceMs(2'000);
  h.jm().AgentHeartbeat("n2");
  h.Tick();
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.failures(), 0u) << "node loss is not the job's failure";
  h.Schedule();
  job = h.Get(*id);
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_EQ(job.attempts(1).placement(0).node(), "n2") << "never on the lost node";
  auto nodes = h.jm().ListNodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].state(), v1::NODE_STATE_LOST);
}

TEST(JobManager, ReconcilesWhatAReconnectingAgentReports) {
  Harness h;
  h.Connect("n1");
  auto id = h.Submit(Spec());
  h.Schedule();
  h.Commands("n1");  // the launch went out; say it was lost with the stream
  v1::Register reg = Registration("n1");
  *reg.add_attempts() = Report(/*job=*/4242, /*attempt=*/1, Phase::PHASE_RUNNING);
  *reg.add_attempts() = Report(/*job=*/4243, /*attempt=*/2, Phase::PHASE_EXITED);
  auto link = std::make_shared<RecordingLink>();
  ASSERT_TRUE(h.jm().AgentRegister(reg, link).ok());
  h.jm().Flush();
  auto cmds = link->Take();
  auto kills = Kills(cmds);
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].job_id(), 4242u) << "an attempt we do not know is stopped";
  EXPECT_EQ(kills[0].signal(), SIGKILL);
  EXPECT_TRUE(HasAck(cmds, 4243, 2)) << "an ended unknown attempt is forgotten";
  auto launches = Launches(cmds);
  ASSERT_EQ(launches.size(), 1u) << "the unacknowledged launch is sent again";
  EXPECT_EQ(launches[0].job_id(), *id);
}

TEST(JobManager, RunningJobsSurviveACoordinatorRestart) {
  Harness h;
  h.Connect("n1");
  auto id = h.Submit(Spec());
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  h.Restart();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_RUNNING);
  v1::Register reg = Registration("n1");
  *reg.add_attempts() = Report(*id, 1, Phase::PHASE_EXITED);
  auto link = std::make_shared<RecordingLink>();
  ASSERT_TRUE(h.jm().AgentRegister(reg, link).ok());
  h.jm().Flush();
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(HasAck(link->Take(), *id, 1));
}

TEST(JobManager, StopsJobsPastTheirMaxRuntime) {
  Harness h;
  h.Connect("n1");
  v1::JobSpec spec = Spec();
  spec.set_max_runtime_seconds(10);
  auto id = h.Submit(spec);
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  h.Commands("n1");
  h.clock().AdvanceMs(9'000);
  h.Tick();
  EXPECT_TRUE(Kills(h.Commands("n1")).empty());
  h.clock().AdvanceMs(2'000);
  h.jm().AgentHeartbeat("n1");
  h.Tick();
  ASSERT_EQ(Kills(h.Commands("n1")).size(), 1u);
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED, 143));
  v1::Job job = h.Get(*id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(job.message().find("max runtime"), std::string::npos);
}

// A spec is checked against the nodes as they are now. The JobManager keeps the cluster's
// shape between submits; a node that registers (new, or again with other GPUs) makes it
// anew, so a spec refused as too large is accepted once a node that fits it is there.
TEST(JobManager, SpecsAreCheckedAgainstTheNodesRegisteredSoFar) {
  Harness h;
  h.Connect("n1", 4);
  auto refused = h.Submit(Spec(1, 8));
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("the largest node has 4"), std::string::npos)
      << refused.status();
  h.Connect("n2", 8);
  EXPECT_TRUE(h.Submit(Spec(1, 8)).ok()) << "n2 has 8 GPUs";
  auto two = h.Submit(Spec(2, 8));
  ASSERT_EQ(two.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(two.status().message().find("the cluster has 1"), std::string::npos) << two.status();
  h.Connect("n1", 8);  // registers again, with 8 GPUs now
  EXPECT_TRUE(h.Submit(Spec(2, 8)).ok()) << "two nodes with 8 GPUs";
}

TEST(JobManager, WatchersSeeEveryChangeUntilTheEnd) {
  Harness h;
  h.Connect("n1");
  auto id = h.Submit(Spec());
  std::mutex mu;
  std::vector<v1::JobState> seen;
  auto token = h.jm().Watch(*id, [&](const v1::Job& j) {
    std::lock_guard<std::mutex> lock(mu);
    if (seen.empty() || seen.back() != j.state()) seen.push_back(j.state());
  });
  ASSERT_TRUE(token.ok());
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED));
  h.jm().Unwatch(*token);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<v1::JobState>{v1::JOB_STATE_PENDING, v1::JOB_STATE_SCHEDULED,
                                             v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED}));
  EXPECT_EQ(h.jm().Watch(777, [](const v1::Job&) {}).status().code(), absl::StatusCode::kNotFound);
}

TEST(JobManager, LogsAreOnlyForTheJobsTenantAndStartedJobs) {
  Harness h;
  h.Connect("n1");
  auto id = h.Submit(Spec());
  v1::LogsRequest req;
  req.set_job_id(*id);
  EXPECT_EQ(h.jm().FindLogs(Alice(), req).status().code(), absl::StatusCode::kFailedPrecondition);
  h.Schedule();
  EXPECT_EQ(h.jm().FindLogs(Bob(), req).status().code(), absl::StatusCode::kPermissionDenied);
  auto target = h.jm().FindLogs(Alice(), req);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->node, "n1");
  EXPECT_EQ(target->attempt, 1u);
}

// Classes that may be evicted at once and wait 10 s, doubling, after each eviction.
JobManagerOptions QuickEvictions() {
  JobManagerOptions opts = TestOptions();
  for (auto& c : opts.policy.classes) {
    c.min_runtime_s = 0;
    c.cooldown_base_s = 10;
  }
  return opts;
}

v1::JobSpec Inference(uint32_t gpus) {
  v1::JobSpec s = Spec(1, gpus, {"serve"});
  s.set_priority_class("inference");
  s.set_restart_policy(v1::RESTART_POLICY_UNSPECIFIED);
  return s;
}

std::vector<v1::Preempt> Preempts(const std::vector<v1::CoordinatorCommand>& cmds) {
  std::vector<v1::Preempt> out;
  for (const auto& c : cmds) {
    if (c.has_preempt()) out.push_back(c.preempt());
  }
  return out;
}

// What an eviction says of the victim's checkpoint: a job that reports progress but has
// committed nothing restarts from the beginning; one that never reports progress (a
// plain torch script saving on SIGUSR1 by itself) has an unknown checkpoint.
TEST(JobManager, AnEvictionSaysWhetherTheCheckpointIsNoneOrUnknown) {
  for (bool reports : {true, false}) {
    Harness h(QuickEvictions());
    h.Connect("n1", /*gpus=*/2);
    auto train = h.Submit(Spec(1, 2));
    h.Schedule();
    v1::AttemptReport running = Report(*train, 1, Phase::PHASE_RUNNING);
    running.set_reports_progress(reports);
    running.set_checkpoint_step(-1);
    h.Report("n1", running);
    EXPECT_EQ(h.Get(*train).attempts(0).reports_progress(), reports);
    auto serve = h.Submit(Inference(2));
    h.Schedule();
    ASSERT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING);
    v1::AttemptReport done = Report(*train, 1, Phase::PHASE_EXITED);
    done.set_checkpoint_step(-1);
    h.Report("n1", done);
    std::string why = h.Get(*train).attempts(0).end_reason();
    EXPECT_NE(why.find(reports ? "no checkpoint: restarts from the beginning"
                               : "checkpoint unknown: the job does not report progress"),
              std::string::npos)
        << why;
    (void)serve;
  }
}

// A checkpoint committed just before the kill reaches the coordinator only with the end
// report: its time is the note's, not the report's, so the work after it still counts.
TEST(JobManager, ACheckpointHeardOnlyWithTheEndCountsFromWhenItWasCommitted) {
  Harness h(QuickEvictions());
  h.Connect("n1", /*gpus=*/2);
  auto train = h.Submit(Spec(1, 2));
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  h.clock().AdvanceMs(10'000);
  const int64_t committed = h.clock().NowMs() - 4'000;
  v1::AttemptReport done = Report(*train, 1, Phase::PHASE_EXITED);
  done.set_term_signal(SIGKILL);
  done.set_killed(true);
  done.set_checkpoint_step(25);
  done.set_checkpoint_time_ms(committed);
  h.Report("n1", done);
  const v1::Attempt a = h.Get(*train).attempts(0);
  EXPECT_EQ(a.checkpoint_step(), 25);
  EXPECT_EQ(a.checkpoint_time_ms(), committed);
  EXPECT_GT(a.ended_ms(), a.checkpoint_time_ms()) << "the 4 s since it are lost work";
}

// An attempt that saved and stopped while the coordinator was away is heard of only when
// it returns: its end and its checkpoint are both the node's times, so the outage is not
// counted as lost work.
TEST(JobManager, AnEndHeardAfterAnOutageKeepsTheNodesTimes) {
  Harness h(QuickEvictions());
  h.Connect("n1", /*gpus=*/2);
  auto train = h.Submit(Spec(1, 2));
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  const int64_t started = h.clock().NowMs();
  v1::AttemptReport done = Report(*train, 1, Phase::PHASE_EXITED);
  done.set_checkpoint_step(30);
  done.set_checkpoint_time_ms(started + 6'000);
  done.set_time_ms(started + 6'800);
  h.clock().AdvanceMs(20'000);  // the coordinator was away meanwhile
  h.Report("n1", done);
  const v1::Job job = h.Get(*train);
  const v1::Attempt& a = job.attempts(0);
  EXPECT_EQ(a.ended_ms(), started + 6'800);
  EXPECT_EQ(a.checkpoint_time_ms(), started + 6'000);
  EXPECT_DOUBLE_EQ(events::LostGpuSeconds(job, h.clock().NowMs()), 2 * 0.8)
      << "0.8 s on 2 GPUs since its checkpoint, not the outage";
}

TEST(JobManager, AHigherClassEvictsTrainingWhichCoolsDownAndResumes) {
  Harness h(QuickEvictions());
  h.Connect("n1", /*gpus=*/2);
  v1::JobSpec training = Spec(1, 2);
  training.set_grace_seconds(20);
  auto train = h.Submit(training);
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  v1::AttemptReport progress = Report(*train, 1, Phase::PHASE_RUNNING);
  progress.set_checkpoint_step(40);
  h.Report("n1", progress);
  h.Commands("n1");

  auto serve = h.Submit(Inference(2));
  h.Schedule();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING);
  EXPECT_EQ(h.State(*serve), v1::JOB_STATE_PENDING) << "waits for the victim to leave";
  auto preempts = Preempts(h.Commands("n1"));
  ASSERT_EQ(preempts.size(), 1u);
  EXPECT_EQ(preempts[0].job_id(), *train);
  EXPECT_EQ(preempts[0].deadline_ms(), h.clock().NowMs() + 20'000) << "now + its grace";
  EXPECT_EQ(h.Get(*train).attempts(0).evicted_for(), *serve);

  v1::AttemptReport done = Report(*train, 1, Phase::PHASE_EXITED);
  done.set_checkpoint_step(42);
  done.set_killed(true);
  h.Report("n1", done);
  v1::Job job = h.Get(*train);
  EXPECT_EQ(job.state(), v1::JOB_STATE_COOLDOWN);
  EXPECT_EQ(job.evictions(), 1u);
  EXPECT_EQ(job.failures(), 0u) << "evictions are not failures";
  EXPECT_NE(job.attempts(0).end_reason().find("step 42"), std::string::npos)
      << job.attempts(0).end_reason();
  EXPECT_EQ(job.cooldown_until_ms(), h.clock().NowMs() + 10'000);

  h.Schedule();
  EXPECT_EQ(h.State(*serve), v1::JOB_STATE_SCHEDULED) << "the room went to the preemptor";
  h.clock().AdvanceMs(9'000);
  h.jm().AgentHeartbeat("n1");
  h.Tick();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_COOLDOWN);
  h.clock().AdvanceMs(1'001);
  h.jm().AgentHeartbeat("n1");
  h.Tick();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_PENDING) << "cooldown over";
  h.Report("n1", Report(*serve, 1, Phase::PHASE_RUNNING));
  h.Schedule();
  EXPECT_EQ(h.Get(*train).attempts_size(), 1) << "the service holds the GPUs";
  ASSERT_TRUE(h.Cancel(*serve).ok());
  h.Report("n1", Report(*serve, 1, Phase::PHASE_EXITED, 143));
  h.Schedule();
  job = h.Get(*train);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SCHEDULED) << "training resumes as attempt 2";
  EXPECT_EQ(job.attempts_size(), 2);
}

TEST(JobManager, ExplainNamesTheVictimsTheNextPassEvicts) {
  Harness h(QuickEvictions());
  h.Connect("n1", 1);
  auto train = h.Submit(Spec(1, 1));
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  auto serve = h.Submit(Inference(1));
  auto ex = h.jm().Explain(*serve);
  ASSERT_TRUE(ex.ok()) << ex.status();
  ASSERT_EQ(ex->would_evict_size(), 1);
  EXPECT_EQ(ex->would_evict(0), *train);
  EXPECT_FALSE(ex->text().empty());
  h.Schedule();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING) << "the pass agrees with explain";
  auto running = h.jm().Explain(*train);
  EXPECT_EQ(running->outcome(), "preempting");
  EXPECT_EQ(h.jm().Explain(424242).status().code(), absl::StatusCode::kNotFound);
}

TEST(JobManager, AnEvictionInProgressSurvivesACoordinatorRestart) {
  Harness h(QuickEvictions());
  h.Connect("n1", 1);
  auto train = h.Submit(Spec(1, 1));
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  ASSERT_TRUE(h.Submit(Inference(1)).ok());
  h.Schedule();
  ASSERT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING);
  h.Restart();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING);
  v1::Register reg = Registration("n1", 1);
  *reg.add_attempts() = Report(*train, 1, Phase::PHASE_RUNNING);
  auto link = std::make_shared<RecordingLink>();
  ASSERT_TRUE(h.jm().AgentRegister(reg, link).ok());
  h.jm().Flush();
  ASSERT_EQ(Preempts(link->Take()).size(), 1u) << "the agent is told again";
  h.jm().AgentReport("n1", Report(*train, 1, Phase::PHASE_EXITED));
  h.jm().Flush();
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_COOLDOWN);
}

TEST(JobManager, SignalsReachEveryNodeOfARunningGang) {
  Harness h;
  h.Connect("n1");
  h.Connect("n2");
  auto id = h.Submit(Spec(/*nodes=*/2));
  EXPECT_EQ(h.jm().Signal(Alice(), *id, SIGUSR1).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "pending: nothing to signal";
  h.Schedule();
  for (const char* n : {"n1", "n2"}) h.Report(n, Report(*id, 1, Phase::PHASE_RUNNING));
  h.Commands("n1");
  h.Commands("n2");
  EXPECT_EQ(h.jm().Signal(Bob(), *id, SIGUSR1).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(h.jm().Signal(Alice(), *id, SIGKILL).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(h.jm().Signal(Alice(), *id, SIGUSR1).ok());
  for (const char* n : {"n1", "n2"}) {
    auto cmds = h.Commands(n);
    ASSERT_EQ(cmds.size(), 1u) << n;
    ASSERT_TRUE(cmds[0].has_signal());
    EXPECT_EQ(cmds[0].signal().signal(), SIGUSR1);
    EXPECT_EQ(cmds[0].signal().attempt(), 1u);
  }
  EXPECT_EQ(h.State(*id), v1::JOB_STATE_RUNNING) << "a signal changes no state";
}

TEST(JobManager, ExecSecretsGoToAgentsOnly) {
  Harness h;
  h.Connect("n1");
  auto id = h.Submit(Spec());
  h.Schedule();
  auto launches = Launches(h.Commands("n1"));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].exec_secret().size(), 32u) << "128 random bits, hex";
  EXPECT_EQ(launches[0].exec_secret().find_first_not_of("0123456789abcdef"), std::string::npos);
  ASSERT_EQ(launches[0].agent_addresses_size(), 1);
  // The public messages have no field for it: the secret appears in none of their bytes.
  const std::string secret = launches[0].exec_secret();
  EXPECT_EQ(h.Get(*id).SerializeAsString().find(secret), std::string::npos);
  v1::ListRequest all;
  EXPECT_EQ(h.jm().List(Admin(), all)->jobs(0).SerializeAsString().find(secret), std::string::npos);
  std::string watched;
  auto token = h.jm().Watch(*id, [&](const v1::Job& j) { watched = j.SerializeAsString(); });
  EXPECT_EQ(watched.find(secret), std::string::npos);
  h.jm().Unwatch(*token);
  h.Restart();
  auto link = std::make_shared<RecordingLink>();
  ASSERT_TRUE(h.jm().AgentRegister(Registration("n1"), link).ok());
  h.jm().Flush();
  auto resent = Launches(link->Take());
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0].exec_secret(), launches[0].exec_secret()) << "stored for relaunches";
}

TEST(JobManager, LogsOfARankComeFromTheNodeThatRanIt) {
  Harness h;
  h.Connect("n1");
  h.Connect("n2");
  v1::JobSpec spec = Spec(/*nodes=*/2);
  spec.set_ranks_per_node(4);
  auto id = h.Submit(spec);
  h.Schedule();
  v1::LogsRequest req;
  req.set_job_id(*id);
  req.set_rank(5);
  auto target = h.jm().FindLogs(Alice(), req);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->node, "n2") << "ranks 4..7 run on the second node";
  req.set_rank(3);
  EXPECT_EQ(h.jm().FindLogs(Alice(), req)->node, "n1");
  req.set_rank(8);
  EXPECT_EQ(h.jm().FindLogs(Alice(), req).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- the policy admins set at run time ----------------------------------------------------

absl::StatusOr<v1::PolicyVersion> SetPolicy(Harness& h, const Caller& who, const std::string& yaml,
                                            bool dry_run = false) {
  v1::SetPolicyRequest req;
  req.set_yaml(yaml);
  req.set_comment("more urgency");
  req.set_dry_run(dry_run);
  std::promise<absl::StatusOr<v1::PolicyVersion>> p;
  h.jm().SetPolicy(who, req, [&](absl::StatusOr<v1::PolicyVersion> v) { p.set_value(v); });
  return p.get_future().get();
}

TEST(JobManager, AdminsSetAVersionedPolicyThatOutlivesRestarts) {
  const std::string urgent =
      "classes:\n"
      "  - {name: inference, value: 900, service: true}\n"
      "  - {name: urgent, value: 950}\n"
      "  - {name: training, value: 300}\n";
  Harness h;
  v1::JobSpec spec = Spec();
  spec.set_priority_class("urgent");
  EXPECT_EQ(h.Submit(spec).status().code(), absl::StatusCode::kInvalidArgument)
      << "no such class yet";
  EXPECT_EQ(h.jm().GetPolicy().version(), 0u);

  EXPECT_EQ(SetPolicy(h, Alice(), urgent).status().code(), absl::StatusCode::kPermissionDenied);
  auto bad = SetPolicy(h, Admin(), "classes:\n  - {name: urgent, value: -5}\n");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto dry = SetPolicy(h, Admin(), urgent, /*dry_run=*/true);
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_EQ(dry->version(), 1u);
  EXPECT_EQ(h.jm().GetPolicy().version(), 0u) << "a dry run stores nothing";
  EXPECT_EQ(h.Submit(spec).status().code(), absl::StatusCode::kInvalidArgument);

  auto set = SetPolicy(h, Admin(), urgent);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->version(), 1u);
  EXPECT_EQ(set->author(), "root");
  auto id = h.Submit(spec);
  ASSERT_TRUE(id.ok()) << id.status();

  h.Restart();
  v1::PolicyVersion now = h.jm().GetPolicy();
  EXPECT_EQ(now.version(), 1u);
  EXPECT_EQ(now.yaml(), urgent);
  EXPECT_EQ(now.comment(), "more urgency");
  EXPECT_TRUE(h.Submit(spec).ok()) << "the stored policy is back after a restart";
  auto next = SetPolicy(h, Admin(), "");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->version(), 2u) << "versions keep counting across restarts";
  EXPECT_EQ(h.Submit(spec).status().code(), absl::StatusCode::kInvalidArgument)
      << "an empty policy is the built-in default again";
}

TEST(JobManager, FairShareUsageOutlivesACoordinatorRestart) {
  JobManagerOptions opts = TestOptions();
  opts.usage_save_interval = absl::Seconds(30);
  Harness h(opts);
  h.Connect("n1", /*gpus=*/2);
  auto train = h.Submit(Spec(1, 2));
  ASSERT_TRUE(train.ok());
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  auto usage = [&] {
    v1::SharesResponse shares = h.jm().Shares();
    for (const auto& t : shares.tenants()) {
      if (t.tenant() == "vision") return t.usage_gpu_seconds();
    }
    return -1.0;
  };
  h.clock().AdvanceMs(100'000);
  h.jm().AgentHeartbeat("n1");
  h.Tick();  // 100 s since the last save: the ledger is charged and stored
  double before = usage();
  EXPECT_NEAR(before, 200, 1) << "2 GPUs for 100 s (a day's half-life decays little)";
  h.Restart();
  EXPECT_NEAR(usage(), before, 1) << "a restart forgives nothing";
  v1::SharesResponse shares = h.jm().Shares();
  ASSERT_GT(shares.tenants_size(), 0);
  EXPECT_EQ(shares.tenants(0).half_life_seconds(), 24 * 3600);
}

TEST(JobManagerNodes, AHeartbeatsGpuSampleIsListedForTheNodesOwnGpusOnly) {
  Harness h;
  h.Connect("n1", /*gpus=*/2);
  EXPECT_EQ(h.jm().ListNodes()[0].gpu_utilization_size(), 0) << "nothing sampled yet";
  v1::Heartbeat hb;
  hb.set_gpus_sampled_ms(1'800'000'000'000);
  auto add = [&hb](const std::string& uuid, std::optional<uint32_t> percent) {
    v1::GpuUtilization* u = hb.add_gpus();
    u->set_uuid(uuid);
    if (percent) u->set_percent(*percent);
    u->set_memory_used_bytes(1 << 30);
  };
  add("GPU-n9-0", 50);   // another node's GPU: an agent speaks for its own only
  add("GPU-n1-1", 250);  // no reading
  add("GPU-n1-0", 42);
  h.jm().AgentHeartbeat("n1", hb);
  v1::Node n = h.jm().ListNodes()[0];
  ASSERT_EQ(n.gpu_utilization_size(), 2) << n.DebugString();
  EXPECT_EQ(n.gpu_utilization(0).uuid(), "GPU-n1-0") << "in the inventory's order";
  EXPECT_EQ(n.gpu_utilization(0).percent(), 42u);
  EXPECT_EQ(n.gpu_utilization(1).uuid(), "GPU-n1-1");
  EXPECT_FALSE(n.gpu_utilization(1).has_percent()) << "over 100% is no reading";
  EXPECT_EQ(n.utilization_ms(), 1'800'000'000'000);
  h.jm().AgentHeartbeat("n1");  // a heartbeat without a sample keeps the last one
  EXPECT_EQ(h.jm().ListNodes()[0].gpu_utilization_size(), 2);
}

}  // namespace
}  // namespace baton::testing
