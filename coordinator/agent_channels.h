// Channels from the coordinator to its agents (for ReadLogs: `baton logs` and the web
// dashboard's log tail), one per node and address, kept for reuse. TLS with the
// coordinator's certificate, the agent verified as the node it claims to be; an insecure
// coordinator talks plaintext to agents on loopback only. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "proto/tls.h"

namespace baton {

class AgentChannels {
 public:
  explicit AgentChannels(TlsMaterial tls) : tls_(std::move(tls)) {}
  // The agent of node `node` at `address`: its server must hold node `node`'s certificate.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> Get(const std::string& node,
                                                     const std::string& address);

 private:
  const TlsMaterial tls_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;  // by node@address
};

}  // namespace baton
