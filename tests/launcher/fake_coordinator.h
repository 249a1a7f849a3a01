// A fake coordinator for in-process agent tests: a real gRPC AgentControl server on a
// loopback port, TLS under a test CA (FakeCoordinatorTls), that records what agents send
// and who they proved to be, and pushes commands on the live stream; plus builders for
// the commands (agent_wire.h). Header-only; thread-safe (one mutex).
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/agent.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"
#include "tests/launcher/agent_wire.h"
#include "tests/launcher/test_util.h"
#include "tests/util/security.h"

namespace baton::launcher_testing {

inline constexpr uint32_t kHeartbeatMs = 100;
inline constexpr uint32_t kLeaseMs = 60'000;

// A test CA with the coordinator's certificate and node `node`'s, under `dir`, as the
// fake coordinator (server) and the agent (client) load them.
struct FakeCoordinatorTls {
  explicit FakeCoordinatorTls(const std::string& dir, const std::string& node = kNode)
      : security(dir) {
    EXPECT_TRUE(security.ok()) << security.why();
    auto [cert, key] = security.NodeCert(node);
    auto s = LoadTls({security.ca(), dir + "/tls/coordinator.crt", dir + "/tls/coordinator.key"},
                     /*need_cert=*/true);
    auto a = LoadTls({security.ca(), cert, key}, /*need_cert=*/true);
    EXPECT_TRUE(s.ok() && a.ok()) << s.status() << a.status();
    if (s.ok()) server = *s;
    if (a.ok()) agent = *a;
  }
  testing::TestSecurity security;
  TlsMaterial server;  // the coordinator's
  TlsMaterial agent;   // the node's
};

// Records what the agent sends on every Connect stream and lets the test push commands
// on the live one. Answers each Register with Registered. Can be taken down and brought
// back on the same port.
class FakeCoordinator : public AgentMessageLog {
 public:
  void Start(const TlsMaterial& tls) {
    tls_ = tls;
    auto creds = ServerCredentials(tls_, "127.0.0.1:0");
    ASSERT_TRUE(creds.ok()) << creds.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port_), *creds, &port_);
    service_ = std::make_unique<Service>(this);
    builder.RegisterService(service_.get());
    SetServerMessageLimits(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port_, 0);
  }
  // Ends the live stream (the agent sees the coordinator go) and stops listening.
  void Shutdown() {
    server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    service_.reset();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Writes `cmd` on the live stream, waiting for one to exist.
  bool Push(const v1::CoordinatorCommand& cmd) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!WaitUntil(cv_, lock, [&] { return stream_ != nullptr; })) return false;
    return stream_->Write(cmd);
  }
  // Cancels the live stream; the agent reconnects.
  void DropStream() {
    std::lock_guard<std::mutex> lock(mu_);
    if (ctx_) ctx_->TryCancel();
  }
  int session() {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_;
  }
  // Who each Connect stream proved to be (its certificate).
  std::vector<Peer> peers() {
    std::lock_guard<std::mutex> lock(mu_);
    return peers_;
  }

 private:
  using Stream = grpc::ServerReaderWriter<v1::CoordinatorCommand, v1::AgentMessage>;

  class Service final : public v1::AgentControl::Service {
   public:
    explicit Service(FakeCoordinator* owner) : owner_(owner) {}
    grpc::Status Connect(grpc::ServerContext* ctx, Stream* stream) override {
      return owner_->Serve(ctx, stream);
    }

   private:
    FakeCoordinator* const owner_;
  };

  grpc::Status Serve(grpc::ServerContext* ctx, Stream* stream) {
    int session;
    {
      std::lock_guard<std::mutex> lock(mu_);
      session = ++sessions_;
      peers_.push_back(PeerOf(*ctx));
    }
    v1::AgentMessage msg;
    while (stream->Read(&msg)) {
      std::lock_guard<std::mutex> lock(mu_);
      Record(session, msg);
      if (msg.has_register_()) {
        v1::CoordinatorCommand reply;
        reply.mutable_registered()->set_heartbeat_interval_ms(kHeartbeatMs);
        reply.mutable_registered()->set_lease_ms(kLeaseMs);
        stream->Write(reply);
        stream_ = stream;  // commands go out only after Registered
        ctx_ = ctx;
      } else if (msg.has_heartbeat() && stream_ == stream) {
        v1::CoordinatorCommand ack;  // as the real one: the agent's lease runs on these
        ack.mutable_heartbeat_ack()->set_time_ms(msg.heartbeat().time_ms());
        stream->Write(ack);
      }
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_ == stream) {
      stream_ = nullptr;
      ctx_ = nullptr;
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  int port_ = 0;
  TlsMaterial tls_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;  // everything below; also serializes writes on stream_
  std::condition_variable cv_;
  Stream* stream_ = nullptr;
  grpc::ServerContext* ctx_ = nullptr;
  int sessions_ = 0;
  std::vector<Peer> peers_;
};

}  // namespace baton::launcher_testing
