#include "coordinator/service.h"

#include <condition_variable>
#include <deque>
#include <thread>

#include "coordinator/streams.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

// Finishes `reactor` with UNAUTHENTICATED and returns nullopt when the call names no
// caller.
std::optional<Caller> CallerOrFinish(grpc::CallbackServerContext* ctx,
                                     grpc::ServerUnaryReactor* reactor) {
  auto caller = CallerFromMetadata(ctx->client_metadata());
  if (!caller.ok()) {
    reactor->Finish(ToGrpc(caller.status()));
    return std::nullopt;
  }
  return *caller;
}

}  // namespace

grpc::ServerUnaryReactor* CoordinatorService::Submit(grpc::CallbackServerContext* ctx,
                                                     const v1::SubmitRequest* req,
                                                     v1::SubmitResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  auto caller = CallerOrFinish(ctx, reactor);
  if (!caller) return reactor;
  jobs_->Submit(*caller, req->spec(), [reactor, resp](absl::StatusOr<uint64_t> id) {
    if (id.ok()) resp->set_job_id(*id);
    reactor->Finish(ToGrpc(id.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::Get(grpc::CallbackServerContext* ctx,
                                                  const v1::GetRequest* req, v1::Job* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!CallerOrFinish(ctx, reactor)) return reactor;
  auto job = jobs_->Get(req->job_id());
  if (job.ok()) *resp = std::move(*job);
  reactor->Finish(ToGrpc(job.status()));
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::List(grpc::CallbackServerContext* ctx,
                                                   const v1::ListRequest* req,
                                                   v1::ListResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!CallerOrFinish(ctx, reactor)) return reactor;
  for (auto& job : jobs_->List(*req)) *resp->add_jobs() = std::move(job);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::Cancel(grpc::CallbackServerContext* ctx,
                                                     const v1::CancelRequest* req,
                                                     v1::CancelResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  auto caller = CallerOrFinish(ctx, reactor);
  if (!caller) return reactor;
  jobs_->Cancel(*caller, req->job_id(), req->reason(),
                [reactor, resp](absl::StatusOr<v1::JobState> state) {
                  if (state.ok()) resp->set_state(*state);
                  reactor->Finish(ToGrpc(state.status()));
                });
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::Signal(grpc::CallbackServerContext* ctx,
                                                     const v1::SignalRequest* req,
                                                     v1::SignalResponse*) {
  auto* reactor = ctx->DefaultReactor();
  auto caller = CallerOrFinish(ctx, reactor);
  if (!caller) return reactor;
  reactor->Finish(ToGrpc(jobs_->Signal(*caller, req->job_id(), req->signal())));
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::ListNodes(grpc::CallbackServerContext* ctx,
                                                        const v1::ListNodesRequest*,
                                                        v1::ListNodesResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!CallerOrFinish(ctx, reactor)) return reactor;
  for (auto& node : jobs_->ListNodes()) *resp->add_nodes() = std::move(node);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::Explain(grpc::CallbackServerContext* ctx,
                                                      const v1::ExplainRequest* req,
                                                      v1::ExplainResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!CallerOrFinish(ctx, reactor)) return reactor;
  auto out = jobs_->Explain(req->job_id());
  if (out.ok()) *resp = std::move(*out);
  reactor->Finish(ToGrpc(out.status()));
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::GetPolicy(grpc::CallbackServerContext* ctx,
                                                        const v1::GetPolicyRequest*,
                                                        v1::PolicyVersion* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!CallerOrFinish(ctx, reactor)) return reactor;
  *resp = jobs_->GetPolicy();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::Shares(grpc::CallbackServerContext* ctx,
                                                     const v1::SharesRequest*,
                                                     v1::SharesResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!CallerOrFinish(ctx, reactor)) return reactor;
  *resp = jobs_->Shares();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::SetPolicy(grpc::CallbackServerContext* ctx,
                                                        const v1::SetPolicyRequest* req,
                                                        v1::PolicyVersion* resp) {
  auto* reactor = ctx->DefaultReactor();
  auto caller = CallerOrFinish(ctx, reactor);
  if (!caller) return reactor;
  jobs_->SetPolicy(*caller, *req, [reactor, resp](absl::StatusOr<v1::PolicyVersion> v) {
    if (v.ok()) *resp = std::move(*v);
    reactor->Finish(ToGrpc(v.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorService::Ping(grpc::CallbackServerContext* ctx,
                                                   const v1::PingRequest*, v1::PingResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  resp->set_time_ms(RealClock::Get()->NowMs());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<v1::Job>* CoordinatorService::Watch(grpc::CallbackServerContext* ctx,
                                                             const v1::WatchRequest* req) {
  auto caller = CallerFromMetadata(ctx->client_metadata());
  if (!caller.ok()) return FinishedStream<v1::Job>(ToGrpc(caller.status()));
  return NewWatchReactor(jobs_, req->job_id());
}

grpc::ServerWriteReactor<v1::LogChunk>* CoordinatorService::Logs(grpc::CallbackServerContext* ctx,
                                                                 const v1::LogsRequest* req) {
  auto caller = CallerFromMetadata(ctx->client_metadata());
  if (!caller.ok()) return FinishedStream<v1::LogChunk>(ToGrpc(caller.status()));
  auto target = jobs_->FindLogs(*caller, *req);
  if (!target.ok()) return FinishedStream<v1::LogChunk>(ToGrpc(target.status()));
  v1::ReadLogsRequest agent_req;
  agent_req.set_job_id(req->job_id());
  agent_req.set_attempt(target->attempt);
  agent_req.set_follow(req->follow());
  agent_req.set_offset(req->offset());
  if (req->has_rank()) agent_req.set_rank(req->rank());
  return NewLogRelay(AgentChannel(target->address), std::move(agent_req));
}

grpc::ServerWriteReactor<v1::Event>* CoordinatorService::Events(grpc::CallbackServerContext* ctx,
                                                                const v1::EventsRequest* req) {
  auto caller = CallerFromMetadata(ctx->client_metadata());
  if (!caller.ok()) return FinishedStream<v1::Event>(ToGrpc(caller.status()));
  for (int k : req->kinds()) {
    if (!v1::EventKind_IsValid(k) || k == v1::EVENT_KIND_UNSPECIFIED) {
      return FinishedStream<v1::Event>(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "kinds: unknown event kind"));
    }
  }
  return NewEventStream(&jobs_->event_log(), *req);
}

std::shared_ptr<grpc::Channel> CoordinatorService::AgentChannel(const std::string& address) {
  std::lock_guard<std::mutex> lock(channels_mu_);
  auto& ch = channels_[address];
  if (!ch) ch = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  return ch;
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand>* AgentControlService::Connect(
    grpc::CallbackServerContext* ctx) {
  auto caller = CallerFromMetadata(ctx->client_metadata());
  absl::Status allowed = caller.status();
  if (caller.ok() && caller->role != Role::kAgent) {
    allowed = absl::PermissionDeniedError("only agents may connect to AgentControl");
  }
  return NewAgentStream(jobs_, allowed);
}

}  // namespace baton
