#include "coordinator/job_table.h"

#include <random>

#include "coordinator/packed_spec.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::testing::job_table_test {
namespace {

// Class values as a policy would give them; tests change them to play a new policy.
struct Classes {
  std::map<std::string, int32_t> value{{"prod", 100}, {"batch", 10}};
  JobTable::ClassValue fn() {
    return [this](const std::string& c) { return value.count(c) ? value.at(c) : 0; };
  }
};

v1::Job MakeJob(uint64_t id, const std::string& cls, int64_t submitted_ms,
                const std::string& tenant = "t", v1::JobState s = v1::JOB_STATE_PENDING) {
  v1::Job job;
  job.set_id(id);
  job.mutable_spec()->set_priority_class(cls);
  job.mutable_spec()->set_tenant(tenant);
  job.set_submitted_ms(submitted_ms);
  job.set_state(s);
  return job;
}

std::vector<uint64_t> QueuedIds(const JobTable& t) {
  std::vector<uint64_t> out;
  for (const auto& key : t.queue()) out.push_back(std::get<2>(key));
  return out;
}

TEST(JobTable, TheQueueIsServedByClassThenSubmitTimeThenId) {
  Classes classes;
  JobTable t(classes.fn());
  t.Add(MakeJob(1, "batch", 1'000));
  t.Add(MakeJob(2, "prod", 3'000));
  t.Add(MakeJob(3, "batch", 500));
  t.Add(MakeJob(4, "unknown", 0));
  t.Add(MakeJob(5, "prod", 3'000));
  t.Add(MakeJob(6, "prod", 1'000, "t", v1::JOB_STATE_RUNNING));  // not queued
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{2, 5, 3, 1, 4}));
  EXPECT_EQ(t.size(), 6u);
}

TEST(JobTable, StatesMoveJobsBetweenTheIndexesAndTenantsCountTheirWaitingJobs) {
  Classes classes;
  JobTable t(classes.fn());
  JobEntry& a = t.Add(MakeJob(1, "batch", 1, "alice"));
  JobEntry& b = t.Add(MakeJob(2, "batch", 2, "alice", v1::JOB_STATE_UNSPECIFIED));
  t.Add(MakeJob(3, "batch", 3, "bob", v1::JOB_STATE_COOLDOWN));
  EXPECT_EQ(t.Waiting("alice"), 1u) << "a job being submitted waits once it is PENDING";
  EXPECT_EQ(t.Waiting("bob"), 1u) << "COOLDOWN waits too";
  EXPECT_EQ(t.cooldown(), (std::set<uint64_t>{3}));

  t.SetState(b, v1::JOB_STATE_PENDING);
  EXPECT_EQ(t.Waiting("alice"), 2u);
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{1, 2}));

  t.SetState(a, v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(b.job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(a.job.state(), v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{2}));
  EXPECT_EQ(t.Waiting("alice"), 1u);

  t.SetState(a, v1::JOB_STATE_COOLDOWN);
  EXPECT_EQ(t.cooldown(), (std::set<uint64_t>{1, 3}));
  EXPECT_EQ(t.Waiting("alice"), 2u);
  t.SetState(a, v1::JOB_STATE_PENDING);
  EXPECT_EQ(t.cooldown(), (std::set<uint64_t>{3}));
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(t.Waiting("alice"), 2u) << "COOLDOWN -> PENDING still waits: counted once";

  t.SetState(a, v1::JOB_STATE_CANCELLED);
  t.SetState(b, v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(t.Waiting("alice"), 0u);
  EXPECT_TRUE(t.queue().empty());
}

// A new policy changes class values: the queue follows, and a job queued under the old
// values still leaves it (its key then is not the key it would get now).
TEST(JobTable, ANewPolicyReordersTheQueueAndJobsQueuedBeforeItStillLeave) {
  Classes classes;
  JobTable t(classes.fn());
  t.Add(MakeJob(1, "batch", 1));
  JobEntry& prod = t.Add(MakeJob(2, "prod", 2));
  classes.value["batch"] = 1'000;
  classes.value["prod"] = 1;
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{2, 1})) << "keyed when queued";
  t.SetState(prod, v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{1})) << "left under its old key";
  t.SetState(prod, v1::JOB_STATE_PENDING);
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{1, 2})) << "job 1 still keyed at 10, job 2 at 1";
  classes.value["prod"] = 5'000;
  t.Reorder();
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{2, 1}));
  classes.value["batch"] = 7;  // no Reorder: job 1 is keyed at 1000
  JobEntry removed = t.Remove(1);
  EXPECT_EQ(removed.job.id(), 1u);
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{2}));
}

