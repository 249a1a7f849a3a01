#include "coordinator/service.h"

#include <condition_variable>
#include <deque>
#include <thread>

#include "coordinator/backup.h"
#include "coordinator/events.h"
#include "coordinator/streams.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

// Runs `body` with the proven caller, or finishes the call with why it was refused.
template <typename Body>
grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx,
                                const absl::StatusOr<Caller>& caller, Body body) {
  auto* reactor = ctx->DefaultReactor();
  if (!caller.ok()) {
    reactor->Finish(ToGrpc(caller.status()));
  } else {
    body(*caller, reactor);
  }
  return reactor;
}

constexpr char kManageTokens[] = "manage service tokens";
constexpr char kManageNodes[] = "drain nodes";
constexpr char kBackup[] = "back up the coordinator's store";
constexpr char kManageHa[] = "see or hand over the HA leadership";
constexpr size_t kMaxReasonBytes = 1024;  // a cancel's or a hold's reason

absl::Status CheckReason(const std::string& reason) {
  if (reason.size() <= kMaxReasonBytes) return absl::OkStatus();
  return absl::InvalidArgumentError("reason: " + std::to_string(reason.size()) +
                                    " bytes, above the 1 KiB allowed");
}

absl::Status NotReplicated() {
  return absl::FailedPreconditionError(
      "this coordinator runs alone, not as HA replicas (--ha-etcd; docs/ha.md)");
}

}  // namespace

absl::StatusOr<Caller> CoordinatorService::Authorize(const grpc::CallbackServerContext& ctx) const {
  absl::StatusOr<Caller> caller = deps_.authn->Authenticate(ctx);
  if (!caller.ok()) {
    spdlog::warn("call from {} refused: {}", ctx.peer(), caller.status().ToString());
    return caller.status();
  }
  absl::Status allowed = access::CheckMayUseCluster(jobs_->policy()->access, *caller);
  if (!allowed.ok()) {
    spdlog::info("call from {} as {} refused: {}", ctx.peer(), caller->user,
                 std::string(allowed.message()));
    return allowed;
  }
  return caller;
}

absl::StatusOr<Caller> CoordinatorService::AuthorizeAdmin(const grpc::CallbackServerContext& ctx,
                                                          std::string_view what) const {
  absl::StatusOr<Caller> caller = Authorize(ctx);
  if (!caller.ok()) return caller;
  if (absl::Status s = access::CheckAdmin(jobs_->policy()->access, *caller, what); !s.ok()) {
    return s;
  }
  return caller;
}

