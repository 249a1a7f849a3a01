#include "proto/rpc_util.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace baton {
namespace {

constexpr char kRetryAfterPayload[] = "baton.dev/retry-after-ms";

std::string EnumSuffix(const std::string& full, std::string_view prefix) {
  std::string out = full.substr(std::min(full.size(), prefix.size()));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return c == '_' ? '-' : std::tolower(c); });
  return out;
}

}  // namespace

void SetClientMessageLimits(grpc::ChannelArguments* args) {
  args->SetMaxSendMessageSize(kMaxRequestBytes);
  args->SetMaxReceiveMessageSize(kMaxReplyBytes);
}

absl::StatusOr<CoordinatorTarget> ParseCoordinatorTarget(std::string_view list) {
  CoordinatorTarget t;
  std::vector<std::string> entries;
  for (std::string_view rest = list;;) {
    size_t comma = rest.find(',');
    std::string_view e = rest.substr(0, comma);
    while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
    while (!e.empty() && e.back() == ' ') e.remove_suffix(1);
    if (!e.empty()) entries.emplace_back(e);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (entries.empty()) return absl::InvalidArgumentError("no coordinator address given");
  t.first = entries[0];
  if (entries.size() == 1) {
    t.uri = entries[0];
    return t;
  }
  // gRPC's static resolvers take a list of numeric addresses of one family.
  bool v6 = !entries[0].empty() && entries[0][0] == '[';
  for (const auto& e : entries) {
    size_t colon = e.rfind(':');
    std::string host = colon == std::string::npos ? "" : e.substr(0, colon);
    std::string port = colon == std::string::npos ? "" : e.substr(colon + 1);
    bool ok = !port.empty() && port.find_first_not_of("0123456789") == std::string::npos;
    if (v6) {
      ok = ok && host.size() > 2 && host.front() == '[' && host.back() == ']';
    } else {
      ok = ok && !host.empty() && host.find_first_not_of("0123456789.") == std::string::npos;
    }
    if (!ok) {
      return absl::InvalidArgumentError("coordinator replica '" + e +
                                        "': list replicas as ip:port (one address family), e.g. "
                                        "10.0.0.1:7070,10.0.0.2:7070");
    }
  }
  t.uri = std::string(v6 ? "ipv6:" : "ipv4:");
  for (size_t i = 0; i < entries.size(); ++i) t.uri += (i ? "," : "") + entries[i];
  t.replicas = true;
  return t;
}

void SetCoordinatorChannelArgs(const CoordinatorTarget& target, grpc::ChannelArguments* args) {
  if (!target.replicas) return;
  args->SetServiceConfigJSON(std::string(R"({"loadBalancingConfig":[{"round_robin":{}}],)") +
                             R"("healthCheckConfig":{"serviceName":")" + kLeaderHealthService +
                             R"("}})");
  // One name for every replica, which scripts/certs.sh puts in each coordinator
  // certificate: the addresses of a list are many, a subchannel's TLS check needs one.
  args->SetSslTargetNameOverride(kCoordinatorTlsName);
  args->SetString(GRPC_ARG_DEFAULT_AUTHORITY, target.first);
}

void SetServerMessageLimits(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(kMaxRequestBytes);
  builder->SetMaxSendMessageSize(kMaxReplyBytes);
}

absl::Status Throttled(const std::string& message, absl::Duration retry_after) {
  int64_t ms = std::max<int64_t>(
      1, absl::ToInt64Milliseconds(absl::Ceil(retry_after, absl::Milliseconds(1))));
  int64_t s = (ms + 999) / 1000;
  absl::Status status = absl::ResourceExhaustedError("throttled: " + message + "; retry in " +
                                                     std::to_string(s) + " s");
  status.SetPayload(kRetryAfterPayload, absl::Cord(std::to_string(ms)));
  return status;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  auto ms = status.GetPayload(kRetryAfterPayload);
  int64_t v = 0;
  if (!ms || !absl::SimpleAtoi(std::string(*ms), &v)) return std::nullopt;
  return absl::Milliseconds(v);
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string StateName(v1::JobState state) {
  if (state == v1::JOB_STATE_UNSPECIFIED || !v1::JobState_IsValid(state)) return "unknown";
  return EnumSuffix(v1::JobState_Name(state), "JOB_STATE_");
}

absl::StatusOr<v1::JobState> ParseStateName(std::string_view name) {
  for (int s = v1::JobState_MIN; s <= v1::JobState_MAX; ++s) {
    if (v1::JobState_IsValid(s) && s != v1::JOB_STATE_UNSPECIFIED &&
        StateName(static_cast<v1::JobState>(s)) == name) {
      return static_cast<v1::JobState>(s);
    }
  }
  return absl::InvalidArgumentError("unknown job state '" + std::string(name) + "'");
}

bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

std::string DependencyName(const v1::JobDependency& d) {
  return EnumSuffix(v1::DependencyKind_Name(d.kind()), "DEPENDENCY_KIND_") + ":" +
         std::to_string(d.job()) + (d.has_task() ? "_" + std::to_string(d.task()) : "");
}

std::string LaunchModeName(v1::LaunchMode mode) {
  if (mode == v1::LAUNCH_MODE_UNSPECIFIED) return "direct";
  return EnumSuffix(v1::LaunchMode_Name(mode), "LAUNCH_MODE_");
}

std::string RestartPolicyName(v1::RestartPolicy policy) {
  if (policy == v1::RESTART_POLICY_UNSPECIFIED) return "default";
  return EnumSuffix(v1::RestartPolicy_Name(policy), "RESTART_POLICY_");
}

std::string NodeStateName(v1::NodeState state) {
  if (state == v1::NODE_STATE_UNSPECIFIED) return "unknown";
  return EnumSuffix(v1::NodeState_Name(state), "NODE_STATE_");
}

std::string EventKindName(v1::EventKind kind) {
  if (kind == v1::EVENT_KIND_UNSPECIFIED || !v1::EventKind_IsValid(kind)) return "transition";
  std::string name = EnumSuffix(v1::EventKind_Name(kind), "EVENT_KIND_");
  std::replace(name.begin(), name.end(), '-', '_');  // "quota_refusal", as in the metrics
  return name;
}

absl::StatusOr<v1::EventKind> ParseEventKindName(std::string_view name) {
  for (int k = v1::EventKind_MIN + 1; k <= v1::EventKind_MAX; ++k) {
    if (v1::EventKind_IsValid(k) && EventKindName(static_cast<v1::EventKind>(k)) == name) {
      return static_cast<v1::EventKind>(k);
    }
  }
  return absl::InvalidArgumentError("unknown event kind '" + std::string(name) +
                                    "' (transition, scheduling, eviction, quota_refusal, "
                                    "policy, node)");
}

}  // namespace baton
