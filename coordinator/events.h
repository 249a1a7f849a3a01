// Builders for the events that are not job transitions (event_log.h): scheduling
// decisions, evictions, refused specs, policy changes and node changes, each with its
// kind, machine-readable code and human text; and the lost work of an eviction. The
// JobManager numbers and stores what these return. Pure; thread-safe.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "coordinator/access.h"
#include "proto/api.pb.h"

namespace baton::events {

// A decision about a job: `code` "placed" (the transition follows), "waiting", … .
v1::Event Scheduling(const v1::Job& job, const std::string& code, const std::string& text);
// The job's current attempt was evicted for `reason` ("node_lost", "preempted",
// "reclaimed", …); carries the GPU-seconds it lost (LostGpuSeconds at `now_ms`).
v1::Event Eviction(const v1::Job& job, const std::string& reason, const std::string& why,
                   int64_t now_ms);
// A spec refused at submit: the caller, the class and tenant asked for, the message.
v1::Event Refusal(const Caller& caller, const v1::JobSpec& spec, const absl::Status& why);
// Audit: `actor` changed the policy; `summary` says what changed ("tenant vision: weight
// 1 -> 2").
v1::Event PolicyChange(const std::string& actor, const std::string& summary);
// Audit of another admin action on who may do what: `code` "token_created",
// "token_revoked".
v1::Event AccessChange(const std::string& actor, const std::string& code,
                       const std::string& summary);
// A node's state changed: `code` "registered", "reconnected", "disconnected", "lost".
// `actor` "": the node's agent ("coordinator" for a node declared lost).
v1::Event NodeChange(const v1::Node& node, const std::string& code, const std::string& text,
                     const std::string& actor = "");

// GPU-seconds the job's current attempt ran since its last committed checkpoint (or its
// start), up to its end or `now_ms`: what an eviction throws away. 0 before it started,
// and 0 for an evicted attempt that exited cleanly after a checkpoint it committed during
// the eviction (that save holds all its work).
double LostGpuSeconds(const v1::Job& job, int64_t now_ms);

// When attempt `a`'s newly reported checkpoint was committed, for LostGpuSeconds: the time
// its agent read from the job's progress note (`reported_ms`; 0: none, so `now_ms`), kept
// between the attempt's previous checkpoint (or its start) and now. The job writes that
// note, so it could only claim an earlier commit, which makes it look costlier to evict
// but no more than never saving would; a later one than now is a skewed clock.
int64_t CheckpointTimeMs(const v1::Attempt& a, int64_t reported_ms, int64_t now_ms);

// When attempt `a` ended, for LostGpuSeconds: the latest end its `nodes` agents reported
// (`reported`, node -> that node's clock), kept between its start and now, when every node
// reported one; else `now` (a lost node, an older agent). An end heard late (after a
// coordinator outage) is then still when it happened, like its checkpoint.
absl::Time Ended(const v1::Attempt& a, size_t nodes,
                 const std::map<std::string, absl::Time>& reported, absl::Time now);

}  // namespace baton::events
