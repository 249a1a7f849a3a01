// ApplyReport and PartLost as a table: a live attempt and one node's report (or its loss)
// in; the attempt after it and what the JobManager must do (commands, transitions, the
// attempt's end) out.
#include "coordinator/attempt_tracker.h"

#include <signal.h>

#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::attempt_tracker_test {
namespace {

using Ph = AttemptPhase;
using O = AttemptOutcome;
using R = v1::AttemptReport;

constexpr uint32_t kFailureGrace = 10;

LiveAttempt Gang(Ph n1, Ph n2, O outcome = O::kNone, int kill_signal = 0) {
  LiveAttempt a;
  a.nodes = {{"n1", n1}, {"n2", n2}};
  a.outcome = outcome;
  if (outcome != O::kNone) a.outcome_reason = "stopping already";
  a.kill_signal = kill_signal;
  a.kill_grace = kill_signal ? 30 : 0;
  return a;
}

R Report(R::Phase phase, int exit_code = 0, int term_signal = 0, const std::string& msg = "") {
  R r;
  r.set_phase(phase);
  r.set_exit_code(exit_code);
  r.set_term_signal(term_signal);
  r.set_message(msg);
  return r;
}

template <typename F>
R With(R r, F change) {
  change(r);
  return r;
}

struct Row {
  const char* name;
  LiveAttempt before;
  R report;  // from n1
  bool registering;
  // Expected:
  Ph n1_after;
  O outcome;
  int32_t exit_code, term_signal;
  // The effects, one letter each: P resend the Preempt, S resend the stop, G extend the
  // grace, R every part runs, E the attempt has ended.
  std::string effects;
  int stop_signal;  // the gang is told to stop with it (0: no stop ordered)
  std::vector<std::string> stop_nodes;
  std::string outcome_reason = "";  // "" not checked
};

std::string Letters(const ReportEffects& fx) {
  std::string out;
  if (fx.resend_preempt) out += 'P';
  if (fx.resend_stop) out += 'S';
  if (fx.extend_grace) out += 'G';
  if (fx.all_running) out += 'R';
  if (fx.ended) out += 'E';
  return out;
}

TEST(AttemptTracker, ReportsAsATable) {
  const auto L = Ph::kLaunching, Run = Ph::kRunning, X = Ph::kExited;
  const auto RUN = R::PHASE_RUNNING, EXIT = R::PHASE_EXITED, REJ = R::PHASE_REJECTED;
  const R saving = With(Report(RUN), [](R& r) { r.set_saving_step(40); });
  const R disconnected = With(Report(EXIT, 0, 15, "stopped: no coordinator for 20 s"),
                              [](R& r) { r.set_stopped_disconnected(true); });
  const LiveAttempt cancelling = Gang(Run, Run, O::kCancelled, SIGTERM);
  const LiveAttempt evicting = Gang(Run, Run, O::kEvicted, SIGUSR1);
  // clang-format off
  const std::vector<Row> rows = {
    // name, before, report, registering -> n1 after, outcome, exit code, signal, effects,
    // stop signal, stop nodes, reason
    {"first part running", Gang(L, L), Report(RUN), false,
     Run, O::kNone, 0, 0, "", 0, {}},
    {"last part running: all running", Gang(L, Run), Report(RUN), false,
     Run, O::kNone, 0, 0, "R", 0, {}},
    {"a progress report changes nothing", Gang(Run, Run), Report(RUN), false,
     Run, O::kNone, 0, 0, "R", 0, {}},
    {"stopping: its first running report gets the stop", Gang(L, Run, O::kCancelled, SIGTERM),
     Report(RUN), false,
     Run, O::kCancelled, 0, 0, "SR", 0, {}},
    {"stopping: later progress reports do not (a second SIGTERM)", cancelling, Report(RUN), false,
     Run, O::kCancelled, 0, 0, "R", 0, {}},
    {"stopping: a reconnecting agent gets the stop again", cancelling, Report(RUN), true,
     Run, O::kCancelled, 0, 0, "SR", 0, {}},
    {"evicted: the Preempt again on reconnect", evicting, Report(RUN), true,
     Run, O::kEvicted, 0, 0, "PR", 0, {}},
    {"evicted: a progress report sends nothing", evicting, Report(RUN), false,
     Run, O::kEvicted, 0, 0, "R", 0, {}},
    {"evicted and saving: the grace may move", evicting, saving, false,
     Run, O::kEvicted, 0, 0, "GR", 0, {}},
    {"a running report after the part's end is stale", Gang(X, Run), Report(RUN), true,
     X, O::kNone, 0, 0, "", 0, {}},
    {"exit 0: the part ends, the other runs on", Gang(Run, Run), Report(EXIT), false,
     X, O::kNone, 0, 0, "", 0, {}},
    {"exit 0 of the last part: the attempt ends", Gang(Run, X), Report(EXIT), false,
     X, O::kNone, 0, 0, "E", 0, {}},
    {"a failure stops the gang, itself included", Gang(Run, Run), Report(EXIT, 3), false,
     X, O::kFailed, 3, 0, "", SIGTERM, {"n1", "n2"}, "rank(s) on n1 failed: exit code 3"},
    {"a signal is a failure; the message says why", Gang(Run, X), Report(EXIT, 0, 9, "OOM"), false,
     X, O::kFailed, 0, 9, "E", SIGTERM, {"n1"}, "rank(s) on n1 failed: OOM"},
    {"an unstartable launch is a failure", Gang(L, L), Report(REJ, 127, 0, "no such program"),
     false,
     X, O::kFailed, 127, 0, "", SIGTERM, {"n1", "n2"}},
    {"stopping already: how it ended is kept, no new stop", evicting, Report(EXIT, 0, 15), false,
     X, O::kEvicted, 0, 15, "", 0, {}, "stopping already"},
    {"stopped for want of us: a lost node, the gang stops", Gang(Run, Run), disconnected, false,
     X, O::kNodeLost, 0, 0, "", SIGTERM, {"n1", "n2"}, "stopped: no coordinator for 20 s"},
    {"an end heard twice counts once", Gang(X, Run), Report(EXIT, 4), false,
     X, O::kNone, 0, 0, "", 0, {}},
  };
  // clang-format on
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    LiveAttempt live = row.before;
    const ReportEffects fx = ApplyReport(live, "n1", row.report, row.registering, kFailureGrace);
    EXPECT_EQ(live.nodes.at("n1"), row.n1_after);
    EXPECT_EQ(live.nodes.at("n2"), row.before.nodes.at("n2")) << "another node's part";
    EXPECT_EQ(live.outcome, row.outcome);
    EXPECT_EQ(live.exit_code, row.exit_code);
    EXPECT_EQ(live.term_signal, row.term_signal);
    if (!row.outcome_reason.empty()) {
      EXPECT_EQ(live.outcome_reason, row.outcome_reason);
    }
    EXPECT_EQ(Letters(fx), row.effects);
    EXPECT_EQ(fx.stop.has_value(), row.stop_signal != 0);
    if (fx.stop && row.stop_signal) {
      EXPECT_EQ(fx.stop->signal, row.stop_signal);
      EXPECT_EQ(fx.stop->grace, kFailureGrace);
      EXPECT_EQ(fx.stop->nodes, row.stop_nodes);
      EXPECT_EQ(fx.stop->reason, live.outcome_reason);
      EXPECT_EQ(live.kill_signal, row.stop_signal) << "the stop is the attempt's from now on";
    }
  }
}