grpc::ServerUnaryReactor* CoordinatorService::Submit(grpc::CallbackServerContext* ctx,
                                                     const v1::SubmitRequest* req,
                                                     v1::SubmitResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    jobs_->Submit(caller, req->spec(), req->idempotency_key(), req->hold(),
                  [ctx, r, resp](absl::StatusOr<uint64_t> id) {
                    if (id.ok()) resp->set_job_id(*id);
                    if (std::optional<absl::Duration> wait = RetryAfter(id.status())) {
                      ctx->AddTrailingMetadata(kRetryAfterKey,
                                               std::to_string(absl::ToInt64Milliseconds(*wait)));
                    }
                    r->Finish(ToGrpc(id.status()));
                  });
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Get(grpc::CallbackServerContext* ctx,
                                                  const v1::GetRequest* req, v1::Job* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    auto job = jobs_->Get(caller, req->job_id());
    if (job.ok()) *resp = std::move(*job);
    r->Finish(ToGrpc(job.status()));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::GetArray(grpc::CallbackServerContext* ctx,
                                                       const v1::GetRequest* req,
                                                       v1::JobArray* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    auto array = jobs_->GetArray(caller, req->job_id());
    if (array.ok()) *resp = std::move(*array);
    r->Finish(ToGrpc(array.status()));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::List(grpc::CallbackServerContext* ctx,
                                                   const v1::ListRequest* req,
                                                   v1::ListResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    absl::StatusOr<v1::ListResponse> page = jobs_->List(caller, *req);
    if (page.ok()) *resp = std::move(*page);
    r->Finish(ToGrpc(page.status()));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Usage(grpc::CallbackServerContext* ctx,
                                                    const v1::UsageRequest* req,
                                                    v1::UsageResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    absl::StatusOr<v1::UsageResponse> usage = jobs_->Usage(caller, *req);
    if (usage.ok()) *resp = std::move(*usage);
    r->Finish(ToGrpc(usage.status()));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::History(grpc::CallbackServerContext* ctx,
                                                      const v1::HistoryRequest* req,
                                                      v1::HistoryResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    absl::StatusOr<v1::HistoryResponse> page = jobs_->History(caller, *req);
    if (page.ok()) *resp = std::move(*page);
    r->Finish(ToGrpc(page.status()));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Cancel(grpc::CallbackServerContext* ctx,
                                                     const v1::CancelRequest* req,
                                                     v1::CancelResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    if (absl::Status s = CheckReason(req->reason()); !s.ok()) return r->Finish(ToGrpc(s));
    jobs_->Cancel(caller, req->job_id(), req->reason(),
                  [r, resp](absl::StatusOr<v1::JobState> state) {
                    if (state.ok()) resp->set_state(*state);
                    r->Finish(ToGrpc(state.status()));
                  });
  });
}

namespace {

// The reply of a call that answers with its response message, filled when it succeeds.
template <typename Response>
std::function<void(absl::StatusOr<Response>)> Answer(grpc::ServerUnaryReactor* r, Response* resp) {
  return [r, resp](absl::StatusOr<Response> out) {
    if (out.ok()) *resp = std::move(*out);
    r->Finish(ToGrpc(out.status()));
  };
}

}  // namespace

grpc::ServerUnaryReactor* CoordinatorService::Hold(grpc::CallbackServerContext* ctx,
                                                   const v1::HoldRequest* req,
                                                   v1::HoldResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    if (absl::Status s = CheckReason(req->reason()); !s.ok()) return r->Finish(ToGrpc(s));
    jobs_->Hold(caller, req->job_id(), req->reason(), Answer(r, resp));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Release(grpc::CallbackServerContext* ctx,
                                                      const v1::ReleaseRequest* req,
                                                      v1::ReleaseResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    jobs_->Release(caller, req->job_id(), Answer(r, resp));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Requeue(grpc::CallbackServerContext* ctx,
                                                      const v1::RequeueRequest* req,
                                                      v1::RequeueResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    if (absl::Status s = CheckReason(req->reason()); !s.ok()) return r->Finish(ToGrpc(s));
    jobs_->Requeue(caller, req->job_id(), req->reason(), Answer(r, resp));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Signal(grpc::CallbackServerContext* ctx,
                                                     const v1::SignalRequest* req,
                                                     v1::SignalResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    Answer(r, resp)(jobs_->Signal(caller, req->job_id(), req->signal()));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::ListNodes(grpc::CallbackServerContext* ctx,
                                                        const v1::ListNodesRequest*,
                                                        v1::ListNodesResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller&, grpc::ServerUnaryReactor* r) {
    *resp = jobs_->NodeListing();
    r->Finish(grpc::Status::OK);
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Explain(grpc::CallbackServerContext* ctx,
                                                      const v1::ExplainRequest* req,
                                                      v1::ExplainResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller&, grpc::ServerUnaryReactor* r) {
    auto out = jobs_->Explain(req->job_id());
    if (out.ok()) *resp = std::move(*out);
    r->Finish(ToGrpc(out.status()));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::GetPolicy(grpc::CallbackServerContext* ctx,
                                                        const v1::GetPolicyRequest*,
                                                        v1::PolicyVersion* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller&, grpc::ServerUnaryReactor* r) {
    *resp = jobs_->GetPolicy();
    r->Finish(grpc::Status::OK);
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Shares(grpc::CallbackServerContext* ctx,
                                                     const v1::SharesRequest*,
                                                     v1::SharesResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller&, grpc::ServerUnaryReactor* r) {
    *resp = jobs_->Shares();
    r->Finish(grpc::Status::OK);
  });
}

grpc::ServerUnaryReactor* CoordinatorService::SetPolicy(grpc::CallbackServerContext* ctx,
                                                        const v1::SetPolicyRequest* req,
                                                        v1::PolicyVersion* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    jobs_->SetPolicy(caller, *req, [r, resp](absl::StatusOr<v1::PolicyVersion> v) {
      if (v.ok()) *resp = std::move(*v);
      r->Finish(ToGrpc(v.status()));
    });
  });
}

grpc::ServerUnaryReactor* CoordinatorService::Ping(grpc::CallbackServerContext* ctx,
                                                   const v1::PingRequest*, v1::PingResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller&, grpc::ServerUnaryReactor* r) {
    resp->set_time_ms(RealClock::Get()->NowMs());
    r->Finish(grpc::Status::OK);
  });
}

grpc::ServerUnaryReactor* CoordinatorService::WebLogin(grpc::CallbackServerContext* ctx,
                                                       const v1::WebLoginRequest*,
                                                       v1::WebLoginResponse* resp) {
  return Unary(ctx, Authorize(*ctx), [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
    if (caller.method != "munge") {
      return r->Finish(ToGrpc(absl::PermissionDeniedError(
          "login links are for people (MUNGE); a service token goes to the dashboard's JSON "
          "endpoints directly, as Authorization: Bearer")));
    }
    if (!deps_.web_login) {
      return r->Finish(ToGrpc(absl::FailedPreconditionError(
          "this coordinator serves no web dashboard (--web-listen; docs/web.md)")));
    }
    // The link is a credential: answered, never logged.
    Answer(r, resp)(deps_.web_login(caller));
  });
}

grpc::ServerUnaryReactor* CoordinatorService::WhoAmI(grpc::CallbackServerContext* ctx,
                                                     const v1::WhoAmIRequest*,
                                                     v1::WhoAmIResponse* resp) {
  // Authenticated but not authorized: a user in no tenant may still learn why.
  return Unary(ctx, deps_.authn->Authenticate(*ctx),
               [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
                 *resp = access::Describe(jobs_->policy()->access, caller);
                 r->Finish(grpc::Status::OK);
               });
}

grpc::ServerUnaryReactor* CoordinatorService::CreateToken(grpc::CallbackServerContext* ctx,
                                                          const v1::CreateTokenRequest* req,
                                                          v1::CreateTokenResponse* resp) {
  return Unary(
      ctx, AuthorizeAdmin(*ctx, kManageTokens),
      [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
        auto policy = jobs_->policy();
        auto user = deps_.users->ByName(req->user());
        if (req->user().empty() || !user.ok()) {
          return r->Finish(grpc::Status(
              grpc::StatusCode::INVALID_ARGUMENT,
              "user: '" + req->user() + "' is not a user this coordinator knows (NSS)"));
        }
        if (!req->tenant().empty()) {
          Caller as;
          as.user = user->name;
          as.uid = user->uid;
          as.groups = user->groups;
          if (!access::IsMember(policy->access, as, req->tenant())) {
            return r->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                          "tenant: " + user->name + " is not a member of '" +
                                              req->tenant() + "' (policy tenants[].members)"));
          }
        }
        auto minted = deps_.tokens->Mint(*req, caller.user);
        if (!minted.ok()) return r->Finish(ToGrpc(minted.status()));
        StoreBatch batch;
        batch.tokens.push_back(minted->record);
        std::string what = "service token " + minted->record.id() + " created for " + req->user() +
                           (req->tenant().empty() ? "" : " in tenant " + req->tenant()) +
                           ", expires " +
                           absl::FormatTime(absl::FromUnixMillis(minted->record.expires_ms()),
                                            absl::UTCTimeZone());
        *resp->mutable_token() = TokenRegistry::Info(minted->record);
        resp->set_secret(minted->token);
        jobs_->CommitAudited(std::move(batch),
                             events::AccessChange(caller.user, "token_created", what),
                             [this, r, record = minted->record] {
                               deps_.tokens->Add(record);  // usable once it is durable
                               r->Finish(grpc::Status::OK);
                             });
      });
}

grpc::ServerUnaryReactor* CoordinatorService::ListTokens(grpc::CallbackServerContext* ctx,
                                                         const v1::ListTokensRequest* req,
                                                         v1::ListTokensResponse* resp) {
  return Unary(ctx, AuthorizeAdmin(*ctx, kManageTokens),
               [&](const Caller&, grpc::ServerUnaryReactor* r) {
                 for (const auto& t : deps_.tokens->List(req->all())) {
                   *resp->add_tokens() = TokenRegistry::Info(t);
                 }
                 r->Finish(grpc::Status::OK);
               });
}

grpc::ServerUnaryReactor* CoordinatorService::RevokeToken(grpc::CallbackServerContext* ctx,
                                                          const v1::RevokeTokenRequest* req,
                                                          v1::TokenInfo* resp) {
  return Unary(ctx, AuthorizeAdmin(*ctx, kManageTokens),
               [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
                 // Refused from here on, before the record is even durable.
                 auto revoked = deps_.tokens->Revoke(req->id(), caller.user);
                 if (!revoked.ok()) return r->Finish(ToGrpc(revoked.status()));
                 *resp = TokenRegistry::Info(*revoked);
                 StoreBatch batch;
                 batch.tokens.push_back(*revoked);
                 jobs_->CommitAudited(std::move(batch),
                                      events::AccessChange(caller.user, "token_revoked",
                                                           "service token " + req->id() + " of " +
                                                               revoked->user() + " revoked"),
                                      [r] { r->Finish(grpc::Status::OK); });
               });
}

grpc::ServerUnaryReactor* CoordinatorService::DrainNode(grpc::CallbackServerContext* ctx,
                                                        const v1::DrainNodeRequest* req,
                                                        v1::Node* resp) {
  return Unary(ctx, AuthorizeAdmin(*ctx, kManageNodes),
               [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
                 jobs_->DrainNode(caller, *req, [r, resp](absl::StatusOr<v1::Node> node) {
                   if (node.ok()) *resp = std::move(*node);
                   r->Finish(ToGrpc(node.status()));
                 });
               });
}

grpc::ServerUnaryReactor* CoordinatorService::UndrainNode(grpc::CallbackServerContext* ctx,
                                                          const v1::UndrainNodeRequest* req,
                                                          v1::Node* resp) {
  return Unary(ctx, AuthorizeAdmin(*ctx, kManageNodes),
               [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
                 jobs_->UndrainNode(caller, req->node(), [r, resp](absl::StatusOr<v1::Node> node) {
                   if (node.ok()) *resp = std::move(*node);
                   r->Finish(ToGrpc(node.status()));
                 });
               });
}

grpc::ServerUnaryReactor* CoordinatorService::HaStatus(grpc::CallbackServerContext* ctx,
                                                       const v1::HaStatusRequest*,
                                                       v1::HaStatusResponse* resp) {
  return Unary(ctx, AuthorizeAdmin(*ctx, kManageHa),
               [&](const Caller&, grpc::ServerUnaryReactor* r) {
                 if (!deps_.ha) return r->Finish(ToGrpc(NotReplicated()));
                 auto status = deps_.ha->Status();
                 if (status.ok()) *resp = std::move(*status);
                 r->Finish(ToGrpc(status.status()));
               });
}

grpc::ServerUnaryReactor* CoordinatorService::HaStepDown(grpc::CallbackServerContext* ctx,
                                                         const v1::HaStepDownRequest*,
                                                         v1::HaStepDownResponse* resp) {
  return Unary(ctx, AuthorizeAdmin(*ctx, kManageHa),
               [&](const Caller& caller, grpc::ServerUnaryReactor* r) {
                 if (!deps_.ha) return r->Finish(ToGrpc(NotReplicated()));
                 auto done = deps_.ha->StepDown(caller.user);
                 if (done.ok()) *resp = std::move(*done);
                 r->Finish(ToGrpc(done.status()));
               });
}

grpc::ServerWriteReactor<v1::BackupChunk>* CoordinatorService::Backup(
    grpc::CallbackServerContext* ctx, const v1::BackupRequest*) {
  auto caller = AuthorizeAdmin(*ctx, kBackup);
  if (!caller.ok()) return FinishedStream<v1::BackupChunk>(ToGrpc(caller.status()));
  spdlog::info("backup requested by {}", caller->user);
  return NewBackupStream(deps_.store);
}

grpc::ServerWriteReactor<v1::Job>* CoordinatorService::Watch(grpc::CallbackServerContext* ctx,
                                                             const v1::WatchRequest* req) {
  auto caller = Authorize(*ctx);
  if (!caller.ok()) return FinishedStream<v1::Job>(ToGrpc(caller.status()));
  return NewWatchReactor(jobs_, *caller, req->job_id());
}

grpc::ServerWriteReactor<v1::LogChunk>* CoordinatorService::Logs(grpc::CallbackServerContext* ctx,
                                                                 const v1::LogsRequest* req) {
  auto caller = Authorize(*ctx);
  if (!caller.ok()) return FinishedStream<v1::LogChunk>(ToGrpc(caller.status()));
  auto target = jobs_->FindLogs(*caller, *req);
  if (!target.ok()) return FinishedStream<v1::LogChunk>(ToGrpc(target.status()));
  v1::ReadLogsRequest agent_req;
  agent_req.set_job_id(req->job_id());
  agent_req.set_attempt(target->attempt);
  agent_req.set_follow(req->follow());
  agent_req.set_offset(req->offset());
  if (req->has_rank()) agent_req.set_rank(req->rank());
  auto channel = deps_.agents->Get(target->node, target->address);
  if (!channel.ok()) return FinishedStream<v1::LogChunk>(ToGrpc(channel.status()));
  StreamQuota::Ticket ticket;
  if (req->follow()) {
    absl::StatusOr<StreamQuota::Ticket> place = follows_->Acquire(caller->user);
    if (!place.ok()) return FinishedStream<v1::LogChunk>(ToGrpc(place.status()));
    ticket = std::move(*place);
  }
  return NewLogRelay(*channel, std::move(agent_req), std::move(ticket));
}

grpc::ServerWriteReactor<v1::Event>* CoordinatorService::Events(grpc::CallbackServerContext* ctx,
                                                                const v1::EventsRequest* req) {
  auto caller = Authorize(*ctx);
  if (!caller.ok()) return FinishedStream<v1::Event>(ToGrpc(caller.status()));
  for (int k : req->kinds()) {
    if (!v1::EventKind_IsValid(k) || k == v1::EVENT_KIND_UNSPECIFIED) {
      return FinishedStream<v1::Event>(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "kinds: unknown event kind"));
    }
  }
  StreamQuota::Ticket ticket;
  if (req->follow()) {
    absl::StatusOr<StreamQuota::Ticket> place = follows_->Acquire(caller->user);
    if (!place.ok()) return FinishedStream<v1::Event>(ToGrpc(place.status()));
    ticket = std::move(*place);
  }
  return NewEventStream(&jobs_->event_log(), *req, std::move(ticket));
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand>* AgentControlService::Connect(
    grpc::CallbackServerContext* ctx) {
  if (insecure_) return NewAgentStream(jobs_, absl::OkStatus(), "");
  Peer peer = PeerOf(*ctx);
  absl::Status allowed = absl::OkStatus();
  if (peer.kind == Peer::Kind::kNone) {
    allowed = absl::UnauthenticatedError(
        "AgentControl needs a node certificate (O=baton-node, CN=<node>) signed by the cluster "
        "CA: start the agent with --tls-cert/--tls-key (scripts/certs.sh node NAME)");
  } else if (peer.kind != Peer::Kind::kNode) {
    allowed = absl::PermissionDeniedError("certificate '" + peer.name +
                                          "' is not a node's (O=baton-node)");
  }
  if (!allowed.ok()) spdlog::warn("Connect from {} refused: {}", ctx->peer(), allowed.ToString());
  return NewAgentStream(jobs_, allowed, peer.name);
}

}  // namespace baton
