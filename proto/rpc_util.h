// Helpers every binary that speaks the public API shares: the metadata keys credentials
// travel in, the single absl <-> gRPC status conversion, and human names for enums.
// Pure functions; thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/api.pb.h"

namespace baton {

// How a person's MUNGE credential travels (one fresh credential per call), and a
// service token (`authorization: Bearer btk_…`).
inline constexpr char kMungeKey[] = "x-baton-munge";
inline constexpr char kAuthorizationKey[] = "authorization";

// Message sizes every channel and server of baton sets. A request (a spec within the
// policy's ceilings, a policy file) fits kMaxRequestBytes; a reply fits kMaxReplyBytes
// (listings are paged at kListPageBytes), so anything admitted is always deliverable.
inline constexpr int kMaxRequestBytes = 16 << 20;
inline constexpr int kMaxReplyBytes = 64 << 20;
inline constexpr size_t kListPageBytes = 2 << 20;
// Clients send requests and receive replies; servers the other way round.
void SetClientMessageLimits(grpc::ChannelArguments* args);
void SetServerMessageLimits(grpc::ServerBuilder* builder);

// Where a client dials the coordinator: one host:port, or (HA) several replicas'
// "ip:port,ip:port,…" of which the channel sends every call to the one whose health
// service says SERVING for kLeaderHealthService (the leader; standbys say NOT_SERVING).
struct CoordinatorTarget {
  std::string uri;    // what to give grpc::CreateCustomChannel
  std::string first;  // the first host:port
  bool replicas = false;
};
// The DNS name every coordinator certificate carries (scripts/certs.sh): replicas of a
// list are verified as it, whatever address they were dialled at.
inline constexpr char kCoordinatorTlsName[] = "baton-coordinator";
// InvalidArgument naming the entry when a list holds something other than ip:port.
absl::StatusOr<CoordinatorTarget> ParseCoordinatorTarget(std::string_view list);
// For replicas: round-robin over the healthy (leading) one, each verified as
// kCoordinatorTlsName. Nothing for a single address.
void SetCoordinatorChannelArgs(const CoordinatorTarget& target, grpc::ChannelArguments* args);

// Throttling: ResourceExhausted carrying when to try again. The service passes the hint
// on as trailing metadata (kRetryAfterKey, whole milliseconds); the message says it too.
inline constexpr char kRetryAfterKey[] = "x-baton-retry-after-ms";
// A standby coordinator replica refuses calls with UNAVAILABLE and the leader's address
// under this trailing metadata key (coordinator/ha/standby_service.h).
inline constexpr char kLeaderKey[] = "x-baton-leader";
// The service name a coordinator's health service reports SERVING for only while it
// leads (a standby replica: NOT_SERVING): clients given several replicas pick by it.
inline constexpr char kLeaderHealthService[] = "baton.v1.Coordinator";
absl::Status Throttled(const std::string& message, absl::Duration retry_after);
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

// The one place where absl and gRPC statuses meet (their codes are the same numbers).
grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

// "running", "pending", … (lower case, no prefix); "unknown" for unspecified values.
std::string StateName(v1::JobState state);
absl::StatusOr<v1::JobState> ParseStateName(std::string_view name);
bool IsTerminal(v1::JobState state);
// "ok:17", "any:18", "notok:19", "ok:17_3": a dependency as `baton submit --after` takes it.
std::string DependencyName(const v1::JobDependency& d);
std::string LaunchModeName(v1::LaunchMode mode);
std::string RestartPolicyName(v1::RestartPolicy policy);
std::string NodeStateName(v1::NodeState state);
// "transition", "scheduling", "eviction", "quota_refusal", "policy", "node"; stored
// events without a kind are transitions.
std::string EventKindName(v1::EventKind kind);
absl::StatusOr<v1::EventKind> ParseEventKindName(std::string_view name);

}  // namespace baton