TEST(JobTable, LiveAttemptsAreIndexedAndAJobWithOneCannotLeave) {
  Classes classes;
  JobTable t(classes.fn());
  JobEntry& e = t.Add(MakeJob(7, "prod", 1, "t", v1::JOB_STATE_SCHEDULED));
  LiveAttempt a;
  a.nodes["n1"] = AttemptPhase::kLaunching;
  a.preempted = absl::FromUnixSeconds(5);
  t.StartAttempt(e, a);
  EXPECT_EQ(t.live(), (std::set<uint64_t>{7}));
  ASSERT_TRUE(e.live);
  EXPECT_THROW(t.Remove(7), std::logic_error);
  EXPECT_THROW(t.Add(MakeJob(7, "prod", 1)), std::logic_error) << "ids are unique";
  LiveAttempt ended = t.EndAttempt(e);
  EXPECT_EQ(ended.nodes.at("n1"), AttemptPhase::kLaunching);
  EXPECT_EQ(ended.preempted, absl::FromUnixSeconds(5));
  EXPECT_FALSE(e.live);
  EXPECT_TRUE(t.live().empty());
  t.SetState(e, v1::JOB_STATE_SUCCEEDED);
  t.Remove(7);
  EXPECT_EQ(t.Find(7), nullptr);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_THROW(t.Remove(7), std::logic_error);
}

