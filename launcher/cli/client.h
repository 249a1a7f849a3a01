// How the `baton` CLI talks to the coordinator: the address (--coordinator or
// BATON_COORDINATOR), the caller (BATON_USER, BATON_TENANT, BATON_ROLE), a deadline on
// every unary call, and the mapping from a failed call to a one-line message and a
// documented exit code. Single-threaded use.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "proto/baton.grpc.pb.h"
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
  kCancelledJob = 130,  // submit --wait: the job was cancelled
};

struct ConnectOptions {
  std::string coordinator;  // host:port
  Caller caller;
  std::chrono::milliseconds timeout{10'000};
};

// Reads the environment; flags override the fields afterwards.
ConnectOptions ConnectOptionsFromEnv();

class Client {
 public:
  explicit Client(ConnectOptions options);
  v1::Coordinator::Stub* stub() { return stub_.get(); }
  // A context with the caller attached and, unless `streaming`, the deadline set.
  std::unique_ptr<grpc::ClientContext> Context(bool streaming = false) const;
  const ConnectOptions& options() const { return options_; }

 private:
  ConnectOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

// Prints "baton: <what>: <message>" to stderr and returns the exit code for `status`.
int ReportError(const std::string& what, const grpc::Status& status,
                const std::string& coordinator);
int ExitCodeFor(absl::StatusCode code);

}  // namespace baton::cli
