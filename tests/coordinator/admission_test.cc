// Spec admission, the state machine and first-fit placement: the pure pieces.
#include <functional>

#include "coordinator/job_state.h"
#include "coordinator/spec_validation.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

Caller Alice() {
  Caller c;
  c.user = "alice";
  c.uid = 1001;
  return c;
}

// alice is a member of vision, which may also run services.
Policy AdmissionPolicy() {
  Policy p = Policy::Default();
  p.access.members = {{"vision", {"alice"}}};
  p.access.class_tenants = {{"inference", {"vision"}}};
  return p;
}

ClusterShape TwoNodesOf4Gpus() {
  ClusterShape s;
  s.nodes = 2;
  s.max_gpus_per_node = 4;
  s.max_cpu_millis_per_node = 32'000;
  s.max_memory_bytes_per_node = 256ull << 30;
  s.nodes_with_at_least_gpus = {2, 2, 2, 2, 2};
  return s;
}

absl::Status Admit(v1::JobSpec* spec, ClusterShape shape = TwoNodesOf4Gpus()) {
  return ValidateAndDefaultSpec(Alice(), AdmissionPolicy(), shape, spec);
}

v1::JobSpec Minimal() {
  v1::JobSpec s;
  s.add_command("/usr/bin/python3");
  return s;
}

std::string Why(const absl::Status& s) { return std::string(s.message()); }

TEST(Admission, FillsDefaultsFromCallerAndPolicy) {
  v1::JobSpec s = Minimal();
  ASSERT_TRUE(Admit(&s).ok());
  EXPECT_EQ(s.name(), "python3");
  EXPECT_EQ(s.tenant(), "vision");
  EXPECT_EQ(s.priority_class(), "training");
  EXPECT_EQ(s.nodes(), 1u);
  EXPECT_EQ(s.ranks_per_node(), 1u);
  EXPECT_EQ(s.cpu_millis_per_node(), 1000u);
  EXPECT_EQ(s.memory_bytes_per_node(), 1ull << 30);
  EXPECT_EQ(s.grace_seconds(), 30u);
  EXPECT_EQ(s.launch_mode(), v1::LAUNCH_MODE_DIRECT);
  EXPECT_EQ(s.restart_policy(), v1::RESTART_POLICY_ON_FAILURE);
  EXPECT_EQ(s.max_restarts(), 3u);
}

TEST(Admission, MaxRestartsZeroMeansNoRetriesAndUnsetTakesTheDefault) {
  v1::JobSpec zero = Minimal();
  zero.set_max_restarts(0);
  ASSERT_TRUE(Admit(&zero).ok());
  EXPECT_EQ(zero.max_restarts(), 0u) << "0 is the user's choice, not 'unset'";
  // An explicit restart policy without a count still gets the policy's default.
  v1::JobSpec on_failure = Minimal();
  on_failure.set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
  ASSERT_TRUE(Admit(&on_failure).ok());
  EXPECT_EQ(on_failure.max_restarts(), 3u);
}

TEST(Admission, InferenceIsAServiceThatAlwaysRestarts) {
  v1::JobSpec s = Minimal();
  s.set_priority_class("inference");
  ASSERT_TRUE(Admit(&s).ok());
  EXPECT_EQ(s.restart_policy(), v1::RESTART_POLICY_ALWAYS);
  s.set_max_runtime_seconds(60);
  EXPECT_NE(Why(Admit(&s)).find("max_runtime_seconds"), std::string::npos);
}

