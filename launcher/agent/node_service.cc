#include "launcher/agent/node_service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <optional>

#include "launcher/agent/log_pump.h"
#include "proto/rpc_util.h"
#include "proto/threaded_writer.h"

namespace baton {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;

}  // namespace

// Reads an attempt's output file, one chunk in flight at a time, with no thread of its
// own: the next chunk is read on gRPC's callback thread when a write is done, and a
// followed reader at the end of the file waits in the NodeService's LogFollowers, whose
// one thread looks again every 100 ms. A cancelled reader ends at its next step.
class LogReader : public grpc::ServerWriteReactor<v1::LogChunk> {
 public:
  LogReader(const Agent* agent, LogFollowers* followers, v1::ReadLogsRequest req)
      : agent_(agent), followers_(followers), req_(std::move(req)) {
    offset_ = std::max<int64_t>(0, req_.offset());
  }

  // Runs until a write is in flight, the reader waits for more, or the call ends. Only
  // one Step runs at a time: it is started by the handler, a write done or the followers.
  void Step() {
    if (cancelled_.load()) return End(grpc::Status::CANCELLED);
    if (fd_ < 0) {
      fd_ = open(agent_->LogPath(req_.job_id(), req_.attempt()).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) {
        if (!req_.follow() || !agent_->IsLive(req_.job_id(), req_.attempt())) {
          return End(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                  "no output for job " + std::to_string(req_.job_id()) +
                                      " attempt " + std::to_string(req_.attempt()) +
                                      " on this node"));
        }
        return followers_->Wait(this);
      }
      if (req_.offset() < 0) {  // a tail: that many bytes before the end, as it is now
        struct stat st {};
        if (fstat(fd_, &st) == 0) offset_ = std::max<int64_t>(0, st.st_size + req_.offset());
      }
    }
    for (;;) {
      // Check liveness before reading: output written before the exit is then seen.
      bool live = req_.follow() && agent_->IsLive(req_.job_id(), req_.attempt());
      buf_.resize(kChunkBytes);
      ssize_t n = pread(fd_, buf_.data(), buf_.size(), offset_);
      if (n < 0) return End(grpc::Status(grpc::StatusCode::INTERNAL, "reading the log failed"));
      if (n == 0) {
        if (!live) return End(grpc::Status::OK);
        return followers_->Wait(this);
      }
      chunk_.set_offset(offset_);
      offset_ += n;
      if (req_.has_rank()) {
        chunk_.set_data(FilterRank(buf_.data(), static_cast<size_t>(n), !live));
        if (chunk_.data().empty()) continue;
      } else {
        chunk_.set_data(buf_.data(), static_cast<size_t>(n));
      }
      return StartWrite(&chunk_);
    }
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return End(grpc::Status::CANCELLED);
    Step();
  }
  // A waiting reader is ended by the followers' next look; one writing by its write.
  void OnCancel() override { cancelled_ = true; }
  void OnDone() override {
    if (fd_ >= 0) close(fd_);
    delete this;
  }

 private:
  void End(const grpc::Status& status) { Finish(status); }

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
  LogFollowers* const followers_;
  const v1::ReadLogsRequest req_;
  std::atomic<bool> cancelled_{false};
  int fd_ = -1;
  int64_t offset_ = 0;
  std::string buf_;
  std::string partial_;
  v1::LogChunk chunk_;  // the write in flight
};

namespace {

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
  auto* reader = new LogReader(agent_, followers_.get(), *req);
  reader->Step();
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

LogFollowers::LogFollowers() : thread_([this] { Run(); }) {}

LogFollowers::~LogFollowers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void LogFollowers::Wait(LogReader* reader) {
  std::lock_guard<std::mutex> lock(mu_);
  waiting_.push_back(reader);
}

size_t LogFollowers::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

void LogFollowers::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, kLook, [this] { return stopping_; });
    std::vector<LogReader*> ready;
    ready.swap(waiting_);
    lock.unlock();
    // Each steps once: it writes, waits here again, or ends (and may be deleted).
    for (LogReader* r : ready) r->Step();
    lock.lock();
  }
}

}  // namespace baton
