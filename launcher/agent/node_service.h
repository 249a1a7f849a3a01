// The agent's own gRPC service. ReadLogs streams an attempt's output file from an offset
// and, with `follow`, keeps the stream open while the attempt runs. Exec runs Open MPI's
// daemon inside an attempt for `baton-agent exec`, relaying its output and exit status.
// ReadLogs answers only the coordinator's certificate (researchers go through the
// coordinator, which checks their rights); Exec needs the attempt's secret, and its
// callers (mpirun's launcher, inside the job) have no certificate. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "launcher/agent/agent.h"
#include "proto/agent.grpc.pb.h"
#include "proto/tls.h"

namespace baton {

class LogReader;

// Followed log readers that reached the end of their file wait here; one thread looks
// at all of them again every 100 ms (not a thread per follower). Outlives the server.
class LogFollowers {
 public:
  LogFollowers();
  ~LogFollowers();
  LogFollowers(const LogFollowers&) = delete;
  LogFollowers& operator=(const LogFollowers&) = delete;
  void Wait(LogReader* reader);
  size_t waiting() const;

 private:
  static constexpr std::chrono::milliseconds kLook{100};
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<LogReader*> waiting_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is ready
};

class NodeService final : public v1::Agent::CallbackService {
 public:
  // `insecure`: plaintext on loopback (development): no certificate proves the
  // coordinator, so ReadLogs answers anyone.
  NodeService(Agent* agent, bool insecure)
      : agent_(agent), insecure_(insecure), followers_(std::make_unique<LogFollowers>()) {}
  grpc::ServerWriteReactor<v1::LogChunk>* ReadLogs(grpc::CallbackServerContext* ctx,
                                                   const v1::ReadLogsRequest* req) override;
  grpc::ServerWriteReactor<v1::ExecOutput>* Exec(grpc::CallbackServerContext* ctx,
                                                 const v1::ExecRequest* req) override;

 private:
  Agent* const agent_;
  const bool insecure_;
  const std::unique_ptr<LogFollowers> followers_;
};

}  // namespace baton
