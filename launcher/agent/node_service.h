// The agent's own gRPC service. ReadLogs streams an attempt's output file from an offset
// and, with `follow`, keeps the stream open while the attempt runs. Exec runs Open MPI's
// daemon inside an attempt for `baton-agent exec`, relaying its output and exit status.
// ReadLogs answers only the coordinator's certificate (researchers go through the
// coordinator, which checks their rights); Exec needs the attempt's secret, and its
// callers (mpirun's launcher, inside the job) have no certificate. Thread-safe.
#pragma once

#include "launcher/agent/agent.h"
#include "proto/agent.grpc.pb.h"
#include "proto/tls.h"

namespace baton {

class NodeService final : public v1::Agent::CallbackService {
 public:
  // `insecure`: plaintext on loopback (development): no certificate proves the
  // coordinator, so ReadLogs answers anyone.
  NodeService(Agent* agent, bool insecure) : agent_(agent), insecure_(insecure) {}
  grpc::ServerWriteReactor<v1::LogChunk>* ReadLogs(grpc::CallbackServerContext* ctx,
                                                   const v1::ReadLogsRequest* req) override;
  grpc::ServerWriteReactor<v1::ExecOutput>* Exec(grpc::CallbackServerContext* ctx,
                                                 const v1::ExecRequest* req) override;

 private:
  Agent* const agent_;
  const bool insecure_;
};

}  // namespace baton
