// AttemptObserver: what the Agent tells an onlooker (the Prometheus metrics in
// agent_metrics.h) about the attempts on its node: started (or re-adopted), fresh limits
// and stats, ended; and each heartbeat's round trip. The Agent calls it under its own
// mutex (OnHeartbeatAck from its connection thread, without it): implementations must be
// thread-safe and quick, must not block and must not call back into the Agent.
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "proto/agent.pb.h"

namespace baton {

class AttemptObserver {
 public:
  virtual ~AttemptObserver() = default;
  // The attempt's processes run here (launched, or re-adopted after an agent restart);
  // `iso` holds its limits (and stats) as prepared.
  virtual void OnAttemptStarted(const v1::Launch& /*launch*/, const v1::AttemptIsolation& /*iso*/) {
  }
  // Fresh limits and stats of a running attempt (every stats interval).
  virtual void OnAttemptStats(const v1::AttemptIsolation& /*iso*/) {}
  // Every process of the attempt is gone from this node.
  virtual void OnAttemptEnded(uint64_t /*job*/, uint32_t /*attempt*/) {}
  // The coordinator acknowledged a heartbeat `round_trip` after it was sent (ms
  // resolution): how long the agent's messages and commands wait.
  virtual void OnHeartbeatAck(absl::Duration /*round_trip*/) {}
};

}  // namespace baton
