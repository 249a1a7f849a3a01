#include "coordinator/streams.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>

#include "proto/threaded_writer.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

std::atomic<int64_t> queued_records{0};

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

// Copies the agent's ReadLogs stream to the client, one chunk in flight at a time, with
// no thread of its own: the agent's stream is read with gRPC's client callback API and
// each chunk read starts the client's write, each write done starts the next read, so
// exactly one of them is in flight until the end. A client that cancels cancels the
// agent's call. The agent's call always ends first (its OnDone is what finishes the
// client's call), and the client's call's OnDone deletes the relay: on the server's
// callback thread, which Server::Shutdown waits for, never after the server is gone.
class LogRelay : public grpc::ServerWriteReactor<v1::LogChunk> {
 public:
  LogRelay(const std::shared_ptr<grpc::Channel>& channel, v1::ReadLogsRequest req,
           StreamQuota::Ticket ticket)
      : stub_(v1::Agent::NewStub(channel)),
        req_(std::move(req)),
        ticket_(std::move(ticket)),
        upstream_(this) {
    // We prove ourselves with the coordinator's certificate (the channel's TLS).
    stub_->async()->ReadLogs(&agent_ctx_, &req_, &upstream_);
    // Reads are started from our write reactions too: the hold keeps the agent's call
    // from ending between them. It goes when no read will follow.
    upstream_.AddHold();
    upstream_.StartRead(&in_);
    upstream_.StartCall();
  }

  void OnWriteDone(bool ok) override {
    if (ok) {
      upstream_.StartRead(&in_);
    } else {
      agent_ctx_.TryCancel();  // the client is gone; the agent's OnDone finishes us
      upstream_.RemoveHold();
    }
  }
  void OnCancel() override { agent_ctx_.TryCancel(); }
  void OnDone() override { delete this; }

 private:
  class Upstream : public grpc::ClientReadReactor<v1::LogChunk> {
   public:
    explicit Upstream(LogRelay* relay) : relay_(relay) {}
    void OnReadDone(bool ok) override {
      if (!ok) {  // the agent's stream ended: OnDone has its status
        RemoveHold();
        return;
      }
      relay_->out_.Swap(&relay_->in_);
      relay_->StartWrite(&relay_->out_);
    }
    void OnDone(const grpc::Status& status) override {
      // The last use of the relay: once finished, the client's call may end and delete it.
      relay_->Finish(Explain(status));
    }

   private:
    LogRelay* const relay_;
  };

  static grpc::Status Explain(const grpc::Status& status) {
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return status;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the node agent holding the log is unreachable: " + status.error_message());
  }
  std::unique_ptr<v1::Agent::Stub> stub_;
  v1::ReadLogsRequest req_;
  grpc::ClientContext agent_ctx_;
  StreamQuota::Ticket ticket_;  // a followed stream's place, given back with the reactor
  Upstream upstream_;
  v1::LogChunk in_;   // being read from the agent
  v1::LogChunk out_;  // being written to the client
};

