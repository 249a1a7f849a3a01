// Helpers every binary that speaks baton.proto shares: the caller identity carried in
// metadata, the single absl <-> gRPC status conversion, and human names for enums.
// Pure functions; thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/baton.pb.h"

namespace baton {

namespace v1 = ::baton::v1;

inline constexpr char kUserKey[] = "x-baton-user";
inline constexpr char kTenantKey[] = "x-baton-tenant";
inline constexpr char kRoleKey[] = "x-baton-role";

enum class Role { kResearcher, kAdmin, kAgent };

// Who makes a call. Until TLS and tokens land this is asserted by the client and the
// listeners bind loopback or a private network.
struct Caller {
  std::string user;
  std::string tenant;
  Role role = Role::kResearcher;
};

std::string_view RoleName(Role role);
absl::StatusOr<Role> ParseRole(std::string_view name);

void AttachCaller(const Caller& caller, grpc::ClientContext* ctx);
// UNAUTHENTICATED when an entry is missing or malformed.
absl::StatusOr<Caller> CallerFromMetadata(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

// The one place where absl and gRPC statuses meet (their codes are the same numbers).
grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

// "running", "pending", … (lower case, no prefix); "unknown" for unspecified values.
std::string StateName(v1::JobState state);
absl::StatusOr<v1::JobState> ParseStateName(std::string_view name);
bool IsTerminal(v1::JobState state);
std::string LaunchModeName(v1::LaunchMode mode);
std::string RestartPolicyName(v1::RestartPolicy policy);
std::string NodeStateName(v1::NodeState state);
// "transition", "scheduling", "eviction", "quota_refusal", "policy", "node"; stored
// events without a kind are transitions.
std::string EventKindName(v1::EventKind kind);
absl::StatusOr<v1::EventKind> ParseEventKindName(std::string_view name);

}  // namespace baton
