// The global event log as the JobManager writes it: every transition, scheduling
// decision, eviction, refused spec, policy change and node change, numbered in commit
// order and durable with the change it records; read back by job, kind and tail, and
// followed as it grows.
#include "coordinator/events.h"

#include <thread>

#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;

// "transition 1 running->pending failure" / "node lost n1" — one line per event.
std::string Line(const v1::Event& e) {
  std::string out = EventKindName(e.kind());
  if (e.job_id()) out += " " + std::to_string(e.job_id());
  if (e.kind() == v1::EVENT_KIND_TRANSITION) {
    out += " " + (e.from() == v1::JOB_STATE_UNSPECIFIED ? "new" : StateName(e.from())) + "->" +
           StateName(e.to());
  }
  if (!e.code().empty()) out += " " + e.code();
  if (!e.node().empty()) out += " " + e.node();
  return out;
}

std::vector<v1::Event> ReadAll(Harness& h, LogQuery q = {}) {
  auto events = h.jm().event_log().Read(q);
  EXPECT_TRUE(events.ok()) << events.status();
  return events.ok() ? *events : std::vector<v1::Event>{};
}

std::vector<std::string> Lines(const std::vector<v1::Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(Line(e));
  return out;
}

v1::AttemptReport Checkpointed(uint64_t job, uint32_t attempt, int64_t step) {
  v1::AttemptReport r = Report(job, attempt, Phase::PHASE_RUNNING);
  r.set_checkpoint_step(step);
  return r;
}

TEST(EventLog, SubmitRetryNodeLossRefusalPolicyAndCancelYieldExactlyTheseEvents) {
  JobManagerOptions opts = TestOptions();
  opts.lease = absl::Seconds(10);
  opts.lost_margin = absl::Seconds(5);
  opts.retry_backoff_base = absl::Seconds(1);
  Harness h(opts);
  h.Connect("n1", /*gpus=*/4);
  v1::JobSpec spec = Spec(/*nodes=*/1, /*gpus=*/2);
  spec.set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
  spec.set_max_restarts(2);
  spec.set_grace_seconds(1);  // replaced 1 + 1 + 5 s after n1 goes silent: when it is lost
  auto id = h.Submit(spec);
  ASSERT_TRUE(id.ok()) << id.status();
  h.Schedule();
  h.Report("n1", Report(*id, 1, Phase::PHASE_RUNNING));
  h.Report("n1", Report(*id, 1, Phase::PHASE_EXITED, /*exit_code=*/1));  // a retry
  h.clock().AdvanceMs(1'000);                                            // past its backoff
  h.Schedule();
  h.Report("n1", Report(*id, 2, Phase::PHASE_RUNNING));
  h.clock().AdvanceMs(4'000);
  h.Report("n1", Checkpointed(*id, 2, /*step=*/5));
  h.Connect("n2", /*gpus=*/4);
  h.Disconnect("n1");
  h.clock().AdvanceMs(16'000);  // past lease + margin: n1 is lost, the job evicted
  h.jm().AgentHeartbeat("n2");
  h.Tick();
  auto refused = h.Submit(Spec(/*nodes=*/1, /*gpus=*/9));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  v1::SetPolicyRequest policy;
  policy.set_yaml("tenants:\n  - {name: vision, weight: 2}\n");
  policy.set_comment("vision weighs more");
  std::promise<void> recorded;
  h.jm().SetPolicy(Admin(), policy,
                   [&](absl::StatusOr<v1::PolicyVersion>) { recorded.set_value(); });
  recorded.get_future().wait();
  ASSERT_TRUE(h.Cancel(*id).ok());

  std::string j = std::to_string(*id);
  std::vector<v1::Event> events = ReadAll(h);
  EXPECT_EQ(Lines(events), (std::vector<std::string>{
                               "node registered n1",
                               "transition " + j + " new->pending",
                               "scheduling " + j + " placed",
                               "transition " + j + " pending->scheduled",
                               "transition " + j + " scheduled->running",
                               "transition " + j + " running->pending failure",
                               "scheduling " + j + " placed",
                               "transition " + j + " pending->scheduled",
                               "transition " + j + " scheduled->running",
                               "node registered n2",
                               "node disconnected n1",
                               "node lost n1",
                               "eviction " + j + " node_lost",
                               "transition " + j + " running->pending",
                               "quota_refusal spec.gpus_per_node",
                               "policy policy_changed",
                               "transition " + j + " pending->cancelled",
                           }));
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].log_seq(), i + 1) << "numbered in commit order, no gaps";
  }
  const v1::Event& eviction = events[12];
  EXPECT_DOUBLE_EQ(eviction.lost_gpu_seconds(), 2 * 16.0)
      << "2 GPUs for the 16 s since the checkpoint reported 4 s after the start";
  EXPECT_EQ(eviction.attempt(), 2u);
  EXPECT_EQ(events[14].actor(), "alice");
  EXPECT_EQ(events[14].tenant(), "vision");
  EXPECT_NE(events[14].reason().find("9 GPUs per node, but the largest node has 4"),
            std::string::npos)
      << events[14].reason();
  EXPECT_EQ(events[15].actor(), "root") << "policy changes say who";
  EXPECT_EQ(events[15].reason(),
            "policy version 1: tenant vision added (weight 2, quota none); tenant vision: members "
            "changed; which tenants may use which classes changed (vision weighs more)");
  EXPECT_EQ(events[11].node_state(), v1::NODE_STATE_LOST);

  // The job's own list holds its transitions, numbered as in the global log.
  v1::Job job = h.Get(*id);
  std::vector<uint64_t> seqs;
  for (const auto& e : job.events()) seqs.push_back(e.log_seq());
  EXPECT_EQ(seqs, (std::vector<uint64_t>{2, 4, 5, 6, 8, 9, 14, 17}));
  EXPECT_EQ(Lines(ReadAll(h, LogQuery{.job_id = *id, .kinds = 1u << v1::EVENT_KIND_EVICTION})),
            std::vector<std::string>{"eviction " + j + " node_lost"});
}

