// The gRPC face of the coordinator: the researchers' Coordinator service and the agents'
// AgentControl stream, both on the callback API. Each handler checks the caller, then
// hands the work to the JobManager; streams (Watch, Logs, Connect) are reactors.
// Thread-safe; owned by main() alongside the grpc::Server.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "coordinator/job_manager.h"
#include "proto/baton.grpc.pb.h"

namespace baton {

class CoordinatorService final : public v1::Coordinator::CallbackService {
 public:
  explicit CoordinatorService(JobManager* jobs) : jobs_(jobs) {}

  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* ctx, const v1::SubmitRequest* req,
                                   v1::SubmitResponse* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                v1::Job* resp) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx, const v1::ListRequest* req,
                                 v1::ListResponse* resp) override;
  grpc::ServerUnaryReactor* Cancel(grpc::CallbackServerContext* ctx, const v1::CancelRequest* req,
                                   v1::CancelResponse* resp) override;
  grpc::ServerUnaryReactor* Signal(grpc::CallbackServerContext* ctx, const v1::SignalRequest* req,
                                   v1::SignalResponse* resp) override;
  grpc::ServerWriteReactor<v1::Job>* Watch(grpc::CallbackServerContext* ctx,
                                           const v1::WatchRequest* req) override;
  grpc::ServerWriteReactor<v1::LogChunk>* Logs(grpc::CallbackServerContext* ctx,
                                               const v1::LogsRequest* req) override;
  grpc::ServerWriteReactor<v1::Event>* Events(grpc::CallbackServerContext* ctx,
                                              const v1::EventsRequest* req) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx,
                                      const v1::ListNodesRequest* req,
                                      v1::ListNodesResponse* resp) override;
  grpc::ServerUnaryReactor* Explain(grpc::CallbackServerContext* ctx, const v1::ExplainRequest* req,
                                    v1::ExplainResponse* resp) override;
  grpc::ServerUnaryReactor* GetPolicy(grpc::CallbackServerContext* ctx,
                                      const v1::GetPolicyRequest* req,
                                      v1::PolicyVersion* resp) override;
  grpc::ServerUnaryReactor* Shares(grpc::CallbackServerContext* ctx, const v1::SharesRequest* req,
                                   v1::SharesResponse* resp) override;
  grpc::ServerUnaryReactor* SetPolicy(grpc::CallbackServerContext* ctx,
                                      const v1::SetPolicyRequest* req,
                                      v1::PolicyVersion* resp) override;
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const v1::PingRequest* req,
                                 v1::PingResponse* resp) override;

 private:
  std::shared_ptr<grpc::Channel> AgentChannel(const std::string& address);

  JobManager* const jobs_;
  std::mutex channels_mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
};

class AgentControlService final : public v1::AgentControl::CallbackService {
 public:
  explicit AgentControlService(JobManager* jobs) : jobs_(jobs) {}
  grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand>* Connect(
      grpc::CallbackServerContext* ctx) override;

 private:
  JobManager* const jobs_;
};

}  // namespace baton
