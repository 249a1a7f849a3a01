// Authentication at the coordinator's edge: a call's credential becomes a Caller
// (access.h), or the call is refused UNAUTHENTICATED. People present a MUNGE credential
// (metadata x-baton-munge), decoded by this host's munged, which proves the uid and
// refuses expired and replayed credentials; automation presents a service token
// (authorization: Bearer, tokens.h). The uid or the token's user becomes a name and
// groups through NSS (users.h). Nothing else in the request is believed. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/munge.h"
#include "coordinator/access.h"
#include "coordinator/tokens.h"
#include "coordinator/users.h"

namespace baton {

struct AuthnOptions {
  std::string munge_socket = kDefaultMungeSocket;  // this host's munged
};

class Authenticator {
 public:
  // `tokens` and `users` must outlive the Authenticator.
  Authenticator(AuthnOptions options, const TokenRegistry* tokens, UserDirectory* users)
      : options_(std::move(options)), tokens_(tokens), users_(users) {}

  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& ctx) const;
  // The same, from a call's metadata.
  absl::StatusOr<Caller> FromMetadata(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const;
  // A service token's secret (what follows "Bearer "): the web dashboard's callers too.
  absl::StatusOr<Caller> FromToken(std::string_view token) const;

 private:
  absl::StatusOr<Caller> FromMunge(const std::string& credential) const;

  const AuthnOptions options_;
  const TokenRegistry* const tokens_;
  UserDirectory* const users_;
};

}  // namespace baton