TEST(EventLog, NumberingContinuesAfterARestartAndReadsFilterAndTail) {
  Harness h;
  auto a = h.Submit(Spec());
  auto b = h.Submit(Spec());
  h.Restart();
  auto c = h.Submit(Spec());
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::vector<v1::Event> all = ReadAll(h);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].log_seq(), 3u) << "no number reused after a restart";
  EXPECT_EQ(all[2].job_id(), *c);
  EXPECT_EQ(ReadAll(h, LogQuery{.job_id = *b}).size(), 1u);
  EXPECT_EQ(ReadAll(h, LogQuery{.after_seq = 1, .limit = 1})[0].log_seq(), 2u);
  auto tail = h.jm().event_log().TailStart(LogQuery{}, 2);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, 1u) << "reading after 1 gives the last two";
  EXPECT_EQ(*h.jm().event_log().TailStart(LogQuery{}, 10), 0u);
  EXPECT_EQ(*h.jm().event_log().TailStart(LogQuery{.job_id = *a}, 1), 0u);
}

TEST(EventLog, AJobThatCannotStartSaysWhyOnceNotEveryPass) {
  Harness h;
  h.Connect("n1", /*gpus=*/2);
  auto big = h.Submit(Spec(/*nodes=*/1, /*gpus=*/2, {"sleep", "100"}));
  h.Schedule();
  auto waits = h.Submit(Spec(/*nodes=*/1, /*gpus=*/1));
  h.Schedule();
  h.Schedule();
  h.Schedule();
  auto waiting = ReadAll(h, LogQuery{.job_id = *waits, .kinds = 1u << v1::EVENT_KIND_SCHEDULING});
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].code(), "reserved") << "it heads the line: the node is held for it";
  EXPECT_FALSE(waiting[0].reason().empty());
  ASSERT_TRUE(big.ok());
}

TEST(EventLog, FollowersWakeWhenANewEventIsDurable) {
  Harness h;
  uint64_t before = h.jm().event_log().durable_seq();
  std::thread submitter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)h.Submit(Spec());
  });
  uint64_t after = h.jm().event_log().WaitPast(before, std::chrono::seconds(10));
  submitter.join();
  EXPECT_EQ(after, before + 1);
  auto events = h.jm().event_log().Read(LogQuery{.after_seq = before});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u) << "what woke the follower is in the store";
}

TEST(Events, LostWorkCountsFromTheLastCheckpointOrTheStart) {
  v1::Job job;
  v1::Attempt* a = job.add_attempts();
  a->add_placement()->add_gpu_ids("g0");
  a->add_placement()->add_gpu_ids("g1");
  EXPECT_EQ(events::LostGpuSeconds(job, 10'000), 0) << "never started: nothing lost";
  a->set_started_ms(1'000);
  EXPECT_DOUBLE_EQ(events::LostGpuSeconds(job, 11'000), 20.0);
  a->set_checkpoint_time_ms(6'000);
  EXPECT_DOUBLE_EQ(events::LostGpuSeconds(job, 11'000), 10.0);
  a->set_ended_ms(8'000);
  EXPECT_DOUBLE_EQ(events::LostGpuSeconds(job, 11'000), 4.0) << "ends at its end";
}

TEST(Events, ACheckpointCountsFromWhenItsNoteSaysItCommittedWithinWhatIsPossible) {
  v1::Attempt a;
  a.set_started_ms(1'000);
  EXPECT_EQ(events::CheckpointTimeMs(a, 0, 9'000), 9'000) << "no time reported: when heard";
  EXPECT_EQ(events::CheckpointTimeMs(a, 7'500, 9'000), 7'500)
      << "heard late (with the end report, say): still when it was committed";
  EXPECT_EQ(events::CheckpointTimeMs(a, 12'000, 9'000), 9'000) << "never after now";
  EXPECT_EQ(events::CheckpointTimeMs(a, 500, 9'000), 1'000) << "never before the start";
  a.set_checkpoint_time_ms(6'000);
  EXPECT_EQ(events::CheckpointTimeMs(a, 5'000, 9'000), 6'000)
      << "never before the checkpoint it follows";
}

TEST(Events, AnAttemptEndsWhenItsNodesSayOnlyWhenEveryNodeSaid) {
  v1::Attempt a;
  a.set_started_ms(1'000);
  auto ms = [](int64_t t) { return absl::FromUnixMillis(t); };
  const absl::Time now = ms(9'000);
  EXPECT_EQ(events::Ended(a, 2, {{"n1", ms(4'000)}, {"n2", ms(5'000)}}, now), ms(5'000))
      << "heard late (after an outage): still when the last node ended";
  EXPECT_EQ(events::Ended(a, 2, {{"n1", ms(4'000)}}, now), now)
      << "a node that never said (lost): when we heard";
  EXPECT_EQ(events::Ended(a, 1, {}, now), now) << "an older agent: when we heard";
  EXPECT_EQ(events::Ended(a, 1, {{"n1", ms(12'000)}}, now), now) << "never after now";
  EXPECT_EQ(events::Ended(a, 1, {{"n1", ms(500)}}, now), ms(1'000)) << "never before the start";
}

}  // namespace
}  // namespace baton::testing
