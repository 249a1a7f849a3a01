// A live attempt as the coordinator tracks it: each node's part (launching, running,
// exited), why it is stopping, how it ended, a checkpoint being written during an
// eviction. What an agent's report or a stop order does to it is decided here, with no
// store, no clock, no commands and no lock; the JobManager applies the effects (commands
// to agents, the job's transitions, FinishAttemptLocked once every part has ended).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/attempt_end.h"
#include "proto/agent.pb.h"
#include "proto/api.pb.h"

namespace baton {

// Where a node's part of an attempt stands.
enum class AttemptPhase { kLaunching, kRunning, kExited };

struct LiveAttempt {
  std::map<std::string, AttemptPhase> nodes;  // node name -> phase
  AttemptOutcome outcome = AttemptOutcome::kNone;
  std::string outcome_reason;
  int32_t exit_code = 0;  // how its processes ended (the first failure's)
  int32_t term_signal = 0;
  int32_t kill_signal = 0;  // nonzero once a stop was ordered (resent on reconnect)
  uint32_t kill_grace = 0;
  absl::Time preempted = absl::InfinitePast();         // evictions: when the Preempt was first sent
  absl::Time preempt_deadline = absl::InfinitePast();  // evictions: when agents kill the rest
  uint64_t evicting_for = 0;                           // evictions: the preemptor
  std::optional<int64_t> saving_step;                  // a checkpoint being written (progress note)
  std::string saving_node;                             // the node whose agent reported it
  // When each node's part ended, as its agent reported it (the node's clock): with every
  // node's, the attempt's end is theirs, not when we heard.
  std::map<std::string, absl::Time> node_end;
  std::string exec_secret;  // what `baton-agent exec` must present (store.proto; never public)

  // True when no node's part runs or launches any more.
  bool AllExited() const;
};

// A stored job's live attempt, as it is tracked again after a coordinator restart (none for
// a job that holds no resources). Its parts launch or run as the job's state says; a
// cancel or an eviction in progress goes on (its orders are sent again as the agents
// return), an eviction with the deadline the agents hold (`now` + its grace for a record
// from before deadlines were stored).
std::optional<LiveAttempt> RecoverAttempt(const v1::Job& job, absl::Time now);

// A stop to send: the signal, the agents' grace before SIGKILL, why, and to which nodes.
struct StopOrder {
  int signal = 0;
  uint32_t grace = 0;
  std::string reason;
  std::vector<std::string> nodes;  // every node whose part has not ended
};

// Orders the attempt to stop. The first order's signal and grace are the attempt's (sent
// again to an agent that reconnects); every order goes to the parts not yet ended.
StopOrder OrderStop(LiveAttempt& live, int signal, uint32_t grace, std::string reason);

// The parts not yet ended: where an order for the whole attempt goes.
std::vector<std::string> UnendedParts(const LiveAttempt& live);

// Evicts the attempt: its ranks get SIGUSR1 and checkpoint, and the agents SIGKILL what is
// left `grace` after `now`. Returns the nodes that get the Preempt, or nothing when the
// attempt is stopping already (for any reason: the first stop stays the attempt's).
std::optional<std::vector<std::string>> BeginEviction(LiveAttempt& live, std::string reason,
                                                      uint64_t preemptor, absl::Duration grace,
                                                      absl::Time now);

// A checkpoint is being written during an eviction: its deadline moves to `now` + `grace`,
// but never past `cap_factor` graces after the Preempt, never back, and only in steps of
// at least a quarter grace (250 ms at least), so that a save reporting progress costs one
// store write and one command per node every few seconds, not one per report. A grace
// under 1 s counts as 1 s. Returns the new deadline, or nothing when it stays.
absl::Duration GraceCap(absl::Duration grace, double cap_factor);  // from the Preempt
std::optional<absl::Time> ExtendedDeadline(const LiveAttempt& live, absl::Duration grace,
                                           double cap_factor, absl::Time now);

// Stops an attempt that has run `max_runtime` or longer at `now` since it `started` (none:
// not running yet; a zero max: no limit), unless it is stopping already: SIGTERM, then
// SIGKILL after `grace`, as a cancel. Returns the stop to send, or nothing.
std::optional<StopOrder> StopForMaxRuntime(LiveAttempt& live, std::optional<absl::Time> started,
                                           absl::Duration max_runtime, uint32_t grace,
                                           absl::Time now);

// What follows an agent's report on its part of the attempt.
struct ReportEffects {
  bool resend_launch = false;     // the node gets its part's Launch again
  bool resend_preempt = false;    // the node gets the eviction's Preempt again
  bool resend_stop = false;       // the node gets the stop ordered before again (kill_signal)
  bool extend_grace = false;      // a checkpoint is being written during the eviction
  bool all_running = false;       // every part runs (the job is RUNNING if it was SCHEDULED)
  std::optional<StopOrder> stop;  // the gang is told to stop (a failure, a disconnected stop)
  bool ended = false;             // every part has ended: the attempt is over
};

// What a report changes in the stored attempt record `a` at `now_ms`: that its job reports
// progress (once said, it stays said), and a newer committed checkpoint step with its time
// (CheckpointTimeMs; an older or equal step changes nothing). Returns whether `a` changed.
bool RecordProgress(v1::Attempt& a, const v1::AttemptReport& r, int64_t now_ms);

// Records `node`'s report on a current attempt (the node is one of the attempt's).
// `registering`: the report came with a (re)registration, so the agent may have missed
// the stop orders: they go again (else only with its first running report, since a second
// SIGTERM or SIGUSR1 can end a rank mid-save). `failure_grace`: the grace the rest of the
// gang gets after a failure.
ReportEffects ApplyReport(LiveAttempt& live, const std::string& node, const v1::AttemptReport& r,
                          bool registering, uint32_t failure_grace);

// `node`'s part is gone with no report of its end (the node was lost; its agent restarted
// and no longer knows it): unless the attempt is stopping already, it stops as for a lost
// node (`reason`), the rest of the gang with `failure_grace`; the part counts as ended.
ReportEffects PartLost(LiveAttempt& live, const std::string& node, const std::string& reason,
                       uint32_t failure_grace);

// How long a part on a lost node may stay silent before it counts as ended and the job is
// replaced: its agent stops it `stop_after_disconnect` after the last contact (counted
// from what the agent last heard, no earlier than what the coordinator last heard) and
// kills it `grace` later; then `margin`. With no such stop (a service: nothing given), the
// node's being declared lost (`lost_after`) is enough.
absl::Duration ReplaceAfter(std::optional<absl::Duration> stop_after_disconnect,
                            absl::Duration grace, absl::Duration margin, absl::Duration lost_after);

// `node`'s agent registered and did not mention its part of attempt `attempt`. A part still
// launching, with no stop ordered, gets its launch again (it may have been lost with the
// previous stream; an agent ignores a launch for an attempt it runs already). Any other
// part is lost, as PartLost says, because the agent restarted and no longer knows it.
ReportEffects PartUnmentioned(LiveAttempt& live, const std::string& node, uint32_t attempt,
                              uint32_t failure_grace);

}  // namespace baton
