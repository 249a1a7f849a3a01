#include "launcher/cli/client.h"

#include <cstdlib>
#include <iostream>

namespace baton::cli {

ConnectOptions ConnectOptionsFromEnv() {
  ConnectOptions o;
  auto env = [](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return std::string(v && *v ? v : fallback);
  };
  o.coordinator = env("BATON_COORDINATOR", "127.0.0.1:7070");
  o.caller.user = env("BATON_USER", env("USER", "root").c_str());
  o.caller.tenant = env("BATON_TENANT", o.caller.user.c_str());
  auto role = ParseRole(env("BATON_ROLE", "researcher"));
  o.caller.role = role.ok() ? *role : Role::kResearcher;
  return o;
}

Client::Client(ConnectOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  // Fail fast when nothing listens: a CLI should not sit in reconnect backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  channel_ =
      grpc::CreateCustomChannel(options_.coordinator, grpc::InsecureChannelCredentials(), args);
  stub_ = v1::Coordinator::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Client::Context(bool streaming) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  AttachCaller(options_.caller, ctx.get());
  if (!streaming) ctx->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  return ctx;
}

int ExitCodeFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return kOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return kUsage;
    case absl::StatusCode::kNotFound:
      return kNotFound;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return kDenied;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kUnavailable;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return kWrongState;
    default:
      return kError;
  }
}

int ReportError(const std::string& what, const grpc::Status& status,
                const std::string& coordinator) {
  std::string msg = status.error_message();
  auto code = static_cast<absl::StatusCode>(status.error_code());
  if (code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded) {
    msg = "coordinator " + coordinator + " unavailable (" +
          (code == absl::StatusCode::kUnavailable ? "Unavailable" : "DeadlineExceeded") +
          "): " + msg + " — check --coordinator or BATON_COORDINATOR";
  }
  std::cerr << "baton: " << what << ": " << msg << "\n";
  return ExitCodeFor(code);
}

}  // namespace baton::cli
