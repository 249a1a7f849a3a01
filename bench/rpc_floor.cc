// baton-rpc-floor: the smallest process that makes one RPC to the coordinator (Ping),
// linked exactly like the `baton` CLI. baton-bench-submit measures `baton submit`
// against it: the floor any gRPC command-line client pays.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>

#include "proto/baton.grpc.pb.h"

int main(int argc, char** argv) {
  const char* target = argc > 1 ? argv[1] : std::getenv("BATON_COORDINATOR");
  if (target == nullptr) {
    std::fprintf(stderr, "usage: baton-rpc-floor HOST:PORT\n");
    return 2;
  }
  auto stub = baton::v1::Coordinator::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  baton::v1::PingResponse resp;
  grpc::Status s = stub->Ping(&ctx, baton::v1::PingRequest(), &resp);
  if (!s.ok()) {
    std::fprintf(stderr, "ping: %s\n", s.error_message().c_str());
    return 5;
  }
  return 0;
}
