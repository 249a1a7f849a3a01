#include "proto/rpc_util.h"

#include <algorithm>
#include <cctype>

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
