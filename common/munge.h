// MUNGE credentials (libmunge, as on Slurm sites): a person's uid and gid, proven by the
// kernel to the local munged, which seals them with the cluster's shared key. The CLI
// encodes one credential per call; the coordinator decodes it through its own munged,
// which refuses a credential past its TTL or seen before (replay). Blocking calls on a
// Unix socket; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace baton {

// munged's socket on a Debian host (package munge).
inline constexpr char kDefaultMungeSocket[] = "/run/munge/munge.socket.2";
// What every baton credential carries: one made for another service (Slurm, say) is not
// accepted here, so a service that sees users' credentials cannot spend them on baton.
inline constexpr char kMungeAudience[] = "baton-coordinator";

struct MungeCredential {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string payload;
  int64_t encoded_unix_s = 0;
};

// A credential of the calling process's uid and gid. `ttl_seconds` 0: munged's default
// (300 s). Unavailable (naming the socket) when munged cannot be reached.
absl::StatusOr<std::string> MungeEncode(const std::string& socket, std::string_view payload,
                                        int ttl_seconds = 0);

// Unauthenticated (saying why: expired, replayed, invalid, …) for a credential that does
// not decode; Unavailable when munged cannot be reached.
absl::StatusOr<MungeCredential> MungeDecode(const std::string& socket,
                                            const std::string& credential);

}  // namespace baton