TEST(Admission, TrainingOnAMigSliceIsRefusedInEitherModeNamingMig) {
  // Direct mode (no mpi) and mpi alike: MIG slices are inference's.
  for (bool mpi : {false, true}) {
    v1::JobSpec s = Minimal();
    s.set_gpus_per_node(1);
    s.set_mig_profile("1g.18gb");
    s.set_launch_mode(mpi ? v1::LAUNCH_MODE_MPI : v1::LAUNCH_MODE_DIRECT);
    absl::Status st = Admit(&s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << "mpi " << mpi;
    EXPECT_NE(Why(st).find("never runs on a MIG slice"), std::string::npos) << Why(st);
  }
}

// A policy whose inference class may share GPUs (classes[].gpu_sharing: mps).
Policy SharingPolicy() {
  Policy p = AdmissionPolicy();
  for (auto& c : p.classes) {
    if (c.name == "inference") c.gpu_sharing = "mps";
  }
  return p;
}

v1::JobSpec Share(uint32_t percent, uint64_t gpu_memory) {
  v1::JobSpec s = Minimal();
  s.set_priority_class("inference");
  s.set_gpu_share_percent(percent);
  s.set_gpu_memory_bytes(gpu_memory);
  return s;
}

TEST(Admission, AShareOfOneGpuForOneRankInAClassThatMayShare) {
  ClusterShape shape = TwoNodesOf4Gpus();
  shape.max_gpu_memory_bytes = 80ull << 30;
  v1::JobSpec s = Share(25, 20ull << 30);
  ASSERT_TRUE(ValidateAndDefaultSpec(Alice(), SharingPolicy(), shape, &s).ok());
  EXPECT_EQ(s.gpus_per_node(), 1u) << "the one GPU a share is of";
  EXPECT_EQ(s.gpu_share_percent(), 25u);
}

TEST(Admission, AShareFitsAnMpsPoolOfItsNodePool) {
  // The default pool offers 40Gi pools (its 80Gi GPUs are whole); node pool "infer" 80Gi
  // pools: a 60Gi share fits only there.
  ClusterShape shape = TwoNodesOf4Gpus();
  shape.max_gpu_memory_bytes = 80ull << 30;
  shape.max_mps_memory_by_pool = {{"", 40ull << 30}, {"infer", 80ull << 30}};
  Policy policy = SharingPolicy();
  policy.pools = {sched::PoolPolicy{"infer", {"inference"}}};
  v1::JobSpec s = Share(25, 60ull << 30);
  absl::Status st = ValidateAndDefaultSpec(Alice(), policy, shape, &s);
  EXPECT_EQ(Why(st),
            "spec.gpu_memory_bytes: 60Gi for a share, but the largest MPS pool of node "
            "pool default has 40Gi");
  s = Share(25, 60ull << 30);
  s.set_pool("infer");
  EXPECT_TRUE(ValidateAndDefaultSpec(Alice(), policy, shape, &s).ok());
}

TEST(Admission, ASharesBadShapesAndClassesAreRefusedNamingTheField) {
  ClusterShape shape = TwoNodesOf4Gpus();
  shape.max_gpu_memory_bytes = 80ull << 30;
  struct Case {
    const char* what;
    std::function<void(v1::JobSpec*)> mutate;
    Policy policy;
    const char* says;  // the start of the message
  } cases[] = {
      {"over 100%", [](v1::JobSpec* s) { s->set_gpu_share_percent(101); }, SharingPolicy(),
       "spec.gpu_share_percent: at most 100%"},
      {"two GPUs", [](v1::JobSpec* s) { s->set_gpus_per_node(2); }, SharingPolicy(),
       "spec.gpu_share_percent: a share is of one GPU for one rank"},
      {"two ranks", [](v1::JobSpec* s) { s->set_ranks_per_node(2); }, SharingPolicy(),
       "spec.gpu_share_percent: a share is of one GPU for one rank"},
      {"two nodes", [](v1::JobSpec* s) { s->set_nodes(2); }, SharingPolicy(),
       "spec.gpu_share_percent: a share is of one GPU for one rank"},
      {"no memory", [](v1::JobSpec* s) { s->set_gpu_memory_bytes(0); }, SharingPolicy(),
       "spec.gpu_share_percent: needs gpu_memory"},
      {"of a MIG slice", [](v1::JobSpec* s) { s->set_mig_profile("1g.18gb"); }, SharingPolicy(),
       "spec.gpu_share_percent: a share is of a whole GPU"},
      {"more memory than any GPU", [](v1::JobSpec* s) { s->set_gpu_memory_bytes(81ull << 30); },
       SharingPolicy(), "spec.gpu_memory_bytes: 81Gi for a share, but the largest GPU has 80Gi"},
      {"a class that may not share", [](v1::JobSpec*) {}, AdmissionPolicy(),
       "spec: class inference may not share a GPU"},
      {"training", [](v1::JobSpec* s) { s->set_priority_class("training"); }, SharingPolicy(),
       "spec: class training may not share a GPU"},
  };
  for (auto& c : cases) {
    v1::JobSpec s = Share(25, 20ull << 30);
    c.mutate(&s);
    absl::Status st = ValidateAndDefaultSpec(Alice(), c.policy, shape, &s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(Why(st).rfind(c.says, 0), 0u) << c.what << ": " << Why(st);
  }
}

TEST(Admission, ZeroGpusIsAValidCpuJob) {
  v1::JobSpec s = Minimal();
  s.set_gpus_per_node(0);
  EXPECT_TRUE(Admit(&s).ok());
}

TEST(Admission, NamesTheFieldAtFault) {
  struct Case {
    const char* what;
    std::function<void(v1::JobSpec*)> mutate;
    const char* field;
  } cases[] = {
      {"missing command", [](v1::JobSpec* s) { s->clear_command(); }, "spec.command"},
      {"empty argv[0]", [](v1::JobSpec* s) { s->set_command(0, ""); }, "spec.command"},
      {"more GPUs than any node", [](v1::JobSpec* s) { s->set_gpus_per_node(8); },
       "spec.gpus_per_node"},
      {"more nodes than exist", [](v1::JobSpec* s) { s->set_nodes(3); }, "spec.nodes"},
      {"unknown class", [](v1::JobSpec* s) { s->set_priority_class("vip"); },
       "spec.priority_class"},
      {"bad name", [](v1::JobSpec* s) { s->set_name("-x y"); }, "spec.name"},
      {"relative workdir", [](v1::JobSpec* s) { s->set_working_dir("rel/dir"); },
       "spec.working_dir"},
      {"bad env name", [](v1::JobSpec* s) { (*s->mutable_env())["1X"] = "v"; }, "spec.env"},
      {"bad MIG profile",
       [](v1::JobSpec* s) {
         s->set_gpus_per_node(1);
         s->set_mig_profile("tiny");
       },
       "spec.mig_profile"},
      {"too much memory", [](v1::JobSpec* s) { s->set_memory_bytes_per_node(1ull << 40); },
       "spec.memory_bytes_per_node"},
      {"grace too long", [](v1::JobSpec* s) { s->set_grace_seconds(86400); }, "spec.grace_seconds"},
  };
  for (const auto& c : cases) {
    v1::JobSpec s = Minimal();
    c.mutate(&s);
    absl::Status st = Admit(&s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(Why(st).rfind(c.field, 0), 0u) << c.what << ": " << Why(st);
  }
}

TEST(Admission, AcceptsAnyShapeWhileTheClusterIsForming) {
  v1::JobSpec s = Minimal();
  s.set_gpus_per_node(8);
  s.set_nodes(16);
  EXPECT_TRUE(Admit(&s, ClusterShape{}).ok());
}

TEST(StateMachine, AllowsTheDocumentedTransitionsOnly) {
  using S = v1::JobState;
  EXPECT_TRUE(CanTransition(v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_PENDING));
  EXPECT_TRUE(CanTransition(v1::JOB_STATE_PENDING, v1::JOB_STATE_SCHEDULED));
  EXPECT_TRUE(CanTransition(v1::JOB_STATE_RUNNING, v1::JOB_STATE_PREEMPTING));
  EXPECT_TRUE(CanTransition(v1::JOB_STATE_PREEMPTING, v1::JOB_STATE_COOLDOWN));
  EXPECT_TRUE(CanTransition(v1::JOB_STATE_COOLDOWN, v1::JOB_STATE_PENDING));
  EXPECT_FALSE(CanTransition(v1::JOB_STATE_PENDING, v1::JOB_STATE_RUNNING));
  EXPECT_FALSE(CanTransition(v1::JOB_STATE_COOLDOWN, v1::JOB_STATE_RUNNING));
  for (S end : {v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    for (int to = v1::JobState_MIN; to <= v1::JobState_MAX; ++to) {
      EXPECT_FALSE(CanTransition(end, static_cast<S>(to))) << "terminal states are final";
    }
  }
}

// Where `baton logs` reads: the attempt asked or the last; the node asked, the rank's in
// direct mode, node rank 0 otherwise (mpirun collects every rank there).
TEST(StateMachine, LogsAreReadWhereTheRankOrNodeAskedForRan) {
  v1::Job job;
  job.set_id(4);
  job.mutable_spec()->set_nodes(2);
  job.mutable_spec()->set_ranks_per_node(4);
  for (const auto& nodes : {std::vector<std::string>{"a", "b"}, {"c", "d"}}) {
    v1::Attempt* a = job.add_attempts();
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      v1::NodeAssignment* p = a->add_placement();
      p->set_node(nodes[i]);
      p->set_node_rank(i);
      p->set_first_rank(4 * i);
    }
  }
  const struct {
    const char* what;
    v1::LaunchMode mode;
    uint32_t attempt;
    const char* node;
    std::optional<int32_t> rank;
    const char* want_node;  // "" = an error
    uint32_t want_attempt;
    absl::StatusCode code;
  } rows[] = {
      {"defaults", v1::LAUNCH_MODE_DIRECT, 0, "", {}, "c", 2, absl::StatusCode::kOk},
      {"attempt 1", v1::LAUNCH_MODE_DIRECT, 1, "", {}, "a", 1, absl::StatusCode::kOk},
      {"a node", v1::LAUNCH_MODE_DIRECT, 0, "d", {}, "d", 2, absl::StatusCode::kOk},
      {"rank 3", v1::LAUNCH_MODE_DIRECT, 0, "", 3, "c", 2, absl::StatusCode::kOk},
      {"rank 4", v1::LAUNCH_MODE_DIRECT, 0, "", 4, "d", 2, absl::StatusCode::kOk},
      {"rank 7, attempt 1", v1::LAUNCH_MODE_DIRECT, 1, "", 7, "b", 1, absl::StatusCode::kOk},
      {"rank 5, mpi", v1::LAUNCH_MODE_MPI, 0, "", 5, "c", 2, absl::StatusCode::kOk},
      {"rank 8", v1::LAUNCH_MODE_DIRECT, 0, "", 8, "", 0, absl::StatusCode::kInvalidArgument},
      {"rank -1", v1::LAUNCH_MODE_DIRECT, 0, "", -1, "", 0, absl::StatusCode::kInvalidArgument},
      {"attempt 3", v1::LAUNCH_MODE_DIRECT, 3, "", {}, "", 0, absl::StatusCode::kNotFound},
      {"node a, attempt 2", v1::LAUNCH_MODE_DIRECT, 0, "a", {}, "", 0, absl::StatusCode::kNotFound},
  };
  for (const auto& row : rows) {
    job.mutable_spec()->set_launch_mode(row.mode);
    v1::LogsRequest req;
    req.set_job_id(4);
    req.set_attempt(row.attempt);
    req.set_node(row.node);
    if (row.rank) req.set_rank(*row.rank);
    const absl::StatusOr<LogSource> got = LogSourceOf(job, req);
    ASSERT_EQ(got.status().code(), row.code) << row.what << ": " << got.status();
    if (!got.ok()) continue;
    EXPECT_EQ(got->node, row.want_node) << row.what;
    EXPECT_EQ(got->attempt, row.want_attempt) << row.what;
  }
  v1::Job queued;
  queued.set_id(5);
  EXPECT_EQ(LogSourceOf(queued, v1::LogsRequest()).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "no attempt yet";
}

// A cancel in each state: queued or cooling down ends at once, a live attempt is stopped
// first, a repeat succeeds, and a job that ended otherwise refuses.
TEST(StateMachine, ACancelEndsStopsRepeatsOrIsRefusedByState) {
  using A = CancelAction;
  const struct {
    v1::JobState state;
    bool live;
    const char* cancel_requested_by;
    A want;
  } rows[] = {
      {v1::JOB_STATE_PENDING, false, "", A::kNow},
      {v1::JOB_STATE_COOLDOWN, false, "", A::kNow},
      {v1::JOB_STATE_SCHEDULED, true, "", A::kStop},
      {v1::JOB_STATE_RUNNING, true, "", A::kStop},
      {v1::JOB_STATE_PREEMPTING, true, "", A::kStop},
      {v1::JOB_STATE_RUNNING, true, "alice", A::kAlready},
      {v1::JOB_STATE_CANCELLED, false, "", A::kAlready},
      {v1::JOB_STATE_CANCELLED, true, "alice", A::kAlready},
      {v1::JOB_STATE_FAILED, false, "alice", A::kAlready},
      {v1::JOB_STATE_SUCCEEDED, false, "", A::kRefused},
      {v1::JOB_STATE_FAILED, false, "", A::kRefused},
      {v1::JOB_STATE_SUCCEEDED, true, "", A::kRefused},  // final; its attempt not ended yet
  };
  for (const auto& row : rows) {
    v1::Job job;
    job.set_state(row.state);
    job.set_cancel_requested_by(row.cancel_requested_by);
    EXPECT_EQ(DecideCancel(job, row.live), row.want)
        << v1::JobState_Name(row.state) << (row.live ? ", live" : "") << ", cancel by '"
        << row.cancel_requested_by << "'";
  }
}

}  // namespace
}  // namespace baton
