#include "coordinator/ha/standby_service.h"

#include "proto/rpc_util.h"

namespace baton::ha {

std::string StandbyService::Refusal(const std::string& self, const LeaderInfo& leader) {
  if (leader.epoch == 0) {
    return "coordinator replica " + self +
           " is a standby and no leader is elected right now (an election is under way, or "
           "etcd has no quorum): try again shortly";
  }
  return "coordinator replica " + self + " is a standby: the leader is " + leader.member.name() +
         " at " + leader.member.address() + " (epoch " + std::to_string(leader.epoch) + ")";
}

grpc::ServerGenericBidiReactor* StandbyService::CreateReactor(
    grpc::GenericCallbackServerContext* ctx) {
  class Reactor : public grpc::ServerGenericBidiReactor {
   public:
    Reactor(grpc::GenericCallbackServerContext* ctx, const LeaderInfo& leader,
            const std::string& self) {
      if (leader.epoch != 0) ctx->AddTrailingMetadata(kLeaderKey, leader.member.address());
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, Refusal(self, leader)));
    }
    void OnDone() override { delete this; }
  };
  return new Reactor(ctx, leader_(), self_);
}

}  // namespace baton::ha