// What a drained or lost node still runs: the parts there that launch or run, not those
// that ended, not other nodes' parts, not jobs whose attempt is over.
TEST(JobTable, LiveOnANodeIsWhatLaunchesOrRunsThere) {
  Classes classes;
  JobTable t(classes.fn());
  const struct {
    uint64_t id;
    std::map<std::string, AttemptPhase> parts;
  } jobs[] = {
      {1, {{"n1", AttemptPhase::kRunning}, {"n2", AttemptPhase::kRunning}}},
      {2, {{"n1", AttemptPhase::kLaunching}}},
      {3, {{"n1", AttemptPhase::kExited}, {"n2", AttemptPhase::kRunning}}},
      {4, {{"n2", AttemptPhase::kLaunching}}},
      {5, {{"n1", AttemptPhase::kRunning}}},
  };
  for (const auto& j : jobs) {
    JobEntry& e = t.Add(MakeJob(j.id, "prod", 1, "t", v1::JOB_STATE_RUNNING));
    t.StartAttempt(e, LiveAttempt{.nodes = j.parts});
  }
  t.EndAttempt(t.at(5));
  EXPECT_EQ(t.LiveOn("n1"), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(t.LiveOn("n2"), (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_TRUE(t.LiveOn("n9").empty());
}

// A cooldown is over at its end, not before; only jobs cooling down come back.
TEST(JobTable, CooledDownIsTheCooldownsThatAreOver) {
  Classes classes;
  JobTable t(classes.fn());
  const absl::Time now = absl::FromUnixMillis(10'000);
  const struct {
    uint64_t id;
    v1::JobState state;
    int64_t until_ms;
  } jobs[] = {
      {1, v1::JOB_STATE_COOLDOWN, 9'999},   // over
      {2, v1::JOB_STATE_COOLDOWN, 10'000},  // over, at its end
      {3, v1::JOB_STATE_COOLDOWN, 10'001},  // not yet
      {4, v1::JOB_STATE_PENDING, 5'000},    // not cooling down
      {5, v1::JOB_STATE_COOLDOWN, 0},       // no end recorded: over
  };
  for (const auto& j : jobs) {
    v1::Job job = MakeJob(j.id, "prod", 1, "t", j.state);
    job.set_cooldown_until_ms(j.until_ms);
    t.Add(job);
  }
  EXPECT_EQ(t.CooledDown(now), (std::vector<uint64_t>{1, 2, 5}));
  EXPECT_EQ(t.CooledDown(absl::FromUnixMillis(5'000)), (std::vector<uint64_t>{5}));
}

// Every index equals what the jobs say, after any sequence of changes.
TEST(JobTable, TheIndexesAlwaysEqualWhatTheJobsSay) {
  Classes classes;
  JobTable t(classes.fn());
  std::mt19937 rng(42);
  const std::vector<v1::JobState> states = {v1::JOB_STATE_PENDING,  v1::JOB_STATE_SCHEDULED,
                                            v1::JOB_STATE_RUNNING,  v1::JOB_STATE_PREEMPTING,
                                            v1::JOB_STATE_COOLDOWN, v1::JOB_STATE_SUCCEEDED};
  const std::vector<std::string> tenants = {"a", "b", "c"};
  const std::vector<std::string> cls = {"prod", "batch", "other"};
  uint64_t next_id = 1;
  for (int step = 0; step < 5'000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    std::vector<uint64_t> ids;
    for (const auto& [id, e] : t.all()) ids.push_back(id);
    JobEntry* e = ids.empty() ? nullptr : &t.at(ids[rng() % ids.size()]);
    if (op < 3 || e == nullptr) {
      t.Add(MakeJob(next_id++, cls[rng() % cls.size()], static_cast<int64_t>(rng() % 100),
                    tenants[rng() % tenants.size()], states[rng() % states.size()]));
    } else if (op < 7) {
      t.SetState(*e, states[rng() % states.size()]);
    } else if (op == 7) {
      if (e->live)
        t.EndAttempt(*e);
      else
        t.StartAttempt(*e, LiveAttempt{});
    } else if (op == 8 && !e->live) {
      t.Remove(e->job.id());
    } else if (op == 9) {
      classes.value[cls[rng() % cls.size()]] = static_cast<int32_t>(rng() % 200);
      if (rng() % 2) t.Reorder();
    }
    // Recomputed from the jobs.
    std::set<uint64_t> queued, cooldown, live;
    std::map<std::string, uint32_t> waiting;
    for (const auto& [id, j] : t.all()) {
      if (j.job.state() == v1::JOB_STATE_PENDING) queued.insert(id);
      if (j.job.state() == v1::JOB_STATE_COOLDOWN) cooldown.insert(id);
      if (WaitsInQueue(j.job.state())) ++waiting[j.job.spec().tenant()];
      if (j.live) live.insert(id);
    }
    std::vector<uint64_t> in_queue = QueuedIds(t);
    ASSERT_EQ(std::set<uint64_t>(in_queue.begin(), in_queue.end()), queued) << "step " << step;
    ASSERT_EQ(in_queue.size(), queued.size()) << "step " << step << ": a job queued twice";
    ASSERT_EQ(t.cooldown(), cooldown) << "step " << step;
    ASSERT_EQ(t.live(), live) << "step " << step;
    for (const std::string& tenant : tenants) {
      ASSERT_EQ(t.Waiting(tenant), waiting[tenant]) << "step " << step << " tenant " << tenant;
    }
  }
}

// A restart's entries, built elsewhere, join the table whole and indexed, in id order.
TEST(JobTable, AdoptedEntriesAreIndexedAndPackedAndMustComeAfterTheRest) {
  Classes classes;
  JobTable t(classes.fn());
  t.Add(MakeJob(1, "batch", 5));
  std::map<uint64_t, JobEntry> loaded;
  for (uint64_t id : {7, 3, 5}) {
    JobEntry& e = loaded[id];
    e.job = MakeJob(id, id == 5 ? "prod" : "batch", static_cast<int64_t>(id), id == 7 ? "u" : "t",
                    id == 3 ? v1::JOB_STATE_COOLDOWN : v1::JOB_STATE_PENDING);
    e.job.mutable_spec()->add_command("train.py");
  }
  std::vector<uint64_t> seen;
  t.Adopt(std::move(loaded), [&](JobEntry& e) { seen.push_back(e.job.id()); });
  EXPECT_EQ(seen, (std::vector<uint64_t>{3, 5, 7}));
  EXPECT_EQ(QueuedIds(t), (std::vector<uint64_t>{5, 1, 7}));
  EXPECT_EQ(t.cooldown(), std::set<uint64_t>{3});
  EXPECT_EQ(t.Waiting("t"), 3u);
  EXPECT_TRUE(t.at(5).job.spec().command().empty()) << "packed as Add packs";
  EXPECT_EQ(JobTable::Whole(t.at(5)).spec().command(0), "train.py");
  std::map<uint64_t, JobEntry> old;
  old[2].job = MakeJob(2, "batch", 1);
  EXPECT_THROW(t.Adopt(std::move(old), [](JobEntry&) {}), std::logic_error);
}

// A job's spec with everything packed_spec.h moves, and fields around them.
v1::Job FullJob(uint64_t id, std::mt19937& rng) {
  v1::Job job = MakeJob(id, "batch", 1'000 + static_cast<int64_t>(id));
  v1::JobSpec* spec = job.mutable_spec();
  spec->set_name("sweep-" + std::to_string(id));
  for (uint32_t w = 0, n = rng() % 6; w < n; ++w) {
    spec->add_command(w == 0 ? "python3" : "--arg-" + std::to_string(rng() % 1000));
  }
  for (uint32_t v = 0, n = rng() % 12; v < n; ++v) {
    (*spec->mutable_env())["VAR_" + std::to_string(v)] = std::string(rng() % 300, 'x');
  }
  (*spec->mutable_node_selector())["zone"] = "a";
  spec->set_gpus_per_node(rng() % 9);
  spec->add_after()->set_job(id + 1);
  job.add_attempts()->set_number(1);
  job.set_message("waiting");
  return job;
}

bool Same(const v1::Job& a, const v1::Job& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// A stored record split at the wire level is the record PackSpec makes of the parsed job,
// and the two halves put together are the job, whatever its spec holds.
TEST(PackedSpec, ASplitRecordIsThePackedJobAndPutsBackWhole) {
  std::mt19937 rng(7);
  for (uint64_t id = 1; id <= 300; ++id) {
    const v1::Job job = FullJob(id, rng);
    std::string rest, packed;
    ASSERT_TRUE(SplitJobRecord(job.SerializeAsString(), &rest, &packed)) << id;
    v1::Job hot;
    ASSERT_TRUE(hot.ParseFromString(rest)) << id;
    v1::Job by_pack = job;
    const std::string packed_by_pack = PackSpec(by_pack.mutable_spec());
    EXPECT_TRUE(Same(hot, by_pack)) << id;
    EXPECT_TRUE(hot.spec().env().empty() && hot.spec().command().empty()) << id;
    v1::JobSpec a, b;
    ASSERT_TRUE(a.ParseFromString(packed) && b.ParseFromString(packed_by_pack)) << id;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(a, b)) << id;
    ASSERT_TRUE(UnpackSpec(packed, hot.mutable_spec())) << id;
    EXPECT_TRUE(Same(hot, job)) << id << ": " << hot.DebugString() << " vs " << job.DebugString();
  }
  std::string rest, packed;
  const std::string record = FullJob(1, rng).SerializeAsString();
  EXPECT_FALSE(SplitJobRecord(record.substr(0, record.size() - 3), &rest, &packed))
      << "a cut record";
  EXPECT_FALSE(SplitJobRecord("\x12\x05\xff\xff", &rest, &packed)) << "a spec cut short";
  v1::JobSpec spec;
  EXPECT_FALSE(UnpackSpec("\xa2\x01\x7f", &spec)) << "an env entry cut short";
}

// The wire-level check that decides whether a loaded record's unknown fields are walked
// away: none in a record this version wrote, one at any depth found.
TEST(PackedSpec, UnknownFieldsAreFoundAtAnyDepthOnTheWire) {
  std::mt19937 rng(11);
  v1::Job job = FullJob(1, rng);
  EXPECT_FALSE(HasUnknownFields(job.SerializeAsString(), v1::Job::descriptor()));
  v1::NodeAssignment* deep = job.mutable_attempts(0)->add_placement();
  deep->set_node("n1");
  EXPECT_FALSE(HasUnknownFields(job.SerializeAsString(), v1::Job::descriptor()));
  deep->GetReflection()->MutableUnknownFields(deep)->AddLengthDelimited(999, "secret");
  EXPECT_TRUE(HasUnknownFields(job.SerializeAsString(), v1::Job::descriptor()));
}

// While no attempt lives, a job's env and command are packed; every way out of the table
// (Whole, a live attempt, Remove) gives them back exactly, and what changed meanwhile stays.
TEST(JobTable, AWaitingJobsSpecIsPackedAndEveryWayOutIsWhole) {
  Classes classes;
  JobTable t(classes.fn());
  std::mt19937 rng(3);
  v1::Job job = FullJob(1, rng);
  (*job.mutable_spec()->mutable_env())["DATA"] = "/datasets/imagenet";
  job.mutable_spec()->add_command("train.py");
  JobEntry& e = t.Add(job);
  EXPECT_TRUE(e.job.spec().env().empty()) << "packed while it waits";
  EXPECT_TRUE(e.job.spec().command().empty());
  EXPECT_FALSE(e.packed_spec.empty());
  EXPECT_TRUE(Same(JobTable::Whole(e), job));
  e.job.set_message("changed while packed");
  job.set_message("changed while packed");
  t.StartAttempt(e, LiveAttempt{});
  EXPECT_TRUE(Same(e.job, job)) << "whole while live: launches read it";
  EXPECT_TRUE(e.packed_spec.empty());
  (*e.job.mutable_spec()->mutable_env())["RESTARTED"] = "1";  // as a relaunch might write
  (*job.mutable_spec()->mutable_env())["RESTARTED"] = "1";
  t.EndAttempt(e);
  EXPECT_TRUE(e.job.spec().env().empty());
  EXPECT_TRUE(Same(JobTable::Whole(e), job));
  t.SetState(e, v1::JOB_STATE_CANCELLED);
  job.set_state(v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(Same(t.Remove(1).job, job)) << "a finished job leaves whole";
  // Added already packed (a split stored record) and then packed again: nothing doubles.
  v1::Job hot = FullJob(2, rng);
  std::string packed = PackSpec(hot.mutable_spec());
  v1::Job whole = hot;
  ASSERT_TRUE(UnpackSpec(packed, whole.mutable_spec()));
  std::map<uint64_t, JobEntry> split;
  split[2].job = hot;
  split[2].packed_spec = packed;
  t.Adopt(std::move(split), [](JobEntry&) {});
  JobEntry& f = t.at(2);
  t.StartAttempt(f, LiveAttempt{});
  t.EndAttempt(f);
  EXPECT_TRUE(Same(JobTable::Whole(f), whole));
}

}  // namespace
}  // namespace baton::testing::job_table_test
