#include "coordinator/authn.h"

#include "proto/rpc_util.h"

namespace baton {
namespace {

// A credential of ours (a short payload) is a few hundred bytes; anything much longer is
// not one, and is not handed to munged.
constexpr size_t kMaxMungeCredentialBytes = 4096;

constexpr char kNoCredential[] =
    "no credential: the call carries neither a MUNGE credential (the baton CLI gets one from "
    "the local munged for every call; BATON_MUNGE_SOCKET names its socket) nor a service "
    "token (authorization: Bearer, BATON_TOKEN)";

}  // namespace

absl::StatusOr<Caller> Authenticator::Authenticate(const grpc::ServerContextBase& ctx) const {
  return FromMetadata(ctx.client_metadata());
}

absl::StatusOr<Caller> Authenticator::FromMetadata(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const {
  auto munge = metadata.equal_range(kMungeKey);
  auto bearer = metadata.equal_range(kAuthorizationKey);
  size_t mungeCount = std::distance(munge.first, munge.second);
  size_t bearerCount = std::distance(bearer.first, bearer.second);
  if (mungeCount + bearerCount == 0) return absl::UnauthenticatedError(kNoCredential);
  if (mungeCount + bearerCount > 1) {
    return absl::UnauthenticatedError(
        "more than one credential: send one MUNGE credential or one service token");
  }
  if (bearerCount == 1) {
    std::string_view value(bearer.first->second.data(), bearer.first->second.size());
    constexpr std::string_view kScheme = "Bearer ";
    if (value.substr(0, kScheme.size()) != kScheme) {
      return absl::UnauthenticatedError("authorization: expected 'Bearer <token>'");
    }
    return FromToken(value.substr(kScheme.size()));
  }
  if (munge.first->second.size() > kMaxMungeCredentialBytes) {
    return absl::UnauthenticatedError("x-baton-munge: longer than any MUNGE credential");
  }
  return FromMunge(std::string(munge.first->second.data(), munge.first->second.size()));
}

absl::StatusOr<Caller> Authenticator::FromToken(std::string_view token) const {
  auto record = tokens_->Verify(token);
  if (!record.ok()) return record.status();
  auto user = users_->ByName(record->user());
  if (!user.ok()) {
    return absl::UnauthenticatedError("service token " + record->id() + " acts as user '" +
                                      record->user() + "', whom this coordinator does not know");
  }
  Caller c;
  c.user = user->name;
  c.uid = user->uid;
  c.groups = user->groups;
  c.method = "token";
  c.token_id = record->id();
  c.token_tenant = record->tenant();
  return c;
}

absl::StatusOr<Caller> Authenticator::FromMunge(const std::string& credential) const {
  auto cred = MungeDecode(options_.munge_socket, credential);
  if (!cred.ok()) {
    if (cred.status().code() == absl::StatusCode::kUnavailable) {
      // Our munged is down: the caller can do nothing about it but retry.
      return absl::UnavailableError("the coordinator cannot check MUNGE credentials: " +
                                    std::string(cred.status().message()));
    }
    return cred.status();
  }
  if (cred->payload != kMungeAudience) {
    return absl::UnauthenticatedError(
        "MUNGE credential refused: it was not made for baton (its payload names another "
        "service)");
  }
  auto user = users_->ByUid(cred->uid);
  if (!user.ok()) {
    return absl::UnauthenticatedError("MUNGE credential of uid " + std::to_string(cred->uid) +
                                      ", which has no user name on the coordinator (NSS)");
  }
  Caller c;
  c.user = user->name;
  c.uid = user->uid;
  c.groups = user->groups;
  c.method = "munge";
  return c;
}

}  // namespace baton
