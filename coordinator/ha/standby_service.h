// What a standby replica serves on --listen (docs/ha.md): every call is refused with
// UNAVAILABLE naming the leader, in the message and as trailing metadata
// (kLeaderKey: its address), so the CLI and agents go there; the health service, served
// beside it, says NOT_SERVING for baton's services (the leader says SERVING), which is
// what clients given several replicas pick the leader by. Reads are not served from a
// standby: a client always sees the leader's state, never a stale copy.
// Owned by main() while the replica is a standby. Thread-safe.
#pragma once

#include <grpcpp/generic/async_generic_service.h>

#include <functional>
#include <string>

#include "coordinator/ha/election.h"

namespace baton::ha {

class StandbyService : public grpc::CallbackGenericService {
 public:
  // `leader` says who leads as last seen; `self` is this replica's name.
  StandbyService(std::function<LeaderInfo()> leader, std::string self)
      : leader_(std::move(leader)), self_(std::move(self)) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override;

  // The refusal for a standby that knows `leader` (epoch 0: none elected).
  static std::string Refusal(const std::string& self, const LeaderInfo& leader);

 private:
  std::function<LeaderInfo()> leader_;
  std::string self_;
};

}  // namespace baton::ha
