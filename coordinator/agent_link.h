// The coordinator's handle on one connected agent's command stream. The gRPC stream
// reactor implements it; tests use a recording fake. Send never blocks: it queues.
// Implementations are thread-safe.
#pragma once

#include "proto/agent.pb.h"

namespace baton {

class AgentLink {
 public:
  virtual ~AgentLink() = default;
  // Queues a command for the agent; silently dropped once the stream has closed (the
  // agent re-registers and reconciliation resends what still matters).
  virtual void Send(const v1::CoordinatorCommand& cmd) = 0;
};

}  // namespace baton
