// Address helpers for listeners: gRPC listeners are TLS (plaintext only on loopback);
// the unauthenticated metrics endpoint binds only loopback or private networks. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace baton {

// Splits "host:port" or "[v6]:port". InvalidArgument names the text when malformed.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(std::string_view address);

// True for 127/8, ::1 and localhost.
bool IsLoopback(std::string_view host);

// True for loopback (127/8, ::1, localhost) and private ranges (10/8, 172.16/12,
// 192.168/16, 169.254/16, fc00::/7). False for wildcards and public addresses.
bool IsLoopbackOrPrivate(std::string_view host);

// OK when an unauthenticated endpoint may listen on `address`; InvalidArgument naming
// `flag` otherwise.
absl::Status CheckListenAddress(std::string_view flag, std::string_view address);

// OK when a TCP listener could bind `port` on every address now (as a job's rendezvous
// does, SO_REUSEADDR); FailedPrecondition naming the port when something holds it.
absl::Status CheckTcpPortFree(int port);

}  // namespace baton