// The event log from `after_seq` (or its tail), then with `follow` each new durable
// record, without a thread of its own. Two sources, one write in flight at a time:
// - the store, read 512 records at a time on gRPC's callback threads (on the call's
//   first reaction and after a write completes) while the stream is behind;
// - the log's followers, which hand each durable record over on the committer's thread:
//   it is queued (at most kMaxLive) and the write started, never waited for.
// A reader that lets kMaxLive records pile up loses the queue and reads the store again
// from the last record it was sent, at its own pace: commits never wait for it, it misses
// nothing, and its memory stays bounded. Records are told apart by log_seq (no gaps are
// sent twice, none skipped).
class EventStream : public grpc::ServerWriteReactor<v1::Event> {
 public:
  EventStream(const EventLog* log, const v1::EventsRequest& req, StreamQuota::Ticket ticket)
      : log_(log), follow_(req.follow()), ticket_(std::move(ticket)) {
    query_.job_id = req.job_id();
    for (int k : req.kinds()) query_.kinds |= 1u << k;
    query_.limit = kBatch;
    after_ = req.after_seq();
    if (req.tail() > 0) {
      auto start = log_->TailStart(query_, req.tail());
      if (!start.ok()) {
        Finish(ToGrpc(start.status()));
        return;
      }
      after_ = std::max(after_, *start);
    }
    sent_ = after_;
    uint64_t durable = 0;
    // Before the first store read: whatever the read does not see reaches OnLive.
    if (follow_)
      follow_token_ = log_->Follow([this](const v1::Event& ev) { OnLive(ev); }, &durable);
    std::unique_lock<std::mutex> lock(mu_);
    Pump(lock, /*may_read=*/true);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) Stop(grpc::Status::CANCELLED);
    Pump(lock, /*may_read=*/true);
  }
  void OnCancel() override {
    std::unique_lock<std::mutex> lock(mu_);
    Stop(grpc::Status::CANCELLED);
    Pump(lock, /*may_read=*/false);
  }
  void OnDone() override {
    if (follow_token_) log_->Unfollow(follow_token_);  // no OnLive runs after this
    queued_records -= static_cast<int64_t>(accounted_);
    delete this;
  }

 private:
  static constexpr size_t kBatch = 512;
  static constexpr size_t kMaxLive = 1024;

  // Keeps queued_records (all streams' held records) up to date; under mu_.
  void Account() {
    size_t now = queue_.size() + live_.size();
    queued_records += static_cast<int64_t>(now) - static_cast<int64_t>(accounted_);
    accounted_ = now;
  }

  // On the committer's thread, with the log's mutex held: queue and start, never wait.
  void OnLive(const v1::Event& ev) {
    if (query_.job_id != 0 && ev.job_id() != query_.job_id) return;
    if (query_.kinds != 0 && (query_.kinds & (1u << static_cast<int>(ev.kind()))) == 0) return;
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) return;
    if (behind_) {  // the store pass in progress decides what of this it covers
      if (live_lost_) return;
      if (live_.size() >= kMaxLive) {
        live_.clear();
        live_lost_ = true;
      } else {
        live_.push_back(ev);
      }
      return Account();
    }
    if (ev.log_seq() <= after_) return;
    if (queue_.size() >= kMaxLive) {
      // A slow reader: drop what waits and read it from the store once the write in
      // flight completes (one always is while anything waits).
      queue_.clear();
      after_ = sent_;
      behind_ = true;
      return Account();
    }
    queue_.push_back(ev);
    after_ = ev.log_seq();
    Account();
    Pump(lock, /*may_read=*/false);
  }

  // Ends the stream with `status`: once what is queued is sent when OK, at once otherwise.
  void Stop(const grpc::Status& status) {
    if (stopping_) return;
    stopping_ = true;
    status_ = status;
    if (!status.ok()) queue_.clear();
    live_.clear();
    Account();
  }

  // Starts the next write, reads the store when behind (only where `may_read`: never on
  // the committer's thread), or finishes. Called with `lock` held; returns with it
  // released or not, after which the caller touches nothing of the stream.
  void Pump(std::unique_lock<std::mutex>& lock, bool may_read) {
    for (;;) {
      if (writing_ || finished_ || reading_) return;
      if (!queue_.empty()) {
        current_ = std::move(queue_.front());
        queue_.pop_front();
        Account();
        sent_ = current_.log_seq();
        writing_ = true;
        lock.unlock();  // not taken again: the stream may be gone once the write is done
        StartWrite(&current_);
        return;
      }
      if (stopping_) {
        finished_ = true;
        grpc::Status status = status_;
        lock.unlock();
        Finish(status);
        return;
      }
      if (!behind_ || !may_read) return;
      ReadStore(lock);
    }
  }

  // One store batch after after_. A short batch means the store is read up to what was
  // durable before it: the records followers handed over meanwhile continue from there.
  void ReadStore(std::unique_lock<std::mutex>& lock) {
    reading_ = true;
    LogQuery q = query_;
    q.after_seq = after_;
    lock.unlock();
    uint64_t durable = log_->durable_seq();  // all of it is in the store by now
    auto batch = log_->Read(q);
    lock.lock();
    reading_ = false;
    if (stopping_) return;
    if (!batch.ok()) {
      Stop(ToGrpc(batch.status()));
      return;
    }
    for (auto& ev : *batch) {
      after_ = ev.log_seq();
      queue_.push_back(std::move(ev));
    }
    Account();
    if (batch->size() == kBatch) return;  // more to read once these are sent
    after_ = std::max(after_, durable);   // nothing else up to `durable` matches
    if (!follow_) {
      Stop(grpc::Status::OK);
      return;
    }
    if (live_lost_) {  // too much arrived meanwhile: read the store again
      live_lost_ = false;
      return;
    }
    for (auto& ev : live_) {
      if (ev.log_seq() <= after_) continue;
      after_ = ev.log_seq();
      queue_.push_back(std::move(ev));
    }
    live_.clear();
    Account();
    behind_ = false;
  }

  const EventLog* const log_;
  const bool follow_;
  StreamQuota::Ticket ticket_;  // a followed stream's place, given back with the reactor
  LogQuery query_;
  uint64_t follow_token_ = 0;

  std::mutex mu_;
  std::deque<v1::Event> queue_;  // to send, in log_seq order
  std::deque<v1::Event> live_;   // handed over while a store pass runs
  v1::Event current_;            // the write in flight
  uint64_t after_ = 0;           // the newest record queued (or known not to match)
  uint64_t sent_ = 0;            // the newest record handed to gRPC
  bool behind_ = true;           // the store holds records not yet queued
  bool live_lost_ = false;       // live_ overflowed during this store pass
  bool reading_ = false;
  bool writing_ = false;
  bool stopping_ = false;
  bool finished_ = false;
  grpc::Status status_;
  size_t accounted_ = 0;  // this stream's part of queued_records
};

