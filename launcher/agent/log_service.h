// The agent's own gRPC service: ReadLogs streams an attempt's output file from an
// offset, and with `follow` keeps the stream open while the attempt runs. Only callers
// with the agent role (the coordinator's relay) may read: researchers go through the
// coordinator, which checks their tenant. Thread-safe.
#pragma once

#include "launcher/agent/agent.h"
#include "proto/baton.grpc.pb.h"

namespace baton {

class LogService final : public v1::Agent::CallbackService {
 public:
  explicit LogService(const Agent* agent) : agent_(agent) {}
  grpc::ServerWriteReactor<v1::LogChunk>* ReadLogs(grpc::CallbackServerContext* ctx,
                                                   const v1::ReadLogsRequest* req) override;

 private:
  const Agent* const agent_;
};

}  // namespace baton
