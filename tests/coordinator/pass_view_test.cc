// The scheduler's view of the coordinator's tables (pass_view.h), built from a job table
// and a node registry alone: no JobManager, no store, no clock.
#include "coordinator/pass_view.h"

#include "coordinator/job_state.h"
#include "coordinator/sched_adapter.h"
#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::pass_view_test {
namespace {

const absl::Time kNow = absl::FromUnixMillis(1'700'000'000'000);

int32_t ClassValue(const std::string& cls) { return cls == "inference" ? 100 : 10; }

v1::Job MakeJob(uint64_t id, const std::string& cls, v1::JobState state, int64_t submitted_ms) {
  v1::Job job;
  job.set_id(id);
  job.mutable_spec()->set_priority_class(cls);
  job.mutable_spec()->set_tenant("t" + std::to_string(id));
  job.mutable_spec()->set_gpus_per_node(1);
  job.mutable_spec()->set_nodes(1);
  job.set_state(state);
  job.set_submitted_ms(submitted_ms);
  return job;
}

v1::Attempt* AddAttempt(v1::Job& job, const std::vector<std::string>& nodes) {
  v1::Attempt* a = job.add_attempts();
  a->set_number(job.attempts_size());
  a->set_scheduled_ms(1'000);
  a->set_started_ms(2'000);
  for (size_t i = 0; i < nodes.size(); ++i) {
    v1::NodeAssignment* p = a->add_placement();
    p->set_node(nodes[i]);
    p->set_node_rank(i);
    p->add_gpu_ids(nodes[i] + "-gpu0");
    p->set_cpu_millis(1000);
  }
  return a;
}

NodeRegistry::Table Nodes(const std::vector<std::string>& names) {
  NodeRegistry::Table t;
  for (const auto& name : names) {
    NodeRegistry::Entry& e = t[name];
    e.node.set_name(name);
    e.node.set_state(v1::NODE_STATE_READY);
    e.node.mutable_inventory()->set_cpus(8);
    e.node.mutable_inventory()->set_memory_bytes(uint64_t{1} << 34);
    for (int g = 0; g < 2; ++g) {
      e.node.mutable_inventory()->add_gpus()->set_uuid(name + "-gpu" + std::to_string(g));
    }
  }
  return t;
}

// A service in its restart backoff until `cooldown_until`, last placed on `nodes`.
v1::Job BackingOffService(uint64_t id, const std::vector<std::string>& nodes,
                          absl::Time cooldown_until) {
  v1::Job job = MakeJob(id, "inference", v1::JOB_STATE_PENDING, 500);
  job.mutable_spec()->set_restart_policy(v1::RESTART_POLICY_ALWAYS);
  job.set_restarts_in_a_row(1);
  job.set_cooldown_until_ms(absl::ToUnixMillis(cooldown_until));
  AddAttempt(job, nodes);
  return job;
}

TEST(PassView, LostNodesAreLeftOutAndGangsHoldOnlyWhereTheyStillRun) {
  NodeRegistry::Table nodes = Nodes({"a", "b", "c"});
  nodes["c"].node.set_state(v1::NODE_STATE_LOST);
  JobTable jobs(ClassValue);
  JobEntry& running = jobs.Add(MakeJob(1, "training", v1::JOB_STATE_RUNNING, 100));
  AddAttempt(running.job, {"a", "b"});
  LiveAttempt live;
  live.nodes = {{"a", AttemptPhase::kRunning}, {"b", AttemptPhase::kExited}};
  live.kill_signal = 10;
  live.evicting_for = 7;
  jobs.StartAttempt(running, std::move(live));

  sched::ClusterView view = ViewOf(jobs, nodes, {}, kNow);
  ASSERT_EQ(view.nodes.size(), 2u);
  EXPECT_EQ(view.nodes[0].name, "a");
  EXPECT_EQ(view.nodes[1].name, "b");
  ASSERT_EQ(view.running.size(), 1u);
  const sched::RunningGang& g = view.running[0];
  EXPECT_EQ(g.id, 1u);
  EXPECT_EQ(g.tenant, "t1");
  ASSERT_EQ(g.nodes.size(), 1u) << "b's part has exited: it holds nothing there";
  EXPECT_EQ(g.nodes[0].node, "a");
  EXPECT_EQ(g.nodes[0].gpu_uuids, std::vector<std::string>{"a-gpu0"});
  EXPECT_EQ(g.started, 2'000);
  EXPECT_TRUE(g.evicting) << "a stop was ordered";
  EXPECT_EQ(g.evicting_for, 7u);
  EXPECT_TRUE(view.pending.empty());
}

TEST(PassView, TheQueueComesInItsOrderWithEachJobsReservation) {
  JobTable jobs(ClassValue);
  jobs.Add(MakeJob(1, "training", v1::JOB_STATE_PENDING, 100));
  jobs.Add(MakeJob(2, "inference", v1::JOB_STATE_PENDING, 300));
  jobs.Add(MakeJob(3, "training", v1::JOB_STATE_PENDING, 50));
  jobs.Add(MakeJob(4, "training", v1::JOB_STATE_COOLDOWN, 10));  // not in the queue
  ReservedNodes reserved{{1, {"b"}}, {9, {"a"}}};

  sched::ClusterView view = ViewOf(jobs, Nodes({"a", "b"}), reserved, kNow);
  ASSERT_EQ(view.pending.size(), 3u);
  EXPECT_EQ(view.pending[0].id, 2u) << "the higher class first";
  EXPECT_EQ(view.pending[1].id, 3u) << "then by submit time";
  EXPECT_EQ(view.pending[2].id, 1u);
  EXPECT_EQ(view.pending[2].reserved_nodes, std::vector<std::string>{"b"});
  EXPECT_TRUE(view.pending[0].reserved_nodes.empty());
  EXPECT_EQ(view.pending[0].request.gpus_per_node, 1u);
  EXPECT_TRUE(view.running.empty());
}

TEST(PassView, AServiceInItsRestartBackoffKeepsItsPlacementUntilItEndsOrANodeIsDrained) {
  NodeRegistry::Table nodes = Nodes({"a", "b"});
  JobTable jobs(ClassValue);
  JobEntry& svc = jobs.Add(BackingOffService(5, {"a", "b"}, kNow + absl::Seconds(3)));

  EXPECT_TRUE(HoldsForRestart(svc, nodes, kNow));
  sched::ClusterView view = ViewOf(jobs, nodes, {}, kNow);
  ASSERT_EQ(view.running.size(), 1u) << "held: nobody takes its GPUs meanwhile";
  EXPECT_EQ(view.running[0].id, 5u);
  EXPECT_EQ(view.running[0].nodes.size(), 2u) << "every node of its last placement";
  ASSERT_EQ(view.pending.size(), 1u) << "and it waits to be placed again";
  EXPECT_EQ(view.pending[0].id, 5u);

  EXPECT_FALSE(HoldsForRestart(svc, nodes, kNow + absl::Seconds(3))) << "the backoff is over";
  EXPECT_TRUE(ViewOf(jobs, nodes, {}, kNow + absl::Seconds(3)).running.empty());

  nodes["b"].node.mutable_drain()->set_by("admin");
  EXPECT_FALSE(HoldsForRestart(svc, nodes, kNow)) << "one of its nodes was drained";

  v1::Job batch = BackingOffService(6, {"a"}, kNow + absl::Seconds(3));
  batch.mutable_spec()->set_restart_policy(v1::RESTART_POLICY_NEVER);
  EXPECT_FALSE(HoldsForRestart(JobEntry{batch}, Nodes({"a"}), kNow)) << "only services";
  v1::Job first_start = BackingOffService(7, {"a"}, kNow + absl::Seconds(3));
  first_start.set_restarts_in_a_row(0);
  EXPECT_FALSE(HoldsForRestart(JobEntry{first_start}, Nodes({"a"}), kNow));
}

TEST(PassView, ShapeCountsEveryKnownNode) {
  NodeRegistry::Table nodes = Nodes({"a", "b", "c"});
  nodes["c"].node.set_state(v1::NODE_STATE_LOST);
  nodes["c"].node.mutable_inventory()->clear_gpus();
  nodes["b"].node.mutable_inventory()->set_cpus(64);
  ClusterShape shape = ShapeOf(nodes);
  EXPECT_EQ(shape.nodes, 3u) << "lost nodes may return: admission counts them";
  EXPECT_EQ(shape.max_gpus_per_node, 2u);
  EXPECT_EQ(shape.max_cpu_millis_per_node, 64'000u);
  EXPECT_EQ(shape.nodes_with_at_least_gpus, (std::vector<uint32_t>{3, 2, 2}));
  EXPECT_EQ(ShapeOf({}).nodes, 0u);
}

TEST(PassView, OnlyPreemptionReservationsPassToTheNextPass) {
  sched::ClusterView view = ViewOf(JobTable(ClassValue), Nodes({"a", "b", "c"}), {}, kNow);
  sched::Decisions d;
  d.reservations.push_back(
      {.job = 1, .kind = sched::Reservation::Kind::kPreemption, .nodes = {0, 2}});
  d.reservations.push_back({.job = 2, .kind = sched::Reservation::Kind::kHeadOfLine, .nodes = {1}});
  ReservedNodes r = ReservationsOf(d, view);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r.at(1), (std::vector<std::string>{"a", "c"}));
}

TEST(PassView, AMasterPortIsUniqueAmongTheAttemptsLedFromTheSameNode) {
  JobTable jobs(ClassValue);
  // Jobs kMasterPorts apart start their search at the same port (PickMasterPort).
  std::set<uint32_t> ports;
  for (uint64_t id : {uint64_t{1}, 1 + uint64_t{kMasterPorts}, 1 + 2 * uint64_t{kMasterPorts}}) {
    JobEntry& e = jobs.Add(MakeJob(id, "training", v1::JOB_STATE_RUNNING, 100));
    v1::Attempt* a = AddAttempt(e.job, {"a"});
    a->set_master_port(MasterPortFor(jobs, id, 1, "a"));
    EXPECT_TRUE(ports.insert(a->master_port()).second) << "job " << id << " reuses a port";
    jobs.StartAttempt(e, LiveAttempt{.nodes = {{"a", AttemptPhase::kRunning}}});
  }
  EXPECT_EQ(*ports.begin(), PickMasterPort(1, 1, {}));
  // Led from another node, a job may take a port that attempts led from "a" hold.
  EXPECT_EQ(MasterPortFor(jobs, 1 + 3 * uint64_t{kMasterPorts}, 1, "b"), PickMasterPort(1, 1, {}));
}

// What a new attempt records of its placement (AssignmentOf) is what the next pass sees
// held (HeldOf), as the scheduler itself would hold it (ToHeld).
TEST(PassView, AnAttemptRecordsItsPlacementAsTheNextPassHoldsIt) {
  sched::ClusterView view = ViewOf(JobTable(ClassValue), Nodes({"a", "b"}), {}, kNow);
  sched::Placement placement{.job = 9, .nodes = {}};
  placement.nodes.push_back(
      {.node = 1,
       .gpus = {0, 1},
       .cpu_millis = 2000,
       .memory_bytes = 1 << 30,
       .ranks = {{.numa = 0, .gpus = {0}, .cpus = {6, 7}}, {.numa = 1, .gpus = {1}, .cpus = {}}}});
  placement.nodes.push_back({.node = 0,
                             .gpus = {1},
                             .cpu_millis = 500,
                             .memory_bytes = 0,
                             .ranks = {{.numa = -1, .gpus = {1}, .cpus = {}}}});
  std::vector<sched::HeldNode> held = sched::ToHeld(view, placement);
  ASSERT_EQ(held.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    const sched::NodePlacement& np = placement.nodes[i];
    v1::NodeAssignment a = AssignmentOf(np, view.nodes[np.node], i, 2, "10.0.0.7:7071");
    EXPECT_EQ(a.node_rank(), i);
    EXPECT_EQ(a.first_rank(), 2 * i) << "two ranks per node";
    EXPECT_EQ(a.address(), "10.0.0.7") << "the host, without the agent's port";
    sched::HeldNode back = HeldOf(a);
    EXPECT_EQ(back.node, held[i].node);
    EXPECT_EQ(back.gpu_uuids, held[i].gpu_uuids);
    EXPECT_EQ(back.cpu_millis, held[i].cpu_millis);
    EXPECT_EQ(back.memory_bytes, held[i].memory_bytes);
    ASSERT_EQ(back.ranks.size(), held[i].ranks.size());
    for (size_t r = 0; r < back.ranks.size(); ++r) {
      EXPECT_EQ(back.ranks[r].numa, held[i].ranks[r].numa);
      EXPECT_EQ(back.ranks[r].cpus, held[i].ranks[r].cpus);
    }
  }
  EXPECT_EQ(AssignmentOf(placement.nodes[0], view.nodes[1], 0, 1, "[::1]:7071").address(), "[::1]");
}

TEST(PassView, NodesShowWhatThePartsStillRunningThereTake) {
  NodeRegistry::Table nodes = Nodes({"a", "b", "c"});
  nodes["c"].node.set_state(v1::NODE_STATE_LOST);
  JobTable jobs(ClassValue);
  JobEntry& gang = jobs.Add(MakeJob(1, "training", v1::JOB_STATE_RUNNING, 100));
  v1::Attempt* a1 = AddAttempt(gang.job, {"a", "b", "z"});  // z: a node no longer known
  a1->mutable_placement(0)->set_memory_bytes(1 << 20);
  for (const char* node : {"a", "b"}) a1->add_isolation()->set_node(node);
  LiveAttempt live;
  live.nodes = {
      {"a", AttemptPhase::kRunning}, {"b", AttemptPhase::kExited}, {"z", AttemptPhase::kRunning}};
  jobs.StartAttempt(gang, std::move(live));
  JobEntry& other = jobs.Add(MakeJob(2, "inference", v1::JOB_STATE_SCHEDULED, 200));
  AddAttempt(other.job, {"a"});
  LiveAttempt launching;
  launching.nodes = {{"a", AttemptPhase::kLaunching}};
  jobs.StartAttempt(other, std::move(launching));
  v1::Job done = MakeJob(3, "training", v1::JOB_STATE_SUCCEEDED, 300);
  AddAttempt(done, {"c"});
  jobs.Add(std::move(done));  // holds nothing

  std::vector<v1::Node> out = NodesOf(jobs, nodes);
  ASSERT_EQ(out.size(), 3u) << "every known node, a lost one too";
  EXPECT_EQ(out[0].name(), "a");
  EXPECT_EQ(out[0].allocated_cpu_millis(), 2000u);
  EXPECT_EQ(out[0].allocated_memory_bytes(), uint64_t{1} << 20);
  EXPECT_EQ(out[0].allocated_gpus(), 2u);
  EXPECT_EQ(std::vector<uint64_t>(out[0].running_jobs().begin(), out[0].running_jobs().end()),
            (std::vector<uint64_t>{1, 2}));
  ASSERT_EQ(out[0].attempts_size(), 1) << "only this node's isolation report";
  EXPECT_EQ(out[0].attempts(0).node(), "a");
  EXPECT_EQ(out[1].allocated_cpu_millis(), 0u) << "the part on b has ended";
  EXPECT_EQ(out[1].running_jobs_size(), 0);
  EXPECT_EQ(out[1].attempts_size(), 0);
  EXPECT_EQ(out[2].state(), v1::NODE_STATE_LOST);
  EXPECT_EQ(out[2].allocated_gpus(), 0u) << "a finished job holds nothing";
}

// A placement becomes the job's next attempt: numbered after its last, node rank i on the
// placement's i-th node with that node's agent host, and a master port that no other live
// attempt led from the same first node holds.
TEST(PassView, ANewAttemptIsNumberedAfterTheLastAndRanksFollowThePlacement) {
  NodeRegistry::Table nodes = Nodes({"a", "b"});
  nodes["a"].node.set_address("10.0.0.1:7071");
  nodes["b"].node.set_address("10.0.0.2:7071");
  JobTable jobs(ClassValue);
  // Another job's live attempt, led from "b", holds the port job 5 would pick first there.
  JobEntry& other = jobs.Add(MakeJob(4, "training", v1::JOB_STATE_RUNNING, 100));
  v1::Attempt* held = AddAttempt(other.job, {"b"});
  v1::Job job = MakeJob(5, "training", v1::JOB_STATE_PENDING, 200);
  job.mutable_spec()->set_ranks_per_node(2);
  AddAttempt(job, {"a"});  // attempt 1, evicted
  held->set_master_port(PickMasterPort(job.id(), 2, {}));
  jobs.StartAttempt(other, LiveAttempt{.nodes = {{"b", AttemptPhase::kRunning}}});
  sched::ClusterView view = ViewOf(jobs, nodes, {}, kNow);
  ASSERT_EQ(view.nodes[1].name, "b");
  sched::Placement placement{.job = 5, .nodes = {}};
  placement.nodes.push_back({.node = 1, .gpus = {1}, .cpu_millis = 0, .memory_bytes = 0});
  placement.nodes.push_back({.node = 0, .gpus = {0}, .cpu_millis = 0, .memory_bytes = 0});

  const v1::Attempt a = NewAttempt(jobs, nodes, job, placement, view, kNow);
  EXPECT_EQ(job.attempts_size(), 1) << "the job itself is not changed";
  EXPECT_EQ(a.number(), 2u);
  EXPECT_EQ(a.scheduled_ms(), absl::ToUnixMillis(kNow));
  EXPECT_EQ(a.started_ms(), 0);
  EXPECT_EQ(a.checkpoint_step(), -1) << "no checkpoint yet";
  EXPECT_NE(a.master_port(), held->master_port()) << "job 4's attempt leads from b on it";
  EXPECT_EQ(a.master_port(), MasterPortFor(jobs, 5, 2, "b"));
  ASSERT_EQ(a.placement_size(), 2);
  const struct {
    std::string node, address, gpu;
    uint32_t first_rank;
  } want[] = {{"b", "10.0.0.2", "b-gpu1", 0}, {"a", "10.0.0.1", "a-gpu0", 2}};
  for (int i = 0; i < 2; ++i) {
    const v1::NodeAssignment& p = a.placement(i);
    EXPECT_EQ(p.node(), want[i].node) << "node rank " << i;
    EXPECT_EQ(p.node_rank(), static_cast<uint32_t>(i));
    EXPECT_EQ(p.address(), want[i].address) << "node rank " << i;
    ASSERT_EQ(p.gpu_ids_size(), 1);
    EXPECT_EQ(p.gpu_ids(0), want[i].gpu);
    EXPECT_EQ(p.first_rank(), want[i].first_rank) << "two ranks per node";
  }
}

// A pending job that waits shows each pass's reason; the event log hears only a new kind
// of wait, and the same kind again after any other event about the job.
TEST(PassView, AWaitIsLoggedWhenItsKindChanges) {
  using sched::Outcome;
  const struct {
    const char* what;
    v1::JobState state;
    int said_before;  // -1: an event since
    Outcome outcome;
    const char* reason;
    const char* message_after;  // "" = unchanged ("before")
    const char* code;           // "" = no event
  } rows[] = {
      {"first wait", v1::JOB_STATE_PENDING, -1, Outcome::kWaitForCapacity, "no room", "no room",
       "waiting_for_capacity"},
      {"same kind, new wording", v1::JOB_STATE_PENDING, static_cast<int>(Outcome::kWaitForCapacity),
       Outcome::kWaitForCapacity, "still no room", "still no room", ""},
      {"a new kind", v1::JOB_STATE_PENDING, static_cast<int>(Outcome::kWaitForCapacity),
       Outcome::kReserved, "room is held", "room is held", "reserved"},
      {"quota", v1::JOB_STATE_PENDING, -1, Outcome::kWaitForQuota, "over quota", "over quota",
       "waiting_for_quota"},
      {"cooldown", v1::JOB_STATE_PENDING, -1, Outcome::kInCooldown, "cooling", "cooling",
       "in_cooldown"},
      {"never fits", v1::JOB_STATE_PENDING, -1, Outcome::kInfeasible, "too big", "too big",
       "infeasible"},
      {"placed", v1::JOB_STATE_PENDING, -1, Outcome::kPlaced, "on a", "", ""},
      {"not pending", v1::JOB_STATE_SCHEDULED, -1, Outcome::kWaitForCapacity, "no room", "", ""},
  };
  for (const auto& row : rows) {
    JobEntry e;
    e.job = MakeJob(7, "training", row.state, 100);
    e.job.set_message("before");
    e.said_wait = row.said_before;
    const std::optional<v1::Event> ev =
        NoteWait(e, {.job = 7, .outcome = row.outcome, .position = 1, .reason = row.reason});
    const std::string message = *row.message_after ? row.message_after : "before";
    EXPECT_EQ(e.job.message(), message) << row.what;
    ASSERT_EQ(ev.has_value(), *row.code != 0) << row.what;
    if (!ev) continue;
    EXPECT_EQ(ev->code(), row.code) << row.what;
    EXPECT_EQ(ev->reason(), row.reason) << row.what;
    EXPECT_EQ(ev->job_id(), 7u) << row.what;
    EXPECT_EQ(ev->kind(), row.outcome == Outcome::kWaitForQuota ? v1::EVENT_KIND_QUOTA_REFUSAL
                                                                : v1::EVENT_KIND_SCHEDULING)
        << row.what;
    EXPECT_EQ(e.said_wait, static_cast<int>(row.outcome)) << row.what;
  }
}

}  // namespace
}  // namespace baton::pass_view_test
