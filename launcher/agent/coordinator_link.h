// The agent's link to the coordinator: one bidirectional stream at a time (the agent's
// messages up, the coordinator's commands down). The gRPC link (TLS, keepalive,
// reconnect backoff) is the production one; tests wrap it to hold writes or reads.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "proto/agent.pb.h"
#include "proto/tls.h"

namespace baton {

// One Connect stream. Write and Read each block, and may run at once on two threads (one
// writer, one reader); Cancel may be called from any thread, at any time, and makes both
// return false. Finish once Read has returned false: how the stream ended.
class CoordinatorStream {
 public:
  virtual ~CoordinatorStream() = default;
  virtual bool Write(const v1::AgentMessage& msg) = 0;
  virtual bool Read(v1::CoordinatorCommand* cmd) = 0;
  virtual void Cancel() = 0;
  virtual absl::Status Finish() = 0;
};

class CoordinatorLink {
 public:
  virtual ~CoordinatorLink() = default;
  // A new stream (the connection is made, or found broken, by its first Write or Read).
  virtual std::unique_ptr<CoordinatorStream> Connect() = 0;
};

// gRPC to `target` (host:port), proving this node with the certificate in `tls`.
std::unique_ptr<CoordinatorLink> GrpcCoordinatorLink(const std::string& target,
                                                     const TlsMaterial& tls);

}  // namespace baton
