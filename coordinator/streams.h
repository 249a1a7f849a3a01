// The coordinator's streaming reactors: Watch (job updates), the Logs relay (from the
// agent that holds the file), Events (the global event log, followed) and the agents'
// Connect stream (which is each agent's AgentLink). Each reactor deletes itself in OnDone, as
// gRPC's callback API expects. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "coordinator/job_manager.h"
#include "coordinator/stream_quota.h"
#include "proto/agent.grpc.pb.h"
#include "proto/threaded_writer.h"

namespace baton {

grpc::ServerWriteReactor<v1::Job>* NewWatchReactor(JobManager* jobs, Caller caller,
                                                   uint64_t job_id);
// Job updates as `caller` may see them (access::ForViewer). A client that falls 256
// updates behind is cut off (ResourceExhausted): commits never wait for it.
// Relays and event streams hold `ticket` (null when not followed) until they end. The log
// relay reads the agent's stream with the client callback API: no thread of its own.
grpc::ServerWriteReactor<v1::LogChunk>* NewLogRelay(std::shared_ptr<grpc::Channel> agent,
                                                    v1::ReadLogsRequest req,
                                                    StreamQuota::Ticket ticket);
// The event log as `req` asks, followed without a thread: live records are queued (at
// most 1,024 a stream; a reader that falls further behind reads the store again).
grpc::ServerWriteReactor<v1::Event>* NewEventStream(const EventLog* log, v1::EventsRequest req,
                                                    StreamQuota::Ticket ticket);
// Event records all event streams hold in memory now (for tests and metrics).
int64_t EventRecordsQueued();
// `allowed` not OK: the stream is refused with it. `certified_node`: the node the peer's
// certificate names; a Register for any other node is refused ("" : insecure, unchecked).
grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand>* NewAgentStream(
    JobManager* jobs, const absl::Status& allowed, std::string certified_node);

}  // namespace baton
