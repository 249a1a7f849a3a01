#include "launcher/cli/client.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "common/munge.h"
#include "proto/tls.h"

namespace baton::cli {
namespace {

// Set when this process talks plaintext (--insecure): failures then say so.
bool plaintext_used = false;

}  // namespace

ConnectOptions ConnectOptionsFromEnv() {
  ConnectOptions o;
  auto env = [](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return std::string(v && *v ? v : fallback);
  };
  o.coordinator = env("BATON_COORDINATOR", "127.0.0.1:7070");
  o.ca_file = env("BATON_CA", kDefaultCaFile);
  o.insecure = env("BATON_INSECURE", "") == "1";
  o.munge_socket = env("BATON_MUNGE_SOCKET", kDefaultMungeSocket);
  o.token = env("BATON_TOKEN", "");
  return o;
}

absl::StatusOr<std::pair<std::string, std::string>> Credential(const ConnectOptions& options) {
  if (!options.token.empty()) return std::make_pair(kAuthorizationKey, "Bearer " + options.token);
  auto cred = MungeEncode(options.munge_socket, kMungeAudience);
  if (!cred.ok()) return cred.status();
  return std::make_pair(kMungeKey, *cred);
}

Client::Client(ConnectOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  SetClientMessageLimits(&args);
  // Fail fast when nothing listens: a CLI should not sit in reconnect backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  auto target = ParseCoordinatorTarget(options_.coordinator);
  if (!target.ok()) {
    std::cerr << "baton: BATON_COORDINATOR / --coordinator: " << target.status().message() << "\n";
    ExitNow(kUsage);
  }
  SetCoordinatorChannelArgs(*target, &args);
  replicas_ = target->replicas;
  TlsOptions tls_options;
  tls_options.ca_file = options_.ca_file;
  tls_options.insecure = options_.insecure;
  auto tls = LoadTls(tls_options, /*need_cert=*/false);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> creds =
      tls.ok() ? ChannelCredentials(*tls, target->first) : tls.status();
  if (!creds.ok()) {
    std::string why(creds.status().message());
    if (!options_.insecure) {
      // The CLI's own names for the server's flags.
      for (auto [flag, env] : {std::pair{"--tls-ca", "BATON_CA"}}) {
        if (why.rfind(flag, 0) == 0) why = env + why.substr(std::string(flag).size());
      }
    }
    std::cerr << "baton: " << why << "\n";
    ExitNow(kUsage);
  }
  if (options_.insecure) {
    plaintext_used = true;
    std::cerr << "baton: warning: --insecure: plaintext to " << options_.coordinator << "\n";
  }
  channel_ = grpc::CreateCustomChannel(target->uri, *creds, args);
  // Connect (TCP + TLS handshake) on gRPC's threads while this one makes the credential.
  channel_->GetState(/*try_to_connect=*/true);
  stub_ = v1::Coordinator::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Client::Context(bool streaming) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  auto cred = Credential(options_);
  if (!cred.ok()) {
    std::cerr << "baton: cannot prove who you are: " << cred.status().message() << "\n";
    ExitNow(kDenied);
  }
  ctx->AddMetadata(cred->first, cred->second);
  if (replicas_) ctx->set_wait_for_ready(true);
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
    case absl::StatusCode::kResourceExhausted:
      return kThrottled;
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
    if (coordinator.find(',') != std::string::npos) {
      msg += " (no replica led within the call's deadline: is etcd's quorum up?)";
    }
    if (plaintext_used) {
      msg += " (this call was plaintext, --insecure: a coordinator speaking TLS refuses it)";
    } else if (msg.find("SSL") != std::string::npos || msg.find("ssl") != std::string::npos ||
               msg.find("andshake") != std::string::npos) {
      msg +=
          " (a TLS failure: is BATON_CA the cluster's CA, and does the coordinator's "
          "certificate name the address you dial?)";
    }
  }
  std::cerr << "baton: " << what << ": " << msg << "\n";
  return ExitCodeFor(code);
}

void ExitNow(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace baton::cli
