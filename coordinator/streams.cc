#include "coordinator/streams.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "proto/threaded_writer.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

// Serializes writes on a server stream: Push queues, one write is in flight at a time,
// and Finish waits for the queue to drain. Subclasses call OnWriteDoneImpl from
// OnWriteDone. StartWrite/Finish are never called with the mutex held.
template <typename Reactor, typename T>
class WriteQueue {
 public:
  // `max_queued` > 0: a client that lets more than that many messages pile up is cut off
  // (ResourceExhausted) rather than let them grow without end; Push never waits.
  explicit WriteQueue(Reactor* r, size_t max_queued = 0) : reactor_(r), max_queued_(max_queued) {}

  // False once the stream is finishing: the caller should stop producing.
  bool Push(T msg, bool last = false) {
    std::unique_lock<std::mutex> lock(mu_);
    if (finishing_) return false;
    if (max_queued_ > 0 && queue_.size() >= max_queued_) {
      finishing_ = true;
      status_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             "the client reads too slowly: " + std::to_string(queue_.size()) +
                                 " messages waiting; watch again to resume");
      // What is queued is dropped: a slow client must not hold the stream's memory.
      while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
      return MaybeStart(lock);
    }
    queue_.push_back(std::move(msg));
    if (last) finishing_ = true, status_ = grpc::Status::OK;
    return MaybeStart(lock);
  }
  void FinishWith(const grpc::Status& status) {
    std::unique_lock<std::mutex> lock(mu_);
    if (finishing_) return;
    finishing_ = true;
    status_ = status;
    MaybeStart(lock);
  }
  void OnWriteDoneImpl(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    queue_.pop_front();
    if (!ok) {
      queue_.clear();
      if (!finishing_) finishing_ = true, status_ = grpc::Status::CANCELLED;
    }
    MaybeStart(lock);
  }
  size_t queued() {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }

 private:
  bool MaybeStart(std::unique_lock<std::mutex>& lock) {
    if (writing_ || finished_) return !finishing_;
    if (!queue_.empty()) {
      writing_ = true;
      const T* front = &queue_.front();
      lock.unlock();
      reactor_->StartWrite(front);
      return true;
    }
    if (finishing_) {
      finished_ = true;
      grpc::Status s = status_;
      lock.unlock();
      reactor_->Finish(s);
      return false;
    }
    return true;
  }

  Reactor* const reactor_;
  const size_t max_queued_;
  std::mutex mu_;
  std::deque<T> queue_;
  bool writing_ = false;
  bool finishing_ = false;
  bool finished_ = false;
  grpc::Status status_;
};

class WatchReactor : public grpc::ServerWriteReactor<v1::Job> {
 public:
  WatchReactor(JobManager* jobs, Caller caller, uint64_t job_id)
      : jobs_(jobs), caller_(std::move(caller)), writes_(this, kMaxQueued) {
    auto token = jobs_->Watch(job_id, [this](const v1::Job& job) { Send(job); });
    if (!token.ok()) {
      writes_.FinishWith(ToGrpc(token.status()));
      return;
    }
    token_ = *token;
  }
  void OnWriteDone(bool ok) override { writes_.OnWriteDoneImpl(ok); }
  void OnCancel() override { writes_.FinishWith(grpc::Status::CANCELLED); }
  void OnDone() override {
    if (token_) jobs_->Unwatch(token_);  // no callback runs after this returns
    delete this;
  }

 private:
  // Job updates come from the committer, which must never wait for a client.
  static constexpr size_t kMaxQueued = 256;
  // Calls are serialized by the JobManager; drop versions older than what was sent.
  void Send(const v1::Job& job) {
    if (job.version() < version_) return;
    version_ = job.version();
    writes_.Push(access::ForViewer(jobs_->policy()->access, caller_, job), IsTerminal(job.state()));
  }

  JobManager* const jobs_;
  const Caller caller_;
  WriteQueue<WatchReactor, v1::Job> writes_;
  uint64_t token_ = 0;
  uint64_t version_ = 0;
};

// Copies the agent's ReadLogs stream to the client, one chunk in flight at a time, on a
// thread of its own (the agent side is a blocking client stream).
class LogRelay : public ThreadedWriteReactor<v1::LogChunk> {
 public:
  LogRelay(std::shared_ptr<grpc::Channel> channel, v1::ReadLogsRequest req,
           StreamQuota::Ticket ticket)
      : stub_(v1::Agent::NewStub(channel)), req_(std::move(req)), ticket_(std::move(ticket)) {}

 private:
  void OnCancelled() override { agent_ctx_.TryCancel(); }

  grpc::Status Produce() override {
    // We prove ourselves with the coordinator's certificate (the channel's TLS).
    auto reader = stub_->ReadLogs(&agent_ctx_, req_);
    v1::LogChunk chunk;
    bool ok = true;
    while (ok && reader->Read(&chunk)) ok = Write(chunk);
    if (!ok) agent_ctx_.TryCancel();
    grpc::Status status = reader->Finish();
    if (!ok) return grpc::Status::CANCELLED;
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      return grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          "the node agent holding the log is unreachable: " + status.error_message());
    }
    return status;
  }

  std::unique_ptr<v1::Agent::Stub> stub_;
  v1::ReadLogsRequest req_;
  grpc::ClientContext agent_ctx_;
  StreamQuota::Ticket ticket_;  // a followed stream's place, given back with the reactor
};

// The event log from `after_seq` (or its tail), in batches from the store; with
// `follow`, then each new durable record. Blocks on its own thread between records.
class EventStream : public ThreadedWriteReactor<v1::Event> {
 public:
  EventStream(const EventLog* log, v1::EventsRequest req, StreamQuota::Ticket ticket)
      : log_(log), req_(std::move(req)), ticket_(std::move(ticket)) {}

