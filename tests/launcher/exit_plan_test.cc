// DecideExit: what one process's exit means to its attempt, as a table of cases.
#include "launcher/agent/exit_plan.h"

#include <signal.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::exit_plan_test {
namespace {

using Action = ExitDecision::Action;

// Two ranks running, no daemon: the common attempt on a node.
ExitView TwoRanks() {
  ExitView v;
  v.is_rank = true;
  v.ranks = 2;
  return v;
}

ExitView With(ExitView v, void (*change)(ExitView&)) {
  change(v);
  return v;
}

struct Row {
  std::string name;
  ExitView view;
  ExitStatus status;
  bool hung_up = false;
  Action action;
  bool first_failure = false;
  std::string message;
  bool stop_others = false;
  bool ended = false;
};

const ExitStatus kOk{0, 0};
const ExitStatus kCode3{3, 0};
const ExitStatus kKilled{0, SIGKILL};

TEST(ExitPlan, EachExitAsATable) {
  const std::vector<Row> rows = {
      {"a rank exits cleanly while another runs", TwoRanks(), kOk, false, Action::kRank},
      {"the last rank exits cleanly", With(TwoRanks(), [](ExitView& v) { v.ranks = 1; }), kOk,
       false, Action::kRank, false, "", false, true},
      {"the first failing rank stops the others", TwoRanks(), kCode3, false, Action::kRank, true,
       "a rank exited with code 3", true, false},
      {"a rank killed by a signal: the signal is named", TwoRanks(), kKilled, false, Action::kRank,
       true, "a rank was killed by signal 9", true, false},
      {"a failure after the first: the first's code stays",
       With(TwoRanks(), [](ExitView& v) { v.failed = true; }), kCode3, false, Action::kRank},
      {"a failing rank of an attempt told to stop: no second stop",
       With(TwoRanks(), [](ExitView& v) { v.stop_ordered = true; }), kKilled, false, Action::kRank,
       true, "a rank was killed by signal 9", false, false},
      {"the report says why already: its message stays",
       With(TwoRanks(), [](ExitView& v) { v.has_message = true; }), kCode3, false, Action::kRank,
       true, "", true, false},
      {"the last rank fails: nothing left to stop, it has ended",
       With(TwoRanks(), [](ExitView& v) { v.ranks = 1; }), kCode3, false, Action::kRank, true,
       "a rank exited with code 3", false, true},
      {"the last rank of an mpi node still awaiting its daemon",
       With(TwoRanks(),
            [](ExitView& v) {
              v.ranks = 1;
              v.awaiting_exec = true;
            }),
       kOk, false, Action::kRank},
      {"its launch is being started: the exit waits",
       With(TwoRanks(),
            [](ExitView& v) {
              v.launching = true;
              v.is_rank = false;
              v.ranks = 0;
            }),
       kCode3, false, Action::kWait},
      {"an unknown pid while a daemon starts: it may be that daemon's",
       With(TwoRanks(),
            [](ExitView& v) {
              v.is_rank = false;
              v.execs_starting = 1;
            }),
       kCode3, false, Action::kWait},
      {"a known rank while a daemon starts is handled now",
       With(TwoRanks(), [](ExitView& v) { v.execs_starting = 1; }), kOk, false, Action::kRank},
      {"a pid it does not hold (seen already) changes nothing",
       With(TwoRanks(), [](ExitView& v) { v.is_rank = false; }), kCode3, false, Action::kIgnore},
      {"its daemon fails: a failure of the attempt",
       With(ExitView{},
            [](ExitView& v) {
              v.is_daemon = true;
              v.daemons = 1;
              v.ranks = 1;
            }),
       kCode3, false, Action::kDaemon, true, "a rank exited with code 3", true, false},
      {"its daemon killed as its exec client hung up: no failure",
       With(ExitView{},
            [](ExitView& v) {
              v.is_daemon = true;
              v.daemons = 1;
            }),
       kKilled, true, Action::kDaemon, false, "", false, true},
      {"hung up means nothing for a rank", With(TwoRanks(), [](ExitView& v) { v.ranks = 1; }),
       kKilled, true, Action::kRank, true, "a rank was killed by signal 9", false, true},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    ExitDecision d = DecideExit(r.view, r.status, r.hung_up);
    EXPECT_EQ(d.action, r.action);
    EXPECT_EQ(d.first_failure, r.first_failure);
    EXPECT_EQ(d.message, r.message);
    EXPECT_EQ(d.stop_others, r.stop_others);
    EXPECT_EQ(d.ended, r.ended);
  }
}

}  // namespace
}  // namespace baton::exit_plan_test
