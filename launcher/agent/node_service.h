// The agent's own gRPC service. ReadLogs streams an attempt's output file from an offset
// and, with `follow`, keeps the stream open while the attempt runs. Exec runs Open MPI's
// daemon inside an attempt for `baton-agent exec`, relaying its output and exit status.
// Only callers with the agent role may call: researchers go through the coordinator,
// which checks their tenant; Exec also needs the attempt's secret. Thread-safe.
#pragma once

#include "launcher/agent/agent.h"
#include "proto/baton.grpc.pb.h"

namespace baton {

class NodeService final : public v1::Agent::CallbackService {
 public:
  explicit NodeService(Agent* agent) : agent_(agent) {}
  grpc::ServerWriteReactor<v1::LogChunk>* ReadLogs(grpc::CallbackServerContext* ctx,
                                                   const v1::ReadLogsRequest* req) override;
  grpc::ServerWriteReactor<v1::ExecOutput>* Exec(grpc::CallbackServerContext* ctx,
                                                 const v1::ExecRequest* req) override;

 private:
  Agent* const agent_;
};

}  // namespace baton
