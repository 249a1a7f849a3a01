// The coordinator's followed streams over real gRPC on loopback, without a thread each:
// the event stream reads its backlog from a real store and then takes live records from
// the log as they become durable (in order, none twice, none missed), keeps at most a
// bounded queue for a reader that does not read (and reads the store again when it
// resumes), and 200 followers add no threads; the log relay copies an agent's stream
// chunk by chunk, passes a client's cancel on to the agent and says when the agent is
// unreachable.
#include "coordinator/streams.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

#include "coordinator/event_log.h"
#include "coordinator/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/api.grpc.pb.h"
#include "proto/threaded_writer.h"
#include "proto/tls.h"
#include "tests/util/security.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {
namespace {

using ::testing::HasSubstr;

int ThreadsNow() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// TLS as the daemons have it: a CA, the coordinator's certificate, node n1's (made once
// for the suite, see Streams::SetUpTestSuite).
TempDir* tls_dir = nullptr;
TestSecurity* security = nullptr;
TestSecurity& Security() { return *security; }
TlsMaterial Tls(const std::string& cert = "", const std::string& key = "") {
  auto tls = LoadTls({Security().ca(), cert, key}, /*need_cert=*/!cert.empty());
  EXPECT_TRUE(tls.ok()) << tls.status();
  return tls.value();
}
TlsMaterial CoordinatorTls() {
  std::string dir = Security().ca().substr(0, Security().ca().rfind('/'));
  return Tls(dir + "/coordinator.crt", dir + "/coordinator.key");
}
// A channel to `target` over TLS; `node`: the server must hold that node's certificate.
std::shared_ptr<grpc::Channel> Channel(const TlsMaterial& tls, const std::string& target,
                                       const std::string& node = "") {
  grpc::ChannelArguments args;
  if (!node.empty()) VerifyServerAs(node, &args);
  return grpc::CreateCustomChannel(target, ChannelCredentials(tls, target).value(), args);
}

// A coordinator's Events and Logs on an in-process server, over a real store; Logs
// relays to `agent` (node n1's address) as the coordinator does, with its certificate.
class Service final : public v1::Coordinator::CallbackService {
 public:
  Service(const EventLog* log, std::string agent) : log_(log), agent_(std::move(agent)) {}
  grpc::ServerWriteReactor<v1::Event>* Events(grpc::CallbackServerContext*,
                                              const v1::EventsRequest* req) override {
    return NewEventStream(log_, *req, nullptr);
  }
  grpc::ServerWriteReactor<v1::LogChunk>* Logs(grpc::CallbackServerContext*,
                                               const v1::LogsRequest* req) override {
    v1::ReadLogsRequest agent_req;
    agent_req.set_job_id(req->job_id());
    agent_req.set_attempt(1);
    agent_req.set_follow(req->follow());
    return NewLogRelay(Channel(CoordinatorTls(), agent_, "n1"), agent_req, nullptr);
  }

 private:
  const EventLog* const log_;
  const std::string agent_;
};

// An agent whose ReadLogs sends `chunks` numbered chunks, then (following) holds the
// stream open until the caller cancels, which it counts.
class FakeAgent final : public v1::Agent::CallbackService {
 public:
  explicit FakeAgent(int chunks) : chunks_(chunks) {}
  grpc::ServerWriteReactor<v1::LogChunk>* ReadLogs(grpc::CallbackServerContext*,
                                                   const v1::ReadLogsRequest* req) override {
    class Reader : public grpc::ServerWriteReactor<v1::LogChunk> {
     public:
      Reader(FakeAgent* agent, bool follow) : agent_(agent), follow_(follow) { Next(); }
      void OnWriteDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::CANCELLED);
        Next();
      }
      void OnCancel() override {
        ++agent_->cancelled;
        std::lock_guard<std::mutex> lock(mu_);
        cancelled_ = true;
        if (holding_) Finish(grpc::Status::CANCELLED);
        holding_ = false;
      }
      void OnDone() override { delete this; }

     private:
      void Next() {
        if (sent_ < agent_->chunks_) {
          chunk_.set_offset(sent_);
          chunk_.set_data("chunk " + std::to_string(sent_++) + "\n");
          return StartWrite(&chunk_);
        }
        if (!follow_) return Finish(grpc::Status::OK);
        std::lock_guard<std::mutex> lock(mu_);
        if (cancelled_) return Finish(grpc::Status::CANCELLED);
        holding_ = true;  // until cancelled
      }
      FakeAgent* const agent_;
      const bool follow_;
      int sent_ = 0;
      v1::LogChunk chunk_;
      std::mutex mu_;
      bool holding_ = false;
      bool cancelled_ = false;
    };
    return new Reader(this, req->follow());
  }
  std::atomic<int> cancelled{0};

 private:
  const int chunks_;
};

