// baton-rpc-floor: the smallest process that makes one authenticated RPC to the
// coordinator (Ping), linked exactly like the `baton` CLI and paying what it pays before
// its call: TLS to the coordinator (BATON_CA) and a fresh MUNGE credential from the local
// munged (BATON_MUNGE_SOCKET). baton-bench-submit measures `baton submit` against it.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>

#include "common/munge.h"
#include "proto/api.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"

namespace {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const char* target = argc > 1 ? argv[1] : std::getenv("BATON_COORDINATOR");
  if (target == nullptr) {
    std::fprintf(stderr, "usage: baton-rpc-floor HOST:PORT\n");
    return 2;
  }
  baton::TlsOptions options;
  options.ca_file = Env("BATON_CA", "/etc/baton/tls/ca.crt");
  auto tls = baton::LoadTls(options, /*need_cert=*/false);
  auto creds = tls.ok() ? baton::ChannelCredentials(*tls, target) : tls.status();
  if (!creds.ok()) {
    std::fprintf(stderr, "tls: %s\n", std::string(creds.status().message()).c_str());
    return 2;
  }
  // As the CLI: connect on gRPC's threads while this one makes the credential.
  auto channel = grpc::CreateChannel(target, *creds);
  channel->GetState(/*try_to_connect=*/true);
  auto cred = baton::MungeEncode(Env("BATON_MUNGE_SOCKET", baton::kDefaultMungeSocket),
                                 baton::kMungeAudience);
  if (!cred.ok()) {
    std::fprintf(stderr, "munge: %s\n", std::string(cred.status().message()).c_str());
    return 4;
  }
  auto stub = baton::v1::Coordinator::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata(baton::kMungeKey, *cred);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  baton::v1::PingResponse resp;
  grpc::Status s = stub->Ping(&ctx, baton::v1::PingRequest(), &resp);
  if (!s.ok()) {
    std::fprintf(stderr, "ping: %s\n", s.error_message().c_str());
    return 5;
  }
  return 0;
}
