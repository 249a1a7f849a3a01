// The gRPC face of the coordinator: the researchers' Coordinator service and the agents'
// AgentControl stream, both on the callback API. Every Coordinator call is authenticated
// (authn.h) and must come from an admin or a tenant member (access.h) before the
// JobManager sees it; Connect needs a node's certificate naming the node it registers.
// Streams (Watch, Logs, Events, Connect) are reactors. Thread-safe; owned by main()
// alongside the grpc::Server.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "coordinator/agent_channels.h"
#include "coordinator/authn.h"
#include "coordinator/ha_control.h"
#include "coordinator/job_manager.h"
#include "coordinator/stream_quota.h"
#include "coordinator/tokens.h"
#include "coordinator/users.h"
#include "proto/agent.grpc.pb.h"
#include "proto/api.grpc.pb.h"
#include "proto/tls.h"

namespace baton {

// What the services work with; everything must outlive them.
struct ServiceDeps {
  JobManager* jobs = nullptr;
  Store* store = nullptr;  // for backups
  const Authenticator* authn = nullptr;
  TokenRegistry* tokens = nullptr;
  UserDirectory* users = nullptr;
  TlsMaterial tls;                  // ours: the coordinator's certificate
  AgentChannels* agents = nullptr;  // for calls to agents (ReadLogs)
  // Followed streams (events -f, logs -f, and the web dashboard's live views): a quota
  // shared by everything that follows (StreamQuota's limits: --max-follows-per-user,
  // --max-follows).
  std::shared_ptr<StreamQuota> follows;
  HaControl* ha = nullptr;  // HA replicas (docs/ha.md); nullptr for a coordinator alone
  // The web dashboard's login links (coordinator/web/); empty when it serves none.
  std::function<absl::StatusOr<v1::WebLoginResponse>(const Caller&)> web_login;
};

class CoordinatorService final : public v1::Coordinator::CallbackService {
 public:
  explicit CoordinatorService(ServiceDeps deps)
      : deps_(std::move(deps)), jobs_(deps_.jobs), follows_(deps_.follows) {}
  // Followed streams open now (for tests and metrics).
  size_t follows() const { return follows_->open(); }
  // New follow limits (a SIGHUP reload): for new streams; open ones stay.
  void SetFollowLimits(size_t per_user, size_t total) { follows_->SetLimits(per_user, total); }

  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* ctx, const v1::SubmitRequest* req,
                                   v1::SubmitResponse* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                v1::Job* resp) override;
  grpc::ServerUnaryReactor* GetArray(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                     v1::JobArray* resp) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx, const v1::ListRequest* req,
                                 v1::ListResponse* resp) override;
  grpc::ServerUnaryReactor* Cancel(grpc::CallbackServerContext* ctx, const v1::CancelRequest* req,
                                   v1::CancelResponse* resp) override;
  grpc::ServerUnaryReactor* Hold(grpc::CallbackServerContext* ctx, const v1::HoldRequest* req,
                                 v1::HoldResponse* resp) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
                                    v1::ReleaseResponse* resp) override;
  grpc::ServerUnaryReactor* Requeue(grpc::CallbackServerContext* ctx, const v1::RequeueRequest* req,
                                    v1::RequeueResponse* resp) override;
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
  grpc::ServerUnaryReactor* Usage(grpc::CallbackServerContext* ctx, const v1::UsageRequest* req,
                                  v1::UsageResponse* resp) override;
  grpc::ServerUnaryReactor* History(grpc::CallbackServerContext* ctx, const v1::HistoryRequest* req,
                                    v1::HistoryResponse* resp) override;
  grpc::ServerUnaryReactor* WhoAmI(grpc::CallbackServerContext* ctx, const v1::WhoAmIRequest* req,
                                   v1::WhoAmIResponse* resp) override;
  grpc::ServerUnaryReactor* WebLogin(grpc::CallbackServerContext* ctx,
                                     const v1::WebLoginRequest* req,
                                     v1::WebLoginResponse* resp) override;
  grpc::ServerUnaryReactor* CreateToken(grpc::CallbackServerContext* ctx,
                                        const v1::CreateTokenRequest* req,
                                        v1::CreateTokenResponse* resp) override;
  grpc::ServerUnaryReactor* ListTokens(grpc::CallbackServerContext* ctx,
                                       const v1::ListTokensRequest* req,
                                       v1::ListTokensResponse* resp) override;
  grpc::ServerUnaryReactor* RevokeToken(grpc::CallbackServerContext* ctx,
                                        const v1::RevokeTokenRequest* req,
                                        v1::TokenInfo* resp) override;
  grpc::ServerUnaryReactor* DrainNode(grpc::CallbackServerContext* ctx,
                                      const v1::DrainNodeRequest* req, v1::Node* resp) override;
  grpc::ServerUnaryReactor* UndrainNode(grpc::CallbackServerContext* ctx,
                                        const v1::UndrainNodeRequest* req, v1::Node* resp) override;
  grpc::ServerWriteReactor<v1::BackupChunk>* Backup(grpc::CallbackServerContext* ctx,
                                                    const v1::BackupRequest* req) override;
  grpc::ServerUnaryReactor* HaStatus(grpc::CallbackServerContext* ctx,
                                     const v1::HaStatusRequest* req,
                                     v1::HaStatusResponse* resp) override;
  grpc::ServerUnaryReactor* HaStepDown(grpc::CallbackServerContext* ctx,
                                       const v1::HaStepDownRequest* req,
                                       v1::HaStepDownResponse* resp) override;

 private:
  // The proven caller, allowed to use the cluster at all (admin or tenant member).
  absl::StatusOr<Caller> Authorize(const grpc::CallbackServerContext& ctx) const;
  // The same, and an admin (PermissionDenied naming `what` otherwise).
  absl::StatusOr<Caller> AuthorizeAdmin(const grpc::CallbackServerContext& ctx,
                                        std::string_view what) const;

  const ServiceDeps deps_;
  JobManager* const jobs_;
  const std::shared_ptr<StreamQuota> follows_;
};

class AgentControlService final : public v1::AgentControl::CallbackService {
 public:
  // `insecure`: plaintext on loopback (development), where no certificate proves a node
  // and the name an agent registers with is taken as said.
  AgentControlService(JobManager* jobs, bool insecure) : jobs_(jobs), insecure_(insecure) {}
  grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand>* Connect(
      grpc::CallbackServerContext* ctx) override;

 private:
  JobManager* const jobs_;
  const bool insecure_;
};

}  // namespace baton