class AgentStream;

// What the JobManager holds: outlives the reactor, goes quiet when it is done.
class StreamLink : public AgentLink {
 public:
  StreamLink(WriteQueue<AgentStream, v1::CoordinatorCommand>* writes, uint64_t epoch)
      : writes_(writes), epoch_(epoch) {}
  void Send(const v1::CoordinatorCommand& cmd) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!writes_) return;
    v1::CoordinatorCommand stamped = cmd;  // Push copies anyway: every command names its leader
    stamped.set_epoch(epoch_);             // (0, the wire's default, for a coordinator alone)
    writes_->Push(std::move(stamped));
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    writes_ = nullptr;
  }

 private:
  std::mutex mu_;
  WriteQueue<AgentStream, v1::CoordinatorCommand>* writes_;
  const uint64_t epoch_;
};

class AgentStream : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand> {
 public:
  AgentStream(JobManager* jobs, const absl::Status& allowed, std::string certified_node)
      : jobs_(jobs),
        certified_node_(std::move(certified_node)),
        writes_(this),
        link_(std::make_shared<StreamLink>(&writes_, jobs->leader_epoch())) {
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
        jobs_->AgentHeartbeat(node_, msg_.heartbeat());
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
  return new LogRelay(agent, std::move(req), std::move(ticket));
}

grpc::ServerWriteReactor<v1::Event>* NewEventStream(const EventLog* log, v1::EventsRequest req,
                                                    StreamQuota::Ticket ticket) {
  return new EventStream(log, req, std::move(ticket));
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorCommand>* NewAgentStream(
    JobManager* jobs, const absl::Status& allowed, std::string certified_node) {
  return new AgentStream(jobs, allowed, std::move(certified_node));
}

int64_t EventRecordsQueued() { return queued_records.load(); }

}  // namespace baton
