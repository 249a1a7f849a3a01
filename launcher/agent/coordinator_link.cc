#include "launcher/agent/coordinator_link.h"

#include <grpcpp/grpcpp.h>

#include "proto/agent.grpc.pb.h"
#include "proto/rpc_util.h"

namespace baton {
namespace {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, const TlsMaterial& tls) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  SetClientMessageLimits(&args);
  // main() checked the target and that these credentials can be made (plaintext only on
  // loopback). Several HA replicas: the channel talks to the one that leads.
  auto parsed = ParseCoordinatorTarget(target);
  CoordinatorTarget t = parsed.ok() ? *parsed : CoordinatorTarget{target, target, false};
  SetCoordinatorChannelArgs(t, &args);
  auto creds = ChannelCredentials(tls, t.first);
  return grpc::CreateCustomChannel(
      t.uri, creds.ok() ? *creds : grpc::SslCredentials(grpc::SslCredentialsOptions()), args);
}

class GrpcStream : public CoordinatorStream {
 public:
  explicit GrpcStream(v1::AgentControl::Stub& stub) : stream_(stub.Connect(&ctx_)) {}
  ~GrpcStream() override {
    if (!finished_) {
      ctx_.TryCancel();
      (void)stream_->Finish();
    }
  }
  bool Write(const v1::AgentMessage& msg) override { return stream_->Write(msg); }
  bool Read(v1::CoordinatorCommand* cmd) override { return stream_->Read(cmd); }
  void Cancel() override { ctx_.TryCancel(); }
  absl::Status Finish() override {
    finished_ = true;
    grpc::Status s = stream_->Finish();
    if (s.ok()) return absl::OkStatus();
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }

 private:
  grpc::ClientContext ctx_;  // we prove our node with our certificate (the channel's TLS)
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorCommand>> stream_;
  bool finished_ = false;
};

class GrpcLink : public CoordinatorLink {
 public:
  GrpcLink(const std::string& target, const TlsMaterial& tls)
      : stub_(v1::AgentControl::NewStub(MakeChannel(target, tls))) {}
  std::unique_ptr<CoordinatorStream> Connect() override {
    return std::make_unique<GrpcStream>(*stub_);
  }

 private:
  std::unique_ptr<v1::AgentControl::Stub> stub_;
};

}  // namespace

std::unique_ptr<CoordinatorLink> GrpcCoordinatorLink(const std::string& target,
                                                     const TlsMaterial& tls) {
  return std::make_unique<GrpcLink>(target, tls);
}

}  // namespace baton
