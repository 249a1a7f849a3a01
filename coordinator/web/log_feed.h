// A job's output as server-sent events (GET /api/v1/jobs/ID/log/stream): what `baton logs
// [-f]` shows, relayed from the agent that holds the file (ReadLogs) for the job page's
// tail. From the resumption point (Last-Event-ID: the byte offset after the last chunk
// sent) or the file's last `tail` bytes; each chunk is a LogChunk in proto3 JSON (its
// bytes base64, which the page decodes and shows as text), its id the offset after it.
// Followed (the job still runs) it holds a place of the follow quota; otherwise it ends
// with an `end` event once the file is read. The agent's stream is read with gRPC's
// client callback API, at most kMaxQueued bytes ahead of the browser.
#pragma once

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <atomic>
#include <memory>

#include "coordinator/stream_quota.h"
#include "proto/agent.grpc.pb.h"

namespace baton::web {

void ServeLogFeed(std::shared_ptr<grpc::Channel> agent, v1::ReadLogsRequest req,
                  StreamQuota::Ticket ticket, const std::atomic<bool>* stopping,
                  httplib::Response& res);

}  // namespace baton::web
