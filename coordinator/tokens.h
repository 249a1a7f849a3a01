// Service tokens for automation: "btk_<id>_<secret>", 256 random bits of secret, of which
// only the SHA-256 is stored (store.proto StoredToken). Verification is in memory (a
// hash and a constant-time compare), so token-authenticated calls cost microseconds; a
// revocation takes effect for every call that starts after Revoke returns. The records
// are written by the caller (JobManager::CommitAudited) and loaded at start. Thread-safe.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "proto/api.pb.h"
#include "proto/store.pb.h"

namespace baton {

inline constexpr char kTokenPrefix[] = "btk_";
inline constexpr absl::Duration kDefaultTokenTtl = absl::Hours(24 * 30);
inline constexpr absl::Duration kMaxTokenTtl = absl::Hours(24 * 3650);

class TokenRegistry {
 public:
  explicit TokenRegistry(Clock* clock) : clock_(clock) {}

  // The stored tokens, at start (replaces what is known).
  void Load(const std::vector<v1::StoredToken>& stored);

  // The record of the token a caller presents. Unauthenticated, saying why, for a token
  // that is malformed, unknown, wrong, revoked or expired.
  absl::StatusOr<v1::StoredToken> Verify(std::string_view token) const;

  struct Minted {
    v1::StoredToken record;  // to store, then Add
    std::string token;       // to show once
  };
  // A new token for `req.user()` (the caller checks the user exists and may be bound to
  // the tenant). InvalidArgument for a bad TTL or comment.
  absl::StatusOr<Minted> Mint(const v1::CreateTokenRequest& req,
                              const std::string& created_by) const;
  void Add(const v1::StoredToken& record);
  // Refused by Verify from now on; returns the record to store. NotFound for unknown ids;
  // revoking twice returns the first revocation.
  absl::StatusOr<v1::StoredToken> Revoke(const std::string& id, const std::string& by);
  // Newest first; `all` includes revoked and expired tokens.
  std::vector<v1::StoredToken> List(bool all) const;

  // What admins see of a token: everything but its hash.
  static v1::TokenInfo Info(const v1::StoredToken& record);

 private:
  Clock* const clock_;
  mutable std::shared_mutex mu_;
  std::map<std::string, v1::StoredToken> tokens_;  // by id
};

}  // namespace baton