class Streams : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tls_dir = new TempDir("baton-streams-tls");
    security = new TestSecurity(tls_dir->path());
  }
  static void TearDownTestSuite() {
    delete security;  // stops its munged
    delete tls_dir;
  }
  void SetUp() override {
    ASSERT_TRUE(Security().ok()) << Security().why();
    auto store = Store::Open(dir_.Sub("store"), StoreOptions{});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    log_ = std::make_unique<EventLog>(store_.get());
    log_->Recover(0);
    grpc::ServerBuilder agent_builder;
    int agent_port = 0;
    auto [node_cert, node_key] = Security().NodeCert("n1", {"IP:127.0.0.1"});
    agent_builder.AddListeningPort(
        "127.0.0.1:0", ServerCredentials(Tls(node_cert, node_key), "127.0.0.1:0").value(),
        &agent_port);
    agent_builder.RegisterService(&agent_);
    agent_server_ = agent_builder.BuildAndStart();
    ASSERT_GT(agent_port, 0);
    service_ = std::make_unique<Service>(log_.get(), "127.0.0.1:" + std::to_string(agent_port));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0",
                             ServerCredentials(CoordinatorTls(), "127.0.0.1:0").value(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = v1::Coordinator::NewStub(Channel(Tls(), "127.0.0.1:" + std::to_string(port)));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    if (agent_server_) {
      agent_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    }
  }

  // Commits `n` records (job `job`, transitions unless `kind` says otherwise), `per_commit`
  // to a write, as the Committer does: durable first, then published.
  void Append(int n, uint64_t job = 1, int per_commit = 1,
              v1::EventKind kind = v1::EVENT_KIND_TRANSITION, size_t padding = 0) {
    for (int i = 0; i < n; i += per_commit) {
      StoreBatch batch;
      for (int k = i; k < std::min(n, i + per_commit); ++k) {
        v1::Event ev;
        ev.set_job_id(job);
        ev.set_kind(kind);
        ev.set_reason("record " + std::to_string(k) + std::string(padding, '.'));
        log_->Append(std::move(ev), &batch);
      }
      ASSERT_TRUE(store_->Commit(batch).ok());
      log_->Published(batch);
    }
  }

  struct Follower {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::Event>> reader;
  };
  std::unique_ptr<Follower> Follow(v1::EventsRequest req) {
    auto f = std::make_unique<Follower>();
    f->reader = stub_->Events(&f->ctx, req);
    return f;
  }
  // Reads `n` records and checks they continue the log from `after` with no gap.
  static void ExpectNext(Follower* f, uint64_t* after, int n) {
    v1::Event ev;
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(f->reader->Read(&ev)) << "record " << i << " of " << n;
      ASSERT_EQ(ev.log_seq(), *after + 1) << "in order, none twice, none missed";
      *after = ev.log_seq();
    }
  }

  TempDir dir_{"baton-streams"};
  std::unique_ptr<Store> store_;
  std::unique_ptr<EventLog> log_;
  FakeAgent agent_{5};
  std::unique_ptr<grpc::Server> agent_server_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

TEST_F(Streams, AFollowerGetsTheBacklogThenLiveRecordsInOrder) {
  Append(1500, 1, /*per_commit=*/100);  // three store batches and a bit
  v1::EventsRequest req;
  req.set_follow(true);
  auto f = Follow(req);
  uint64_t after = 0;
  ExpectNext(f.get(), &after, 700);
  // Records that become durable while the backlog is being read, and after.
  std::thread writer([&] { Append(700, 1, /*per_commit=*/7); });
  ExpectNext(f.get(), &after, 800 + 700);
  writer.join();
  Append(3);
  ExpectNext(f.get(), &after, 3);
  f->ctx.TryCancel();
  f->reader->Finish();
}

TEST_F(Streams, LiveRecordsAreFilteredLikeStoredOnes) {
  Append(10, /*job=*/1);
  v1::EventsRequest req;
  req.set_follow(true);
  req.set_job_id(2);
  req.add_kinds(v1::EVENT_KIND_EVICTION);
  auto f = Follow(req);
  Append(5, /*job=*/2, 1, v1::EVENT_KIND_TRANSITION);
  Append(5, /*job=*/3, 1, v1::EVENT_KIND_EVICTION);
  Append(2, /*job=*/2, 1, v1::EVENT_KIND_EVICTION);
  v1::Event ev;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(f->reader->Read(&ev));
    EXPECT_EQ(ev.job_id(), 2u);
    EXPECT_EQ(ev.kind(), v1::EVENT_KIND_EVICTION);
  }
  EXPECT_EQ(ev.log_seq(), 22u);
  f->ctx.TryCancel();
  f->reader->Finish();
}