 private:
  static constexpr size_t kBatch = 512;

  grpc::Status Produce() override {
    LogQuery q;
    q.job_id = req_.job_id();
    for (int k : req_.kinds()) q.kinds |= 1u << k;
    uint64_t after = req_.after_seq();
    if (req_.tail() > 0) {
      auto start = log_->TailStart(q, req_.tail());
      if (!start.ok()) return ToGrpc(start.status());
      after = std::max(after, *start);
    }
    q.limit = kBatch;
    for (;;) {
      uint64_t durable = log_->durable_seq();  // all of it is in the store by now
      q.after_seq = after;
      auto batch = log_->Read(q);
      if (!batch.ok()) return ToGrpc(batch.status());
      for (const auto& ev : *batch) {
        if (!Write(ev)) return grpc::Status::CANCELLED;
        after = ev.log_seq();
      }
      if (batch->size() == kBatch) continue;
      after = std::max(after, durable);  // nothing else up to `durable` matches
      if (!req_.follow()) return grpc::Status::OK;
      while (log_->WaitPast(after, std::chrono::milliseconds(250)) <= after) {
        if (!Pause(std::chrono::milliseconds(0))) return grpc::Status::CANCELLED;
      }
    }
  }

  const EventLog* const log_;
  const v1::EventsRequest req_;
  StreamQuota::Ticket ticket_;  // a followed stream's place, given back with the reactor
};

class AgentStream;

// What the JobManager holds: outlives the reactor, goes quiet when it is done.
class StreamLink : public AgentLink {
 public:
  explicit StreamLink(WriteQueue<AgentStream, v1::CoordinatorCommand>* writes) : writes_(writes) {}
  void Send(const v1::CoordinatorCommand& cmd) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (writes_) writes_->Push(cmd);
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    writes_ = nullptr;
  }

 private:
  std::mutex mu_;
  WriteQueue<AgentStream, v1::CoordinatorCommand>* writes_;
};

class AgentStream : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand> {
 public:
  AgentStream(JobManager* jobs, const absl::Status& allowed, std::string certified_node)
      : jobs_(jobs),
        certified_node_(std::move(certified_node)),
        writes_(this),
        link_(std::make_shared<StreamLink>(&writes_)) {
    if (!allowed.ok()) {
      writes_.FinishWith(ToGrpc(allowed));
      return;
    }
    StartRead(&msg_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent went away or half-closed
      writes_.FinishWith(grpc::Status::OK);
      return;
    }
    absl::Status s = Handle();
    if (!s.ok()) {
      spdlog::warn("agent stream refused: {}", s.ToString());
      writes_.FinishWith(ToGrpc(s));
      return;
    }
    StartRead(&msg_);
  }
  void OnWriteDone(bool ok) override { writes_.OnWriteDoneImpl(ok); }
  void OnDone() override {
    link_->Close();
    if (!node_.empty()) jobs_->AgentDisconnected(node_, link_.get());
    delete this;
  }

 private:
  absl::Status Handle() {
    if (node_.empty() && !msg_.has_register_()) {
      return absl::FailedPreconditionError("the first message on Connect must be Register");
    }
    switch (msg_.msg_case()) {
      case v1::AgentMessage::kRegister: {
        if (!node_.empty()) return absl::FailedPreconditionError("Register sent twice");
        const std::string& claimed = msg_.register_().node();
        if (!certified_node_.empty() && claimed != certified_node_) {
          // Checked before the JobManager hears of it: the real node keeps its link.
          return absl::PermissionDeniedError("the certificate of node " + certified_node_ +
                                             " may not register as node " + claimed);
        }
        absl::Status s = jobs_->AgentRegister(msg_.register_(), link_);
        if (s.ok()) node_ = msg_.register_().node();
        return s;
      }
      case v1::AgentMessage::kHeartbeat: {
        jobs_->AgentHeartbeat(node_);
        // The agent's lease runs on what it hears from us, not on what it manages to send.
        v1::CoordinatorCommand ack;
        ack.mutable_heartbeat_ack()->set_time_ms(msg_.heartbeat().time_ms());
        link_->Send(ack);
        return absl::OkStatus();
      }
      case v1::AgentMessage::kReport:
        jobs_->AgentReport(node_, msg_.report());
        return absl::OkStatus();
      default:
        return absl::InvalidArgumentError("empty AgentMessage");
    }
  }

  JobManager* const jobs_;
  const std::string certified_node_;  // the name in the peer's certificate ("" : insecure)
  WriteQueue<AgentStream, v1::CoordinatorCommand> writes_;
  std::shared_ptr<StreamLink> link_;
  v1::AgentMessage msg_;
  std::string node_;
};

}  // namespace

grpc::ServerWriteReactor<v1::Job>* NewWatchReactor(JobManager* jobs, Caller caller,
                                                   uint64_t job_id) {
  return new WatchReactor(jobs, std::move(caller), job_id);
}

grpc::ServerWriteReactor<v1::LogChunk>* NewLogRelay(std::shared_ptr<grpc::Channel> agent,
                                                    v1::ReadLogsRequest req,
                                                    StreamQuota::Ticket ticket) {
  auto* relay = new LogRelay(std::move(agent), std::move(req), std::move(ticket));
  relay->Start();
  return relay;
}

grpc::ServerWriteReactor<v1::Event>* NewEventStream(const EventLog* log, v1::EventsRequest req,
                                                    StreamQuota::Ticket ticket) {
  auto* stream = new EventStream(log, std::move(req), std::move(ticket));
  stream->Start();
  return stream;
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand>* NewAgentStream(
    JobManager* jobs, const absl::Status& allowed, std::string certified_node) {
  return new AgentStream(jobs, allowed, std::move(certified_node));
}

}  // namespace baton
