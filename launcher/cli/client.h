// How the `baton` CLI talks to the coordinator: the address (--coordinator or
// BATON_COORDINATOR) over TLS verified against the cluster CA (BATON_CA), a credential
// on every call — a fresh MUNGE credential from the local munged (BATON_MUNGE_SOCKET),
// or a service token (BATON_TOKEN) — a deadline on every unary call, and the mapping
// from a failed call to a one-line message and a documented exit code. Nothing the CLI
// says about its user is believed: the coordinator learns the uid from MUNGE.
// Single-threaded use.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "proto/api.grpc.pb.h"
#include "proto/rpc_util.h"

namespace baton::cli {

// Exit codes (README "Exit codes"). `submit --wait` exits with the job's own code.
enum ExitCode : int {
  kOk = 0,
  kError = 1,           // anything else (internal errors)
  kUsage = 2,           // bad flags, spec or input
  kNotFound = 3,        // unknown job or node
  kDenied = 4,          // not allowed for this caller
  kUnavailable = 5,     // coordinator unreachable or too slow
  kWrongState = 6,      // e.g. cancelling a finished job
  kThrottled = 7,       // over a fair-use limit: "throttled: … retry in N s"
  kCancelledJob = 130,  // submit --wait: the job was cancelled
};

inline constexpr char kDefaultCaFile[] = "/etc/baton/tls/ca.crt";

struct ConnectOptions {
  std::string coordinator;               // host:port, or HA replicas' ip:port,ip:port,…
  std::string ca_file = kDefaultCaFile;  // BATON_CA: the cluster CA bundle
  bool insecure = false;                 // BATON_INSECURE=1 / --insecure: loopback only
  std::string munge_socket;              // BATON_MUNGE_SOCKET ("" : munged's default)
  std::string token;                     // BATON_TOKEN: a service token instead of MUNGE
  std::chrono::milliseconds timeout{10'000};
};

// Reads the environment; flags override the fields afterwards.
ConnectOptions ConnectOptionsFromEnv();

// The metadata entry that proves who calls: ("authorization", "Bearer <token>") with a
// token, else ("x-baton-munge", a credential made now). Unavailable when munged cannot
// be reached.
absl::StatusOr<std::pair<std::string, std::string>> Credential(const ConnectOptions& options);

class Client {
 public:
  // Exits with kUsage when TLS cannot be set up (a missing CA file, --insecure off
  // loopback): no call could be made.
  explicit Client(ConnectOptions options);
  v1::Coordinator::Stub* stub() { return stub_.get(); }
  // A context with a fresh credential attached and, unless `streaming`, the deadline
  // set. Exits with kDenied, saying why, when no credential can be had.
  std::unique_ptr<grpc::ClientContext> Context(bool streaming = false) const;
  const ConnectOptions& options() const { return options_; }
  // Given several HA replicas (the calls go to the leader).
  bool replicas() const { return replicas_; }

 private:
  ConnectOptions options_;
  // Several replicas: calls wait (within their deadline) for one to lead, so a failover
  // under way is ridden out rather than reported.
  bool replicas_ = false;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

// Prints "baton: <what>: <message>" to stderr and returns the exit code for `status`.
int ReportError(const std::string& what, const grpc::Status& status,
                const std::string& coordinator);
int ExitCodeFor(absl::StatusCode code);

// Ends the process with `code` once stdout and stderr are flushed, without running static
// destructors. gRPC's event-engine threads may still be running a connection attempt's
// callbacks, and destroying the globals under them crashed the CLI once (SIGSEGV in an
// `event_engine` thread, after a "timed out before receiving SETTINGS frame" error from an
// overloaded coordinator). Every command's files are closed by then.
[[noreturn]] void ExitNow(int code);

}  // namespace baton::cli