TEST_F(Streams, AReaderThatStopsReadingNeverSlowsCommitsAndHoldsABoundedQueue) {
  v1::EventsRequest req;
  req.set_follow(true);
  auto f = Follow(req);
  Append(1);
  uint64_t after = 0;
  ExpectNext(f.get(), &after, 1);
  // The client reads nothing while 10,000 records of 4 KiB become durable (more than
  // gRPC's flow control takes): publishing never waits for it, and the stream holds at
  // most its bound (1,024) in memory; the rest stays in the store.
  auto writing = std::async(std::launch::async,
                            [&] { Append(10'000, 1, 10, v1::EVENT_KIND_TRANSITION, 4096); });
  ASSERT_EQ(writing.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "a commit waited for a reader";
  EXPECT_LE(EventRecordsQueued(), 1024);
  // When it reads again it gets everything, from the store and then live.
  ExpectNext(f.get(), &after, 10'000);
  Append(5);
  ExpectNext(f.get(), &after, 5);
  EXPECT_LE(EventRecordsQueued(), 1024);
  f->ctx.TryCancel();
  f->reader->Finish();
}

TEST_F(Streams, WithoutFollowTheStreamEndsAtTheNewestRecord) {
  Append(600, 1, 50);
  v1::EventsRequest req;
  req.set_tail(10);
  auto f = Follow(req);
  uint64_t after = 590;
  ExpectNext(f.get(), &after, 10);
  v1::Event ev;
  EXPECT_FALSE(f->reader->Read(&ev));
  EXPECT_TRUE(f->reader->Finish().ok());
}

TEST_F(Streams, TwoHundredFollowersAddNoThreads) {
  Append(1);
  v1::EventsRequest req;
  req.set_follow(true);
  auto warm = Follow(req);  // gRPC's own threads start with the first calls
  uint64_t warm_after = 0;
  ExpectNext(warm.get(), &warm_after, 1);
  int before = ThreadsNow();
  std::vector<std::unique_ptr<Follower>> open;
  for (int i = 0; i < 200; ++i) {
    open.push_back(Follow(req));
    uint64_t after = 0;
    ExpectNext(open.back().get(), &after, 1);
  }
  EXPECT_EQ(log_->followers(), 201u);
  EXPECT_LE(ThreadsNow(), before + 10) << "a thread per follower would add 200";
  Append(1);
  for (auto& f : open) {
    uint64_t after = 1;
    ExpectNext(f.get(), &after, 1);
  }
  for (auto& f : open) f->ctx.TryCancel();
  for (auto& f : open) f->reader->Finish();
  warm->ctx.TryCancel();
  warm->reader->Finish();
  for (int i = 0; i < 100 && log_->followers() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(log_->followers(), 0u) << "a stream that ends stops following";
}

TEST_F(Streams, TheLogRelayCopiesTheAgentsStreamAndPassesACancelOn) {
  v1::LogsRequest req;
  req.set_job_id(7);
  {
    grpc::ClientContext ctx;
    auto reader = stub_->Logs(&ctx, req);
    v1::LogChunk chunk;
    std::string all;
    while (reader->Read(&chunk)) all += chunk.data();
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(all, "chunk 0\nchunk 1\nchunk 2\nchunk 3\nchunk 4\n");
  }
  // Followed: 100 relays held open add no threads; each client's cancel reaches the agent.
  req.set_follow(true);
  int before = ThreadsNow();
  struct Open {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::LogChunk>> reader;
  };
  std::vector<std::unique_ptr<Open>> open;
  for (int i = 0; i < 100; ++i) {
    auto o = std::make_unique<Open>();
    o->reader = stub_->Logs(&o->ctx, req);
    v1::LogChunk chunk;
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(o->reader->Read(&chunk));
    EXPECT_EQ(chunk.data(), "chunk 4\n");
    open.push_back(std::move(o));
  }
  EXPECT_LE(ThreadsNow(), before + 10) << "a thread per relay would add 100";
  for (auto& o : open) o->ctx.TryCancel();
  for (auto& o : open) {
    EXPECT_EQ(o->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  for (int i = 0; i < 200 && agent_.cancelled.load() < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(agent_.cancelled.load(), 100);
}

TEST_F(Streams, TheLogRelaySaysWhenTheAgentIsUnreachable) {
  agent_server_->Shutdown(std::chrono::system_clock::now());
  agent_server_.reset();
  v1::LogsRequest req;
  req.set_job_id(7);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto reader = stub_->Logs(&ctx, req);
  v1::LogChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("the node agent holding the log is unreachable"));
}

}  // namespace
}  // namespace baton::testing