TEST(AttemptTracker, AnEndReportedWithItsTimeKeepsIt) {
  LiveAttempt live = Gang(Ph::kRunning, Ph::kRunning);
  ApplyReport(live, "n1", With(Report(R::PHASE_EXITED), [](R& r) { r.set_time_ms(5'000); }), false,
              kFailureGrace);
  ApplyReport(live, "n2", Report(R::PHASE_EXITED), false, kFailureGrace);  // an older agent
  EXPECT_EQ(live.node_end,
            (std::map<std::string, absl::Time>{{"n1", absl::FromUnixMillis(5'000)}}));
}

TEST(AttemptTracker, ASaveInProgressIsForgottenWhenItsNodeSaysNoMore) {
  LiveAttempt live = Gang(Ph::kRunning, Ph::kRunning, O::kEvicted, SIGUSR1);
  ApplyReport(live, "n1", With(Report(R::PHASE_RUNNING), [](R& r) { r.set_saving_step(7); }), false,
              kFailureGrace);
  ASSERT_EQ(live.saving_step, 7);
  ApplyReport(live, "n2", Report(R::PHASE_RUNNING), false, kFailureGrace);
  EXPECT_EQ(live.saving_step, 7) << "another node's report";
  ApplyReport(live, "n1", Report(R::PHASE_RUNNING), false, kFailureGrace);
  EXPECT_FALSE(live.saving_step) << "the save is over";
}

// The first stop ordered is the attempt's: a later, harsher order is sent but what a
// reconnecting agent gets again stays the first.
TEST(AttemptTracker, TheFirstStopOrderedIsTheAttempts) {
  LiveAttempt live = Gang(Ph::kRunning, Ph::kExited);
  StopOrder first = OrderStop(live, SIGTERM, 30, "cancelled");
  EXPECT_EQ(first.nodes, std::vector<std::string>{"n1"}) << "not to a part that has ended";
  StopOrder second = OrderStop(live, SIGKILL, 0, "cancelled again");
  EXPECT_EQ(second.signal, SIGKILL);
  EXPECT_EQ(live.kill_signal, SIGTERM);
  EXPECT_EQ(live.kill_grace, 30u);
}

TEST(AttemptTracker, ALostPartStopsTheGangOnceAndEndsTheAttemptWithItsLastPart) {
  LiveAttempt live = Gang(Ph::kRunning, Ph::kLaunching);
  ReportEffects fx = PartLost(live, "n1", "node n1 lost", kFailureGrace);
  EXPECT_EQ(live.outcome, O::kNodeLost);
  EXPECT_EQ(live.outcome_reason, "node n1 lost");
  ASSERT_TRUE(fx.stop);
  EXPECT_EQ(fx.stop->nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_FALSE(fx.ended);
  fx = PartLost(live, "n1", "node n1 lost", kFailureGrace);
  EXPECT_FALSE(fx.stop) << "a part already ended";
  fx = PartLost(live, "n2", "node n2 lost", kFailureGrace);
  EXPECT_FALSE(fx.stop) << "stopping already: no second order";
  EXPECT_EQ(live.outcome_reason, "node n1 lost") << "the first cause stays";
  EXPECT_TRUE(fx.ended);
  EXPECT_FALSE(PartLost(live, "n3", "not in the gang", kFailureGrace).ended);
}

// What reports change in the stored attempt, in turn: "reports progress" once, and only a
// newer committed step, with its time kept between the last checkpoint (or the start) and
// now.
TEST(AttemptTracker, ProgressIsRecordedOnceAndCheckpointsOnlyMoveForward) {
  v1::Attempt a;
  a.set_started_ms(1'000);
  a.set_checkpoint_step(-1);
  const struct {
    const char* name;
    bool reports_progress;
    int64_t step, reported_ms, now_ms;
    bool changed;
    int64_t step_after, time_after;
  } rows[] = {
      {"nothing yet", false, -1, 0, 2'000, false, -1, 0},
      {"says it reports progress", true, -1, 0, 2'100, true, -1, 0},
      {"step 0 committed", true, 0, 2'000, 2'200, true, 0, 2'000},
      {"the same step again", true, 0, 2'150, 2'300, false, 0, 2'000},
      {"step 10, no time given", true, 10, 0, 3'000, true, 10, 3'000},
      {"an older step", true, 5, 2'900, 3'100, false, 10, 3'000},
      {"step 20 claims before step 10", true, 20, 1'500, 4'000, true, 20, 3'000},
      {"step 30 claims the future", true, 30, 9'000, 5'000, true, 30, 5'000},
      {"no longer says it reports", false, 30, 0, 5'100, false, 30, 5'000},
  };
  for (const auto& row : rows) {
    R r;
    r.set_reports_progress(row.reports_progress);
    r.set_checkpoint_step(row.step);
    r.set_checkpoint_time_ms(row.reported_ms);
    EXPECT_EQ(RecordProgress(a, r, row.now_ms), row.changed) << row.name;
    EXPECT_EQ(a.checkpoint_step(), row.step_after) << row.name;
    EXPECT_EQ(a.checkpoint_time_ms(), row.time_after) << row.name;
    EXPECT_EQ(a.reports_progress(), std::string(row.name) != "nothing yet") << row.name;
  }
}

// A lost node's part is replaced once its agent must have stopped and killed it, plus a
// margin; a service's agent never stops it, so the node's loss is enough.
TEST(AttemptTracker, ALostPartIsReplacedOnceItsAgentMustHaveKilledIt) {
  const absl::Duration margin = absl::Seconds(5), lost_after = absl::Seconds(15);
  const struct {
    const char* name;
    std::optional<absl::Duration> stop_after;
    absl::Duration grace, want;
  } rows[] = {
      {"batch", absl::Seconds(60), absl::Seconds(30), absl::Seconds(95)},
      {"no grace", absl::Seconds(60), absl::ZeroDuration(), absl::Seconds(65)},
      {"stopped at once", absl::ZeroDuration(), absl::Seconds(30), absl::Seconds(35)},
      {"a service", std::nullopt, absl::Seconds(30), lost_after},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(ReplaceAfter(row.stop_after, row.grace, margin, lost_after), row.want) << row.name;
  }
}

// An agent registers without mentioning its part (n1): a launch that may have been lost
// goes again; a part that ran, or one being stopped, is lost with the agent's restart.
TEST(AttemptTracker, APartTheAgentDoesNotMentionIsLaunchedAgainOrLost) {
  const std::string restarted = "agent on n1 no longer knows attempt 3 (agent restarted)";
  const struct {
    const char* name;
    LiveAttempt before;
    Ph n1_after;
    std::string effects;  // L: launch again; E: the attempt has ended
    int stop_signal;      // 0: no stop ordered
    std::string reason;   // the attempt's outcome reason after
  } rows[] = {
      {"launching", Gang(Ph::kLaunching, Ph::kRunning), Ph::kLaunching, "L", 0, ""},
      {"launching, gang launching", Gang(Ph::kLaunching, Ph::kLaunching), Ph::kLaunching, "L", 0,
       ""},
      {"launching, a stop ordered", Gang(Ph::kLaunching, Ph::kRunning, O::kCancelled, SIGTERM),
       Ph::kExited, "", 0, "stopping already"},
      {"launching, the rest exited", Gang(Ph::kLaunching, Ph::kExited), Ph::kLaunching, "L", 0, ""},
      {"running", Gang(Ph::kRunning, Ph::kRunning), Ph::kExited, "", SIGTERM, restarted},
      {"running, the rest exited", Gang(Ph::kRunning, Ph::kExited), Ph::kExited, "E", SIGTERM,
       restarted},
      {"running, being evicted", Gang(Ph::kRunning, Ph::kRunning, O::kEvicted, SIGUSR1),
       Ph::kExited, "", 0, "stopping already"},
      {"exited already", Gang(Ph::kExited, Ph::kRunning), Ph::kExited, "", 0, ""},
  };
  for (const auto& row : rows) {
    LiveAttempt live = row.before;
    const ReportEffects fx = PartUnmentioned(live, "n1", 3, kFailureGrace);
    std::string letters = fx.resend_launch ? "L" : "";
    letters += Letters(fx);
    EXPECT_EQ(letters, row.effects) << row.name;
    EXPECT_EQ(live.nodes.at("n1"), row.n1_after) << row.name;
    EXPECT_EQ(fx.stop ? fx.stop->signal : 0, row.stop_signal) << row.name;
    if (fx.stop) {
      EXPECT_EQ(fx.stop->grace, kFailureGrace) << row.name;
    }
    EXPECT_EQ(live.outcome_reason, row.reason) << row.name;
  }
}

TEST(AttemptTracker, AnEvictionIsTheFirstStopOrNone) {
  const absl::Time now = absl::FromUnixSeconds(1'000);
  LiveAttempt live = Gang(Ph::kRunning, Ph::kExited);
  std::optional<std::vector<std::string>> to =
      BeginEviction(live, "evicted for job 7", 7, absl::Seconds(20), now);
  ASSERT_TRUE(to);
  EXPECT_EQ(*to, std::vector<std::string>{"n1"}) << "not to a part that has ended";
  EXPECT_EQ(live.outcome, O::kEvicted);
  EXPECT_EQ(live.outcome_reason, "evicted for job 7");
  EXPECT_EQ(live.evicting_for, 7u);
  EXPECT_EQ(live.kill_signal, SIGUSR1) << "what a reconnecting agent gets again";
  EXPECT_EQ(live.kill_grace, 20u);
  EXPECT_EQ(live.preempted, now);
  EXPECT_EQ(live.preempt_deadline, now + absl::Seconds(20));

  EXPECT_FALSE(
      BeginEviction(live, "evicted for job 8", 8, absl::Seconds(5), now + absl::Seconds(1)))
      << "evicted already";
  EXPECT_EQ(live.evicting_for, 7u);
  EXPECT_EQ(live.preempt_deadline, now + absl::Seconds(20)) << "the first deadline stays";

  LiveAttempt cancelled = Gang(Ph::kRunning, Ph::kRunning, O::kCancelled, SIGTERM);
  EXPECT_FALSE(BeginEviction(cancelled, "evicted for job 7", 7, absl::Seconds(20), now));
  EXPECT_EQ(cancelled.outcome, O::kCancelled);
  EXPECT_EQ(cancelled.kill_signal, SIGTERM) << "a cancel is not turned into a checkpoint";
}

// ExtendedDeadline as a table: an eviction sent at T with a deadline, a save reporting
// progress at `now`; the deadline it moves to, or none.
TEST(AttemptTracker, ASaveInProgressMovesTheDeadlineInStepsUpToTheCap) {
  const absl::Time t = absl::FromUnixSeconds(1'000);
  auto s = [t](double seconds) { return t + absl::Seconds(seconds); };
  struct Row {
    const char* name;
    double grace_s, cap_factor, deadline_s, now_s;
    std::optional<double> moved_to_s;
  };
  const std::vector<Row> rows = {
      {"less than a quarter grace later: stays", 20, 3, 20, 1, std::nullopt},
      {"a quarter grace later: moves to now + grace", 20, 3, 20, 5, 25},
      {"past the cap: moves to the cap", 20, 3, 20, 50, 60},
      {"at the cap already: stays", 20, 3, 60, 55, std::nullopt},
      {"never back", 20, 3, 40, 10, std::nullopt},
      {"cap factor 1: the first grace is all", 20, 1, 20, 10, std::nullopt},
      {"a grace of 0 counts as 1 s", 0, 3, 0, 0.5, 1.5},
      {"and is capped at 3 s", 0, 3, 1.5, 2.9, 3},
      {"steps of 250 ms at least", 1, 3, 1, 0.2, std::nullopt},
      {"a 250 ms step moves", 1, 3, 1, 0.25, 1.25},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    LiveAttempt live = Gang(Ph::kRunning, Ph::kRunning, O::kEvicted, SIGUSR1);
    live.preempted = t;
    live.preempt_deadline = s(row.deadline_s);
    std::optional<absl::Time> moved =
        ExtendedDeadline(live, absl::Seconds(row.grace_s), row.cap_factor, s(row.now_s));
    if (!row.moved_to_s) {
      EXPECT_FALSE(moved) << absl::FormatTime(*moved);
    } else {
      ASSERT_TRUE(moved);
      EXPECT_EQ(*moved, s(*row.moved_to_s));
    }
  }
  EXPECT_EQ(GraceCap(absl::Seconds(20), 3), absl::Seconds(60));
  EXPECT_EQ(GraceCap(absl::ZeroDuration(), 3), absl::Seconds(3));
}

// StopForMaxRuntime as a table: an attempt started at T (or not yet), its max runtime, the
// time of the check; whether it is stopped.
TEST(AttemptTracker, AnAttemptPastItsMaxRuntimeStopsOnce) {
  const absl::Time t = absl::FromUnixSeconds(1'000);
  struct Row {
    const char* name;
    bool started;
    int max_s;
    double now_s;
    O outcome_before;
    bool stops;
  };
  const std::vector<Row> rows = {
      {"under its max", true, 60, 59.9, O::kNone, false},
      {"at its max", true, 60, 60, O::kNone, true},
      {"past it", true, 60, 300, O::kNone, true},
      {"no max", true, 0, 1e6, O::kNone, false},
      {"not running yet", false, 60, 300, O::kNone, false},
      {"being evicted", true, 60, 300, O::kEvicted, false},
      {"being cancelled", true, 60, 300, O::kCancelled, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    LiveAttempt live = Gang(Ph::kRunning, Ph::kExited, row.outcome_before);
    std::optional<StopOrder> stop =
        StopForMaxRuntime(live, row.started ? std::optional(t) : std::nullopt,
                          absl::Seconds(row.max_s), 15, t + absl::Seconds(row.now_s));
    EXPECT_EQ(stop.has_value(), row.stops);
    if (!row.stops) {
      EXPECT_EQ(live.outcome, row.outcome_before) << "untouched";
      continue;
    }
    EXPECT_EQ(live.outcome, O::kMaxRuntime);
    EXPECT_EQ(live.outcome_reason, "exceeded its max runtime of 60 s");
    EXPECT_EQ(stop->signal, SIGTERM);
    EXPECT_EQ(stop->grace, 15u);
    EXPECT_EQ(stop->nodes, std::vector<std::string>{"n1"});
    EXPECT_FALSE(StopForMaxRuntime(live, t, absl::Seconds(row.max_s), 15, t + absl::Hours(1)))
        << "once";
  }
}

v1::Job Stored(v1::JobState state, uint32_t grace = 30) {
  v1::Job job;
  job.set_id(9);
  job.set_state(state);
  job.mutable_spec()->set_grace_seconds(grace);
  v1::Attempt* a = job.add_attempts();
  a->add_placement()->set_node("n1");
  a->add_placement()->set_node("n2");
  return job;
}

TEST(AttemptTracker, RecoveredAttemptsGoOnAsTheStoreSays) {
  const absl::Time now = absl::FromUnixSeconds(2'000);
  EXPECT_FALSE(RecoverAttempt(Stored(v1::JOB_STATE_PENDING), now)) << "holds nothing";
  v1::Job no_attempt = Stored(v1::JOB_STATE_RUNNING);
  no_attempt.clear_attempts();
  EXPECT_FALSE(RecoverAttempt(no_attempt, now));

  std::optional<LiveAttempt> scheduled = RecoverAttempt(Stored(v1::JOB_STATE_SCHEDULED), now);
  ASSERT_TRUE(scheduled);
  EXPECT_EQ(scheduled->nodes,
            (std::map<std::string, Ph>{{"n1", Ph::kLaunching}, {"n2", Ph::kLaunching}}));
  EXPECT_EQ(scheduled->outcome, O::kNone);
  EXPECT_EQ(scheduled->kill_signal, 0);

  v1::Job cancelled = Stored(v1::JOB_STATE_RUNNING, 12);
  cancelled.set_cancel_requested_by("alice");
  std::optional<LiveAttempt> c = RecoverAttempt(cancelled, now);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->nodes.at("n2"), Ph::kRunning);
  EXPECT_EQ(c->outcome, O::kCancelled);
  EXPECT_EQ(c->kill_signal, SIGTERM) << "sent again as the agents return";
  EXPECT_EQ(c->kill_grace, 12u);

  v1::Job evicted = Stored(v1::JOB_STATE_PREEMPTING, 20);
  v1::Attempt* a = evicted.mutable_attempts(0);
  a->set_evicted_for(77);
  a->set_preempted_ms(1'900'000);
  a->set_preempt_deadline_ms(1'950'000);  // extended while a checkpoint was written
  std::optional<LiveAttempt> e = RecoverAttempt(evicted, now);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->outcome, O::kEvicted);
  EXPECT_EQ(e->outcome_reason, "evicted for job 77");
  EXPECT_EQ(e->evicting_for, 77u);
  EXPECT_EQ(e->kill_signal, SIGUSR1);
  EXPECT_EQ(e->preempted, absl::FromUnixMillis(1'900'000));
  EXPECT_EQ(e->preempt_deadline, absl::FromUnixMillis(1'950'000)) << "the agents' deadline";

  a->set_drained_node("n2");
  a->clear_preempted_ms();
  a->clear_preempt_deadline_ms();
  e = RecoverAttempt(evicted, now);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->outcome_reason, "node n2 drained");
  EXPECT_EQ(e->preempted, now) << "an older record: a fresh grace";
  EXPECT_EQ(e->preempt_deadline, now + absl::Seconds(20));
}

}  // namespace
}  // namespace baton::attempt_tracker_test
