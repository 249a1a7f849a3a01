#include "launcher/agent/log_service.h"

#include <fcntl.h>
#include <unistd.h>

#include "launcher/agent/log_pump.h"
#include "proto/threaded_writer.h"

namespace baton {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;
constexpr auto kFollowPoll = std::chrono::milliseconds(100);

// Reads the file on its own thread; one chunk in flight at a time.
class LogReader : public ThreadedWriteReactor<v1::LogChunk> {
 public:
  LogReader(const Agent* agent, v1::ReadLogsRequest req) : agent_(agent), req_(std::move(req)) {}

 private:
  grpc::Status Produce() override {
    std::string path = agent_->LogPath(req_.job_id(), req_.attempt());
    int fd = -1;
    while ((fd = open(path.c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
      if (!req_.follow() || !agent_->IsLive(req_.job_id(), req_.attempt())) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            "no output for job " + std::to_string(req_.job_id()) + " attempt " +
                                std::to_string(req_.attempt()) + " on this node");
      }
      if (!Pause(kFollowPoll)) return grpc::Status::CANCELLED;
    }
    int64_t offset = std::max<int64_t>(0, req_.offset());
    std::string buf(kChunkBytes, '\0');
    v1::LogChunk chunk;
    for (;;) {
      // Check liveness before reading: output written before the exit is then seen.
      bool live = req_.follow() && agent_->IsLive(req_.job_id(), req_.attempt());
      ssize_t n = pread(fd, buf.data(), buf.size(), offset);
      if (n < 0) {
        close(fd);
        return grpc::Status(grpc::StatusCode::INTERNAL, "read " + path + " failed");
      }
      if (n == 0) {
        if (!live || !Pause(kFollowPoll)) break;
        continue;
      }
      chunk.set_offset(offset);
      offset += n;
      if (req_.has_rank()) {
        chunk.set_data(FilterRank(buf.data(), static_cast<size_t>(n), !live));
        if (chunk.data().empty()) continue;
      } else {
        chunk.set_data(buf.data(), static_cast<size_t>(n));
      }
      if (!Write(chunk)) break;
    }
    close(fd);
    return grpc::Status::OK;
  }

  // Whole lines of the requested rank; a partial last line waits for the next read.
  std::string FilterRank(const char* data, size_t n, bool at_end) {
    partial_.append(data, n);
    std::string out;
    size_t start = 0, nl;
    while ((nl = partial_.find('\n', start)) != std::string::npos) {
      std::string line = partial_.substr(start, nl - start);
      if (LogPump::RankOf(line) == req_.rank()) out += line + "\n";
      start = nl + 1;
    }
    partial_.erase(0, start);
    if (at_end && LogPump::RankOf(partial_) == req_.rank()) out += partial_;
    return out;
  }

  const Agent* const agent_;
  const v1::ReadLogsRequest req_;
  std::string partial_;
};

class Refused : public grpc::ServerWriteReactor<v1::LogChunk> {
 public:
  explicit Refused(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<v1::LogChunk>* LogService::ReadLogs(grpc::CallbackServerContext* ctx,
                                                             const v1::ReadLogsRequest* req) {
  auto caller = CallerFromMetadata(ctx->client_metadata());
  if (!caller.ok()) return new Refused(ToGrpc(caller.status()));
  if (caller->role != Role::kAgent) {
    return new Refused(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                    "read logs through the coordinator (baton logs)"));
  }
  if (req->job_id() == 0 || req->attempt() == 0) {
    return new Refused(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "ReadLogs needs a job id and an attempt"));
  }
  auto* reader = new LogReader(agent_, *req);
  reader->Start();
  return reader;
}

}  // namespace baton
