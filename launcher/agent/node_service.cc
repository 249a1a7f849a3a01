#include "launcher/agent/node_service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <optional>

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

// Runs one exec'ed command and streams its output, then its exit status.
class ExecRunner : public ThreadedWriteReactor<v1::ExecOutput> {
 public:
  ExecRunner(Agent* agent, v1::ExecRequest req) : agent_(agent), req_(std::move(req)) {}

 private:
  struct ExitBox {
    std::mutex mu;
    std::optional<ExitStatus> status;
  };

  void OnCancelled() override {
    pid_t pid = pid_.load();
    if (pid > 0) agent_->HangUpExec(pid);
  }

  grpc::Status Produce() override {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return grpc::Status(grpc::StatusCode::INTERNAL, "pipe");
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      return grpc::Status(grpc::StatusCode::INTERNAL, "pipe");
    }
    auto box = std::make_shared<ExitBox>();
    auto pid = agent_->StartExec(req_, out[1], err[1], {out[0], err[0]}, [box](ExitStatus st) {
      std::lock_guard<std::mutex> lock(box->mu);
      box->status = st;
    });
    close(out[1]);
    close(err[1]);
    if (!pid.ok()) {
      close(out[0]);
      close(err[0]);
      return ToGrpc(pid.status());
    }
    pid_ = *pid;
    v1::ExecOutput started;
    started.set_started(true);
    Write(started);
    Relay(out[0], err[0], box.get());
    pid_ = 0;  // reaped (or the client left): a late cancel must not signal its pid
    close(out[0]);
    close(err[0]);
    v1::ExecOutput last;
    last.set_exited(true);
    std::lock_guard<std::mutex> lock(box->mu);
    if (!box->status) return grpc::Status::CANCELLED;
    last.set_exit_code(box->status->exit_code);
    last.set_term_signal(box->status->term_signal);
    Write(last);
    return grpc::Status::OK;
  }

  // Copies both pipes to the stream until they close and the command has exited (or the
  // client went away). Output still held open by heirs 1 s after the exit is dropped.
  void Relay(int out, int err, ExitBox* box) {
    pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
    int open = 2;
    int64_t grace_polls = -1;
    char buf[16384];
    while (open > 0 || !Exited(box)) {
      if (Exited(box) && grace_polls < 0) grace_polls = 10;
      if (grace_polls == 0) break;
      if (grace_polls > 0) --grace_polls;
      int n = poll(fds, 2, 100);
      for (int i = 0; n > 0 && i < 2; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        ssize_t got = read(fds[i].fd, buf, sizeof buf);
        if (got <= 0) {
          fds[i].fd = -1;
          --open;
          continue;
        }
        v1::ExecOutput chunk;
        (i == 0 ? chunk.mutable_stdout() : chunk.mutable_stderr())->assign(buf, got);
        if (!Write(chunk)) return OnCancelled();
      }
    }
  }

  static bool Exited(ExitBox* box) {
    std::lock_guard<std::mutex> lock(box->mu);
    return box->status.has_value();
  }

  Agent* const agent_;
  const v1::ExecRequest req_;
  std::atomic<pid_t> pid_{0};
};

}  // namespace

grpc::ServerWriteReactor<v1::LogChunk>* NodeService::ReadLogs(grpc::CallbackServerContext* ctx,
                                                              const v1::ReadLogsRequest* req) {
  // Only the coordinator, which checked the researcher's right to them, reads logs here.
  Peer peer = insecure_ ? Peer{Peer::Kind::kCoordinator, "insecure"} : PeerOf(*ctx);
  if (peer.kind != Peer::Kind::kCoordinator) {
    return FinishedStream<v1::LogChunk>(
        grpc::Status(peer.kind == Peer::Kind::kNone ? grpc::StatusCode::UNAUTHENTICATED
                                                    : grpc::StatusCode::PERMISSION_DENIED,
                     "ReadLogs is for the coordinator's certificate only: read logs through the "
                     "coordinator (baton logs)"));
  }
  if (req->job_id() == 0 || req->attempt() == 0) {
    return FinishedStream<v1::LogChunk>(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "ReadLogs needs a job id and an attempt"));
  }
  auto* reader = new LogReader(agent_, *req);
  reader->Start();
  return reader;
}

grpc::ServerWriteReactor<v1::ExecOutput>* NodeService::Exec(grpc::CallbackServerContext* ctx,
                                                            const v1::ExecRequest* req) {
  (void)ctx;  // its caller is mpirun, inside the job: the attempt's secret is the proof
  if (req->job_id() == 0 || req->attempt() == 0 || req->command().empty()) {
    return FinishedStream<v1::ExecOutput>(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT, "Exec needs a job id, an attempt and a command"));
  }
  auto* runner = new ExecRunner(agent_, *req);
  runner->Start();
  return runner;
}

}  // namespace baton
