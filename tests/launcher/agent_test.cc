// The node agent in-process against a fake coordinator (a real gRPC server on a loopback
// port), launching real children. The Agent owns the process's Reaper, which reaps every
// child and must outlive them all, so one Agent serves the whole binary; each test uses
// its own job ids. Time is a FakeClock: grace periods, deadlines, heartbeats and the
// lease move only when a test advances it.
#include "launcher/agent/agent.h"

#include <google/protobuf/util/message_differencer.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/launcher/fake_coordinator.h"
#include "tests/launcher/test_util.h"
#include "tests/util/security.h"

namespace baton {
namespace {

using launcher_testing::AckCommand;
using launcher_testing::FakeCoordinator;
using launcher_testing::kHeartbeatMs;
using launcher_testing::KillCommand;
using launcher_testing::kLeaseMs;
using launcher_testing::kNode;
using launcher_testing::LaunchCommand;
using launcher_testing::ObserverLog;
using launcher_testing::PollUntil;
using launcher_testing::ReadFile;
using launcher_testing::ScratchDir;
using launcher_testing::WaitUntil;
using ::testing::HasSubstr;
using ::testing::Not;
using Phase = v1::AttemptReport::Phase;

constexpr char kAdvertise[] = "127.0.0.1:7070";

// Starts the agent's processes with a Reaper of its own. Closed for some jobs, their
// spawns wait (before the fork, or after it: the child runs, the agent is not told yet)
// until it opens again: a launch stuck in its slow part. Other jobs pass.
class GateSpawner : public Spawner {
 public:
  enum class Hold { kBeforeFork, kAfterFork };
  absl::StatusOr<pid_t> SpawnAndWatch(const SpawnOptions& options, Callback on_exit,
                                      pid_t* keeper) override {
    Callback counted = [this, on_exit = std::move(on_exit)](pid_t pid, ExitStatus st) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++exits_;
      }
      cv_.notify_all();
      on_exit(pid, st);
    };
    std::unique_lock<std::mutex> lock(mu_);
    bool held = false;
    for (const std::string& e : options.env) {
      if (e.rfind("BATON_JOB_ID=", 0) != 0) continue;
      uint64_t job = std::strtoull(e.c_str() + 13, nullptr, 10);
      held = !open_ && job >= job_ && job < job_ + span_;
    }
    spawns_ += held ? 1 : 0;
    if (held && hold_ == Hold::kBeforeFork) Wait(lock);
    lock.unlock();
    auto pid = reaper_.SpawnAndWatch(options, std::move(counted), keeper);
    lock.lock();
    if (held && hold_ == Hold::kAfterFork) Wait(lock);
    return pid;
  }
  // Holds the spawns of jobs [job, job + span).
  void Close(Hold hold, uint64_t job, uint64_t span = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
    hold_ = hold;
    job_ = job;
    span_ = span;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Until `n` spawns wait at the gate.
  bool WaitForWaiting(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return launcher_testing::WaitUntil(cv_, lock, [&] { return waiting_ >= n; });
  }
  // Until `n` children have ended since the start.
  bool WaitForExits(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return launcher_testing::WaitUntil(cv_, lock, [&] { return exits_ >= n; });
  }
  // Spawns of held jobs so far.
  int spawns() {
    std::lock_guard<std::mutex> lock(mu_);
    return spawns_;
  }
  int exits() {
    std::lock_guard<std::mutex> lock(mu_);
    return exits_;
  }

 private:
  void Wait(std::unique_lock<std::mutex>& lock) {
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    --waiting_;
  }
  Reaper reaper_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  Hold hold_ = Hold::kBeforeFork;
  uint64_t job_ = 0, span_ = 1;
  int waiting_ = 0, spawns_ = 0, exits_ = 0;
};

// Opens the gate when a test leaves, passing or not: a closed gate would hold the
// agent's launch workers for the tests after it.
struct OpenOnExit {
  GateSpawner* gate;
  ~OpenOnExit() { gate->Open(); }
};

// The agent's real gRPC link to the fake coordinator, whose writes can be held: a
// coordinator slow to read what the agent sends. A held write returns once the gate
// opens, or false when its stream is cancelled.
class GateLink : public CoordinatorLink {
 public:
  explicit GateLink(std::unique_ptr<CoordinatorLink> inner) : inner_(std::move(inner)) {}
  std::unique_ptr<CoordinatorStream> Connect() override {
    return std::make_unique<Stream>(this, inner_->Connect());
  }
  void HoldWrites() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void OpenWrites() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool WaitForHeldWrite() {
    std::unique_lock<std::mutex> lock(mu_);
    return launcher_testing::WaitUntil(cv_, lock, [&] { return held_ > 0; });
  }

 private:
  class Stream : public CoordinatorStream {
   public:
    Stream(GateLink* gate, std::unique_ptr<CoordinatorStream> inner)
        : gate_(gate), inner_(std::move(inner)) {}
    bool Write(const v1::AgentMessage& msg) override {
      {
        std::unique_lock<std::mutex> lock(gate_->mu_);
        ++gate_->held_;
        gate_->cv_.notify_all();
        gate_->cv_.wait(lock, [&] { return gate_->open_ || cancelled_; });
        --gate_->held_;
        if (cancelled_) return false;
      }
      return inner_->Write(msg);
    }
    bool Read(v1::CoordinatorCommand* cmd) override { return inner_->Read(cmd); }
    void Cancel() override {
      {
        std::lock_guard<std::mutex> lock(gate_->mu_);
        cancelled_ = true;
        gate_->cv_.notify_all();
      }
      inner_->Cancel();
    }
    absl::Status Finish() override { return inner_->Finish(); }

   private:
    GateLink* const gate_;
    std::unique_ptr<CoordinatorStream> inner_;
    bool cancelled_ = false;  // under gate_->mu_
  };
  std::unique_ptr<CoordinatorLink> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int held_ = 0;  // writes waiting at the gate
};

struct OpenLinkOnExit {
  GateLink* gate;
  ~OpenLinkOnExit() { gate->OpenWrites(); }
};

v1::Inventory TestInventory() {
  v1::Inventory inv;
  inv.set_cpus(8);
  inv.set_memory_bytes(32ull << 30);
  for (int i = 0; i < 2; ++i) {
    v1::Gpu* g = inv.add_gpus();
    g->set_index(i);
    g->set_uuid("GPU-fake-node-t-" + std::to_string(i));
    g->set_model("FakeGPU");
    g->set_fake(true);
  }
  v1::Gpu* pool = inv.add_gpus();  // offered as an MPS pool (the fake control runs it)
  pool->set_index(2);
  pool->set_uuid("GPU-fake-node-t-2");
  pool->set_model("FakeGPU");
  pool->set_memory_bytes(80ull << 30);
  pool->set_fake(true);
  pool->set_mps_pool(true);
  v1::NumaNode* n = inv.add_numa_nodes();
  for (uint32_t c = 0; c < 8; ++c) n->add_cpus(c);
  return inv;
}

class AgentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    chmod(dir_->path().c_str(), 0711);  // jobs of the test users reach their work dirs
    clock_ = new FakeClock();
    tls_ = new launcher_testing::FakeCoordinatorTls(dir_->path() + "/tls");
    coordinator_ = new FakeCoordinator();
    coordinator_->Start(tls_->server);
    AgentOptions o;
    o.tls = tls_->agent;
    o.node_name = kNode;
    o.coordinator = coordinator_->address();
    o.data_dir = dir_->path();
    o.pool = "gpu-pool";
    o.labels = {{"zone", "b"}};
    v1::Taint t;
    t.set_key("maint");
    t.set_effect("NoSchedule");
    o.taints = {t};
    o.reconnect_max_backoff = absl::Milliseconds(200);
    o.mps_control = std::string(BATON_SOURCE_DIR) + "/tests/launcher/fake_mps_control.sh";
    spawner_ = new GateSpawner();
    observer_ = new ObserverLog();
    link_ = new GateLink(GrpcCoordinatorLink(o.coordinator, o.tls));
    agent_ =
        new Agent(o, TestInventory(), clock_, /*isolator=*/nullptr, observer_, spawner_, link_);
    agent_->Start(kAdvertise);
  }

  static void TearDownTestSuite() {
    // Stop ends what still runs and reports it before it disconnects.
    ASSERT_TRUE(coordinator_->Push(LaunchCommand(9000, {"sleep", "60"})));
    ASSERT_TRUE(WaitReport(9000, v1::AttemptReport::PHASE_RUNNING));
    agent_->Stop();
    auto end = WaitReport(9000, v1::AttemptReport::PHASE_EXITED);
    ASSERT_TRUE(end) << "no end report for an attempt running at Stop";
    EXPECT_EQ(end->term_signal(), SIGTERM);
    EXPECT_TRUE(end->killed());
    EXPECT_THAT(end->message(), HasSubstr("agent stopping"));
    coordinator_->Shutdown();
    // The agent (and the Reaper it owns) stays allocated until the process exits.
    delete coordinator_;
    delete tls_;  // stops the test munged
    delete dir_;
  }

  static std::optional<v1::AttemptReport> WaitReport(uint64_t job, Phase phase) {
    auto r = coordinator_->WaitFor([&](const FakeCoordinator::Received& m) {
      return m.msg.has_report() && m.msg.report().job_id() == job &&
             m.msg.report().phase() == phase;
    });
    if (!r) return std::nullopt;
    return r->msg.report();
  }
  // The first EXITED or REJECTED report for `job`.
  static std::optional<v1::AttemptReport> WaitEnd(uint64_t job) {
    auto r = coordinator_->WaitFor([&](const FakeCoordinator::Received& m) {
      return m.msg.has_report() && m.msg.report().job_id() == job &&
             (m.msg.report().phase() == v1::AttemptReport::PHASE_EXITED ||
              m.msg.report().phase() == v1::AttemptReport::PHASE_REJECTED);
    });
    if (!r) return std::nullopt;
    return r->msg.report();
  }
  // All reports for `job`, in order.
  static std::vector<v1::AttemptReport> Reports(uint64_t job) {
    std::vector<v1::AttemptReport> out;
    for (const auto& m : coordinator_->received()) {
      if (m.msg.has_report() && m.msg.report().job_id() == job) out.push_back(m.msg.report());
    }
    return out;
  }
  // Commands are handled in order: once a later launch has been reported, every earlier
  // command has been handled.
  static void Barrier() {
    static std::atomic<uint64_t> next{100'000};
    uint64_t job = next++;
    ASSERT_TRUE(coordinator_->Push(LaunchCommand(job, {"true"})));
    ASSERT_TRUE(WaitReport(job, v1::AttemptReport::PHASE_RUNNING));
  }
  static void Launch(uint64_t job, std::vector<std::string> command, uint32_t ranks = 1,
                     std::vector<std::string> gpus = {}) {
    ASSERT_TRUE(coordinator_->Push(LaunchCommand(job, std::move(command), ranks, gpus)));
  }
  // Waits until the attempt's log contains `text` (the job says it is ready) and its
  // launch is committed (RUNNING reported): its processes are known to the agent, so a
  // stop reaches them as it would a running job. (They may write before the commit.)
  static bool WaitForLog(uint64_t job, const std::string& text) {
    return PollUntil(
               [&] { return ReadFile(agent_->LogPath(job, 1)).find(text) != std::string::npos; }) &&
           WaitReport(job, v1::AttemptReport::PHASE_RUNNING);
  }

  static ScratchDir* dir_;
  static launcher_testing::FakeCoordinatorTls* tls_;
  static FakeClock* clock_;
  static FakeCoordinator* coordinator_;
  static Agent* agent_;
  static GateSpawner* spawner_;
  static ObserverLog* observer_;
  static GateLink* link_;
};

ScratchDir* AgentTest::dir_ = nullptr;
launcher_testing::FakeCoordinatorTls* AgentTest::tls_ = nullptr;
FakeClock* AgentTest::clock_ = nullptr;
FakeCoordinator* AgentTest::coordinator_ = nullptr;
Agent* AgentTest::agent_ = nullptr;
GateSpawner* AgentTest::spawner_ = nullptr;
ObserverLog* AgentTest::observer_ = nullptr;
GateLink* AgentTest::link_ = nullptr;

TEST_F(AgentTest, RegistersWithNodeNameInventoryAndAddress) {
  auto reg = coordinator_->WaitFor([](const auto& m) { return m.msg.has_register_(); });
  ASSERT_TRUE(reg);
  const v1::Register& r = reg->msg.register_();
  EXPECT_EQ(r.node(), kNode);
  EXPECT_EQ(r.address(), kAdvertise);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(r.inventory(), TestInventory()));
  EXPECT_EQ(r.pool(), "gpu-pool");
  EXPECT_EQ(r.labels().at("zone"), "b");
  ASSERT_EQ(r.taints_size(), 1);
  EXPECT_EQ(r.taints(0).key(), "maint");
  EXPECT_FALSE(r.version().empty());
  ASSERT_FALSE(coordinator_->peers().empty());
  Peer p = coordinator_->peers().front();
  EXPECT_EQ(p.kind, Peer::Kind::kNode) << "the agent proves its node with its certificate";
  EXPECT_EQ(p.name, kNode);
  EXPECT_TRUE(PollUntil([] { return agent_->connected(); }));
}

TEST_F(AgentTest, HeartbeatsFollowTheIntervalTheCoordinatorSet) {
  Barrier();  // registered, and the worker runs
  auto is_heartbeat = [](const FakeCoordinator::Received& m) { return m.msg.has_heartbeat(); };
  // The first heartbeat of a session may have gone out before Registered set the
  // interval (at the 1 s default); after one more, the coordinator's interval rules.
  size_t from = coordinator_->count();
  clock_->AdvanceMs(1000);
  ASSERT_TRUE(coordinator_->WaitFor(is_heartbeat, from));
  from = coordinator_->count();
  clock_->AdvanceMs(kHeartbeatMs);
  auto hb = coordinator_->WaitFor(is_heartbeat, from);
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->msg.heartbeat().time_ms(), clock_->NowMs());
}

// A launch does its slow work (user, directories, cgroups, fork and exec) outside the
// agent's lock: while one is stuck in it, heartbeats go out, their acks are handled, and
// other launches and commands proceed. Under the lock, no heartbeat would go out at all.
TEST_F(AgentTest, HeartbeatsAndOtherLaunchesGoOnWhileALaunchIsStuckStarting) {
  Barrier();
  OpenOnExit open{spawner_};
  spawner_->Close(GateSpawner::Hold::kBeforeFork, 740);
  Launch(740, {"sleep", "60"});
  ASSERT_TRUE(spawner_->WaitForWaiting(1));
  auto is_heartbeat = [](const FakeCoordinator::Received& m) { return m.msg.has_heartbeat(); };
  for (int i = 0; i < 3; ++i) {
    size_t from = coordinator_->count();
    int acks = observer_->acks();
    clock_->AdvanceMs(kHeartbeatMs);
    ASSERT_TRUE(coordinator_->WaitFor(is_heartbeat, from)) << "no heartbeat while launching";
    ASSERT_TRUE(PollUntil([&] { return observer_->acks() > acks; })) << "its ack was not handled";
  }
  EXPECT_TRUE(agent_->IsLive(740, 1)) << "an attempt being started counts as live";
  EXPECT_TRUE(Reports(740).empty()) << "nothing is reported before its processes run";

  // A registration meanwhile leaves it out (the coordinator resends its launch), and the
  // resent launch starts nothing twice.
  int before = coordinator_->session();
  coordinator_->DropStream();
  auto reg = coordinator_->WaitFor(
      [&](const auto& m) { return m.session > before && m.msg.has_register_(); });
  ASSERT_TRUE(reg);
  for (const auto& a : reg->msg.register_().attempts()) EXPECT_NE(a.job_id(), 740u);
  ASSERT_TRUE(coordinator_->Push(LaunchCommand(740, {"sleep", "60"})));

  // Told to stop while it starts: applied once it has started.
  ASSERT_TRUE(coordinator_->Push(KillCommand(740, SIGTERM, /*grace_seconds=*/30)));
  Barrier();  // another launch, on another worker, starts and reports meanwhile
  EXPECT_TRUE(Reports(740).empty());
  spawner_->Open();
  auto end = WaitEnd(740);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->phase(), v1::AttemptReport::PHASE_EXITED);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(end->term_signal(), SIGKILL) << "nothing to lose yet: killed at once";
  EXPECT_TRUE(PollUntil([] { return !agent_->IsLive(740, 1); }));
}

// Exits of processes that end before their launch is committed are kept, not lost.
// What the agent sends is written outside its lock: while a write to the coordinator is
// stuck (a coordinator slow to read), launches start and commands are handled; what was
// queued meanwhile follows in order once the write goes through. Written under the lock,
// the stuck heartbeat would hold the launch and the kill until the gate opened.
TEST_F(AgentTest, AStuckWriteToTheCoordinatorHoldsUpNothingElse) {
  Barrier();
  OpenLinkOnExit open{link_};
  link_->HoldWrites();
  clock_->AdvanceMs(kHeartbeatMs);  // a heartbeat is due: its write is held
  ASSERT_TRUE(link_->WaitForHeldWrite());
  Launch(742, {"sh", "-c", "echo started; exec sleep 60"});
  // Committed, not only spawned (its output can come first): a stop now is a kill of a
  // running attempt, not of one still starting.
  EXPECT_TRUE(PollUntil([] { return observer_->started(742); }))
      << "the launch waited for the stuck write";
  EXPECT_TRUE(PollUntil(
      [] { return ReadFile(agent_->LogPath(742, 1)).find("started") != std::string::npos; }));
  ASSERT_TRUE(coordinator_->Push(KillCommand(742, SIGTERM, /*grace_seconds=*/30)));
  EXPECT_TRUE(PollUntil([] { return !agent_->IsLive(742, 1); }))
      << "the kill waited for the stuck write";
  EXPECT_TRUE(agent_->connected());
  EXPECT_TRUE(Reports(742).empty()) << "nothing is written while the write is stuck";

  link_->OpenWrites();
  auto end = WaitEnd(742);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(end->term_signal(), SIGTERM);
  std::vector<v1::AttemptReport> reports = Reports(742);
  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.front().phase(), v1::AttemptReport::PHASE_RUNNING) << "in order";
  EXPECT_EQ(reports.back().phase(), v1::AttemptReport::PHASE_EXITED);
}

// The worker that sends heartbeats hands slow effects to another thread: here an ended
// attempt's output drain, which waits (2 s) for a process that escaped its group and still
// holds the output open. A heartbeat due meanwhile goes out before the end's report; were
// the drain on the worker, the heartbeat would wait for it and come after.
TEST_F(AgentTest, HeartbeatsGoOutWhileAnEndedAttemptsOutputDrains) {
  Barrier();
  int exits = spawner_->exits();
  // The rank ends once its child has left the group (as a daemonizing tool would).
  Launch(745, {"sh", "-c",
               "setsid sh -c 'touch \"$TMPDIR/escaped\"; exec sleep 4' & "
               "while [ ! -e \"$TMPDIR/escaped\" ]; do sleep 0.01; done; exit 0"});
  ASSERT_TRUE(WaitReport(745, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(spawner_->WaitForExits(exits + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the worker saw the exit
  EXPECT_TRUE(agent_->IsLive(745, 1)) << "its output is still being drained";
  size_t from = coordinator_->count();
  clock_->AdvanceMs(kHeartbeatMs);
  auto is_heartbeat = [](const FakeCoordinator::Received& m) { return m.msg.has_heartbeat(); };
  ASSERT_TRUE(coordinator_->WaitFor(is_heartbeat, from));
  ASSERT_TRUE(WaitEnd(745));
  std::vector<FakeCoordinator::Received> got = coordinator_->received();
  size_t heartbeat = got.size(), end = got.size();
  for (size_t i = from; i < got.size(); ++i) {
    if (got[i].msg.has_heartbeat() && heartbeat == got.size()) heartbeat = i;
    if (got[i].msg.has_report() && got[i].msg.report().job_id() == 745 &&
        got[i].msg.report().phase() == v1::AttemptReport::PHASE_EXITED && end == got.size()) {
      end = i;
    }
  }
  EXPECT_LT(heartbeat, end) << "the heartbeat waited for the drain";
}

TEST_F(AgentTest, ARankThatEndsBeforeItsLaunchIsCommittedIsReported) {
  Barrier();
  OpenOnExit open{spawner_};
  int exits = spawner_->exits();
  spawner_->Close(GateSpawner::Hold::kAfterFork, 741);
  Launch(741, {"sh", "-c", "exit 3"});
  ASSERT_TRUE(spawner_->WaitForWaiting(1));
  ASSERT_TRUE(spawner_->WaitForExits(exits + 1)) << "the rank ran and ended at the gate";
  spawner_->Open();
  auto end = WaitReport(741, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end) << "its exit, seen while it was launching, was dropped";
  EXPECT_EQ(end->exit_code(), 3);
  auto reports = Reports(741);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].phase(), v1::AttemptReport::PHASE_RUNNING);
}

// A launch stopped while it waits for a launch worker starts nothing at all.
TEST_F(AgentTest, ALaunchStoppedBeforeAWorkerTakesItStartsNothing) {
  Barrier();
  OpenOnExit open{spawner_};
  const int workers = AgentOptions().launch_workers;
  spawner_->Close(GateSpawner::Hold::kBeforeFork, 750, /*span=*/20);
  for (int i = 0; i < workers; ++i) Launch(750 + i, {"sleep", "60"});
  ASSERT_TRUE(spawner_->WaitForWaiting(workers)) << "every launch worker is busy";
  int spawns = spawner_->spawns();
  Launch(760, {"sleep", "60"});  // queued
  ASSERT_TRUE(coordinator_->Push(KillCommand(760, SIGKILL, 0)));
  for (int i = 0; i < workers; ++i) {
    ASSERT_TRUE(coordinator_->Push(KillCommand(750 + i, SIGKILL, 0)));
  }
  auto end = WaitEnd(760);  // while every worker is still busy
  spawner_->Open();
  ASSERT_TRUE(end);
  EXPECT_EQ(end->phase(), v1::AttemptReport::PHASE_EXITED);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(spawner_->spawns(), spawns) << "job 760 spawned nothing";
  EXPECT_FALSE(std::filesystem::exists(dir_->path() + "/jobs/760/1"));
  for (int i = 0; i < workers; ++i) ASSERT_TRUE(WaitEnd(750 + i));
}

TEST_F(AgentTest, LaunchReportsRunningThenExitedWithTheExitCode) {
  Launch(1, {"sh", "-c", "echo hi; exit 4"});
  auto end = WaitReport(1, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 4);
  EXPECT_EQ(end->term_signal(), 0);
  EXPECT_FALSE(end->killed());
  EXPECT_THAT(end->message(), HasSubstr("code 4"));
  EXPECT_EQ(end->checkpoint_step(), -1);
  auto reports = Reports(1);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].phase(), v1::AttemptReport::PHASE_RUNNING);
  EXPECT_EQ(reports[0].time_ms(), clock_->NowMs());
  EXPECT_EQ(ReadFile(agent_->LogPath(1, 1)), "[rank 0] hi\n") << "lines carry their rank";
  EXPECT_FALSE(agent_->IsLive(1, 1));
}

TEST_F(AgentTest, CheckpointProgressTravelsWithTheReports) {
  // What libbaton_checkpoint's rank 0 writes (checkpoint/FORMAT.md, "Progress file").
  std::string note = R"({"attempt":1,"state":"committed","step":42,"committed_step":42,)"
                     R"("time_ms":1700000001234})";
  Launch(40, {"sh", "-c",
              "printf '%s\\n' '" + note + "' > \"$BATON_PROGRESS_FILE\"; echo ready; sleep 60"});
  ASSERT_TRUE(WaitForLog(40, "ready"));
  clock_->AdvanceMs(600);  // the agent reads progress notes every 500 ms
  auto r = coordinator_->WaitFor([](const FakeCoordinator::Received& m) {
    return m.msg.has_report() && m.msg.report().job_id() == 40 &&
           m.msg.report().checkpoint_step() == 42;
  });
  ASSERT_TRUE(r) << "a running attempt's committed step is reported";
  EXPECT_EQ(r->msg.report().phase(), v1::AttemptReport::PHASE_RUNNING);
  EXPECT_TRUE(r->msg.report().reports_progress()) << "the job reports progress";
  EXPECT_EQ(r->msg.report().checkpoint_time_ms(), 1700000001234) << "when it was committed";
  ASSERT_TRUE(coordinator_->Push(KillCommand(40, SIGKILL, 0)));
  auto end = WaitEnd(40);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->checkpoint_step(), 42) << "and it stays on the end report";
}

TEST_F(AgentTest, ProgressWrittenJustBeforeExitIsInTheEndReport) {
  std::string note =
      R"({"attempt":1,"state":"committed","step":7,"committed_step":7,"time_ms":1700000000777})";
  Launch(41, {"sh", "-c", "printf '%s\\n' '" + note + "' > \"$BATON_PROGRESS_FILE\""});
  auto end = WaitEnd(41);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 0);
  EXPECT_EQ(end->checkpoint_step(), 7);
  EXPECT_EQ(end->checkpoint_time_ms(), 1700000000777) << "read at the end, it still says when";
  EXPECT_TRUE(end->reports_progress());
  // A job that writes no note: its checkpoint is unknown, not "none".
  Launch(42, {"true"});
  auto plain = WaitEnd(42);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->reports_progress());
}

// A job is hostile code: it makes its progress note a FIFO (a blocking read would wedge
// the worker: no heartbeats, the node lost), a link to /dev/zero, or a gigabyte. The
// agent keeps heartbeating, the job keeps running, and its report says what was wrong.
TEST_F(AgentTest, HostileProgressNotesNeitherWedgeTheAgentNorStopTheJob) {
  struct Attack {
    uint64_t job;
    const char* make;
    const char* said;
  } attacks[] = {
      {50, "mkfifo \"$P\" && test -p \"$P\" && echo is-a-fifo", "(a FIFO)"},
      {51, "ln -s /dev/zero \"$P\" && test -L \"$P\" && echo is-a-link", "symbolic link"},
      {52, "truncate -s 1G \"$P\" && echo is-huge", "is 1Gi, above the 64Ki read"},
  };
  for (const Attack& a : attacks) {
    Launch(a.job, {"sh", "-c",
                   std::string("P=\"$BATON_PROGRESS_FILE\"; rm -f \"$P\"; ") + a.make +
                       " && echo ready; exec sleep 60"});
    ASSERT_TRUE(WaitForLog(a.job, "ready")) << ReadFile(agent_->LogPath(a.job, 1));
  }
  for (const Attack& a : attacks) {
    size_t from = coordinator_->count();
    clock_->AdvanceMs(600);  // the agent reads progress notes every 500 ms
    auto said = coordinator_->WaitFor([&](const FakeCoordinator::Received& m) {
      return m.msg.has_report() && m.msg.report().job_id() == a.job &&
             m.msg.report().message().find(a.said) != std::string::npos;
    });
    ASSERT_TRUE(said) << "job " << a.job << ": the report names the problem";
    EXPECT_EQ(said->msg.report().phase(), v1::AttemptReport::PHASE_RUNNING);
    EXPECT_THAT(said->msg.report().message(), HasSubstr("progress note ignored"));
    auto hb = coordinator_->WaitFor(
        [](const FakeCoordinator::Received& m) { return m.msg.has_heartbeat(); }, from);
    ASSERT_TRUE(hb) << "job " << a.job << ": the agent still heartbeats";
  }
  for (const Attack& a : attacks) {
    EXPECT_TRUE(agent_->IsLive(a.job, 1)) << "the job runs on";
    ASSERT_TRUE(coordinator_->Push(KillCommand(a.job, SIGKILL, 0)));
    ASSERT_TRUE(WaitEnd(a.job));
  }
}

// MASTER_PORT held by something else on the node: a clear launch error, not a job that
// fails minutes later in its rendezvous.
TEST_F(AgentTest, AMasterPortHeldOnTheNodeIsALaunchError) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  uint32_t port = ntohs(addr.sin_port);
  v1::CoordinatorCommand cmd = LaunchCommand(53, {"true"});
  cmd.mutable_launch()->set_master_port(port);
  ASSERT_TRUE(coordinator_->Push(cmd));
  auto end = WaitEnd(53);
  close(fd);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->phase(), v1::AttemptReport::PHASE_REJECTED);
  EXPECT_THAT(end->message(),
              HasSubstr("MASTER_PORT: port " + std::to_string(port) + " is already in use"));
  // The same launch on a node where the port is free runs.
  cmd = LaunchCommand(54, {"true"});
  cmd.mutable_launch()->set_master_port(port);
  ASSERT_TRUE(coordinator_->Push(cmd));
  auto ok = WaitEnd(54);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->phase(), v1::AttemptReport::PHASE_EXITED);
  EXPECT_EQ(ok->exit_code(), 0);
}

TEST_F(AgentTest, RanksGetTheirEnvironmentAndShareTheLog) {
  Launch(2,
         {"sh", "-c",
          "echo rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE gpus=$CUDA_VISIBLE_DEVICES "
          "job=$BATON_JOB_ID cwd=$(pwd -P)"},
         /*ranks=*/2, {"GPU-fake-node-t-1"});
  auto end = WaitReport(2, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 0);
  std::string jobdir = dir_->path() + "/jobs/2/1/work";  // the job's own dir
  std::string log = ReadFile(agent_->LogPath(2, 1));
  EXPECT_THAT(log, HasSubstr("[rank 0] rank=0 local=0 world=2 gpus=GPU-fake-node-t-1 job=2 cwd=" +
                             jobdir + "\n"));
  EXPECT_THAT(log, HasSubstr("[rank 1] rank=1 local=1 world=2 gpus=GPU-fake-node-t-1 job=2 cwd=" +
                             jobdir + "\n"));
}

TEST_F(AgentTest, CommandIsFoundOnThePathTheSpecSets) {
  // A job's own PATH (a venv, a conda env) decides which program argv[0] names.
  std::string bin = dir_->path() + "/venv/bin";
  launcher_testing::WriteFile(bin + "/baton-venv-tool", "#!/bin/sh\necho from the venv\n");
  std::filesystem::permissions(bin + "/baton-venv-tool", std::filesystem::perms::owner_all);
  v1::CoordinatorCommand cmd = LaunchCommand(16, {"baton-venv-tool"});
  (*cmd.mutable_launch()->mutable_spec()->mutable_env())["PATH"] = bin + ":/usr/bin:/bin";
  ASSERT_TRUE(coordinator_->Push(cmd));
  auto end = WaitEnd(16);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->phase(), v1::AttemptReport::PHASE_EXITED) << end->message();
  EXPECT_EQ(end->exit_code(), 0);
  EXPECT_EQ(ReadFile(agent_->LogPath(16, 1)), "[rank 0] from the venv\n");
}

TEST_F(AgentTest, OneFailingRankStopsTheOthersOnTheNode) {
  Launch(3, {"sh", "-c", "if [ \"$LOCAL_RANK\" = 1 ]; then exit 3; fi; exec sleep 60"},
         /*ranks=*/2);
  auto end = WaitReport(3, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 3);
  EXPECT_EQ(end->term_signal(), 0);
  EXPECT_FALSE(end->killed()) << "not stopped by the coordinator";
  EXPECT_THAT(end->message(), HasSubstr("exited with code 3"));
}

TEST_F(AgentTest, KillWithSigtermStopsTheAttempt) {
  Launch(4, {"sleep", "60"});
  ASSERT_TRUE(WaitReport(4, v1::AttemptReport::PHASE_RUNNING));
  EXPECT_TRUE(agent_->IsLive(4, 1));
  ASSERT_TRUE(coordinator_->Push(KillCommand(4, SIGTERM, /*grace_seconds=*/30)));
  auto end = WaitReport(4, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(end->term_signal(), SIGTERM);
  EXPECT_FALSE(agent_->IsLive(4, 1));
}

TEST_F(AgentTest, KillEscalatesToSigkillWhenTheGraceRunsOut) {
  Launch(5, {"sh", "-c", "trap '' TERM; echo ready; exec sleep 60"});
  ASSERT_TRUE(WaitForLog(5, "ready"));
  ASSERT_TRUE(coordinator_->Push(KillCommand(5, SIGTERM, /*grace_seconds=*/30)));
  Barrier();
  EXPECT_TRUE(agent_->IsLive(5, 1)) << "it ignores SIGTERM";
  clock_->AdvanceMs(30'000);
  auto end = WaitReport(5, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(end->term_signal(), SIGKILL);
}

TEST_F(AgentTest, KillWithoutGraceIsImmediateSigkill) {
  Launch(6, {"sh", "-c", "trap '' TERM; echo ready; exec sleep 60"});
  ASSERT_TRUE(WaitForLog(6, "ready"));
  ASSERT_TRUE(coordinator_->Push(KillCommand(6, SIGTERM, /*grace_seconds=*/0)));
  auto end = WaitReport(6, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->term_signal(), SIGKILL);
}

TEST_F(AgentTest, PreemptSignalsTheRanksToCheckpoint) {
  Launch(7, {"sh", "-c",
             "trap 'echo got-usr1; exit 0' USR1; echo ready; while :; do sleep 0.05; done"});
  ASSERT_TRUE(WaitForLog(7, "ready"));
  v1::CoordinatorCommand cmd;
  cmd.mutable_preempt()->set_job_id(7);
  cmd.mutable_preempt()->set_attempt(1);
  cmd.mutable_preempt()->set_deadline_ms(clock_->NowMs() + 60'000);
  ASSERT_TRUE(coordinator_->Push(cmd));
  auto end = WaitReport(7, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 0);
  EXPECT_EQ(end->term_signal(), 0);
  EXPECT_TRUE(end->killed());
  EXPECT_THAT(ReadFile(agent_->LogPath(7, 1)), HasSubstr("got-usr1"));
}

TEST_F(AgentTest, LeftoverProcessesOfTheGroupDieWithTheAttempt) {
  Launch(8, {"sh", "-c", "sleep 60 & echo $! > bg.pid; exit 0"});
  auto end = WaitReport(8, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 0);
  std::string pid = ReadFile(dir_->path() + "/jobs/8/1/work/bg.pid");
  ASSERT_FALSE(pid.empty());
  pid.pop_back();
  EXPECT_TRUE(PollUntil([&] {
    std::string stat = ReadFile("/proc/" + pid + "/stat");
    size_t paren = stat.rfind(')');
    return stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
  })) << "background process "
      << pid << " outlived its attempt";
}

TEST_F(AgentTest, AShareRunsUnderItsPoolsMpsDaemonWhichStopsAfterTheLastShare) {
  // Two shares of the pool GPU: one daemon, the server's limits their sum, each client's
  // environment its own share; the daemon quits after the second ends.
  auto share = [](uint64_t job, uint32_t percent, uint64_t gib, const std::string& command) {
    v1::CoordinatorCommand cmd =
        LaunchCommand(job, {"sh", "-c", command}, 1, {"GPU-fake-node-t-2"});
    cmd.mutable_launch()->mutable_spec()->set_gpu_share_percent(percent);
    cmd.mutable_launch()->mutable_spec()->set_gpu_memory_bytes(gib << 30);
    return cmd;
  };
  const std::string pool = dir_->path() + "/mps/GPU-fake-node-t-2";
  ASSERT_TRUE(coordinator_->Push(share(
      320, 25, 20,
      "echo pipe=$CUDA_MPS_PIPE_DIRECTORY pct=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
      "mem=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT gpus=$CUDA_VISIBLE_DEVICES; echo ready; sleep 30")));
  ASSERT_TRUE(WaitForLog(320, "ready"));
  ASSERT_TRUE(coordinator_->Push(share(321, 50, 10, "echo ready; sleep 30")));
  ASSERT_TRUE(WaitForLog(321, "ready"));
  EXPECT_THAT(ReadFile(agent_->LogPath(320, 1)),
              HasSubstr("pipe=" + pool + "/pipe pct=25 mem=0=20480M gpus=GPU-fake-node-t-2"));
  std::string control = ReadFile(pool + "/log/fake-control.log");
  EXPECT_EQ(control.find("start gpu=GPU-fake-node-t-2"), 0u) << control;
  EXPECT_EQ(control.find("start", 1), std::string::npos) << "one daemon for both: " << control;
  EXPECT_THAT(control, HasSubstr("set_default_active_thread_percentage 75\n"));
  EXPECT_THAT(control, HasSubstr("set_default_device_pinned_mem_limit 0 30720M\n"));
  for (uint64_t job : {320, 321}) {
    ASSERT_TRUE(coordinator_->Push(KillCommand(job, SIGKILL, 0)));
    ASSERT_TRUE(WaitReport(job, v1::AttemptReport::PHASE_EXITED));
  }
  EXPECT_TRUE(PollUntil([&] {
    return ReadFile(pool + "/log/fake-control.log").find("quit\n") != std::string::npos;
  })) << ReadFile(pool + "/log/fake-control.log");
}

TEST_F(AgentTest, AShareOfAGpuThatIsNoPoolIsRejectedNamingIt) {
  v1::CoordinatorCommand cmd = LaunchCommand(322, {"true"}, 1, {"GPU-fake-node-t-0"});
  cmd.mutable_launch()->mutable_spec()->set_gpu_share_percent(25);
  cmd.mutable_launch()->mutable_spec()->set_gpu_memory_bytes(1ull << 30);
  ASSERT_TRUE(coordinator_->Push(cmd));
  auto end = WaitReport(322, v1::AttemptReport::PHASE_REJECTED);
  ASSERT_TRUE(end);
  EXPECT_THAT(end->message(), HasSubstr("MPS: a 25% share of GPU 'GPU-fake-node-t-0', which this "
                                        "node does not offer as an MPS pool"));
}

TEST_F(AgentTest, LaunchNamingAnUnknownGpuIsRejected) {
  Launch(10, {"true"}, 1, {"GPU-not-here"});
  auto end = WaitReport(10, v1::AttemptReport::PHASE_REJECTED);
  ASSERT_TRUE(end);
  EXPECT_THAT(end->message(), HasSubstr("GPU-not-here"));
  EXPECT_NE(end->exit_code(), 0);
  EXPECT_EQ(Reports(10).size(), 1u) << "nothing ran, so nothing else to report";
}

TEST_F(AgentTest, LaunchOfAMissingProgramIsRejectedNamingIt) {
  Launch(11, {"baton-no-such-program"}, /*ranks=*/2);
  auto end = WaitReport(11, v1::AttemptReport::PHASE_REJECTED);
  ASSERT_TRUE(end);
  EXPECT_THAT(end->message(), HasSubstr("baton-no-such-program"));
}

TEST_F(AgentTest, MissingWorkingDirIsRejectedNamingIt) {
  v1::CoordinatorCommand cmd = LaunchCommand(14, {"true"});
  cmd.mutable_launch()->mutable_spec()->set_working_dir(dir_->path() + "/no/such/dir");
  ASSERT_TRUE(coordinator_->Push(cmd));
  auto end = WaitReport(14, v1::AttemptReport::PHASE_REJECTED);
  ASSERT_TRUE(end);
  EXPECT_THAT(end->message(), HasSubstr(dir_->path() + "/no/such/dir"));
}

TEST_F(AgentTest, WorkingDirFromTheSpecIsUsed) {
  std::filesystem::create_directories(dir_->path() + "/work");
  v1::CoordinatorCommand cmd = LaunchCommand(15, {"pwd", "-P"});
  cmd.mutable_launch()->mutable_spec()->set_working_dir(dir_->path() + "/work");
  ASSERT_TRUE(coordinator_->Push(cmd));
  ASSERT_TRUE(WaitReport(15, v1::AttemptReport::PHASE_EXITED));
  EXPECT_EQ(ReadFile(agent_->LogPath(15, 1)), "[rank 0] " + dir_->path() + "/work\n");
}

// An mpi-mode launch for a gang node other than the first starts nothing: mpirun on the
// first node will start Open MPI's daemon here through Exec, which needs the secret.
v1::CoordinatorCommand SecondNodeOfMpiGang(uint64_t job) {
  v1::CoordinatorCommand cmd = LaunchCommand(job, {"true"});
  v1::Launch* l = cmd.mutable_launch();
  l->mutable_spec()->set_launch_mode(v1::LAUNCH_MODE_MPI);
  l->mutable_spec()->set_nodes(2);
  *l->add_placement() = l->placement(0);
  l->mutable_placement(0)->set_node("other-node");
  l->mutable_placement(1)->set_node_rank(1);
  l->set_node_rank(1);
  l->set_exec_secret("s3cret");
  return cmd;
}

v1::ExecRequest ExecOf(uint64_t job, const std::string& secret, const std::string& command) {
  v1::ExecRequest req;
  req.set_job_id(job);
  req.set_attempt(1);
  req.set_secret(secret);
  req.set_command(command);
  return req;
}

TEST_F(AgentTest, MpiGangNodeRunsItsDaemonThroughExecWithTheSecret) {
  ASSERT_TRUE(coordinator_->Push(SecondNodeOfMpiGang(12)));
  ASSERT_TRUE(WaitReport(12, v1::AttemptReport::PHASE_RUNNING)) << "ready for the daemon";
  EXPECT_TRUE(agent_->IsLive(12, 1));
  auto wrong = agent_->StartExec(ExecOf(12, "guess", "true"), 1, 2, {}, [](ExitStatus) {});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kPermissionDenied);
  auto unknown = agent_->StartExec(ExecOf(99999, "s3cret", "true"), 1, 2, {}, [](ExitStatus) {});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kFailedPrecondition);

  int out[2];
  ASSERT_EQ(pipe(out), 0);
  std::atomic<int> code{-1};
  auto pid = agent_->StartExec(ExecOf(12, "s3cret", "echo daemon $BATON_NODE_RANK; exit 3"), out[1],
                               out[1], {}, [&](ExitStatus st) { code = st.exit_code; });
  close(out[1]);
  ASSERT_TRUE(pid.ok()) << pid.status();
  char buf[64] = {};
  ASSERT_GT(read(out[0], buf, sizeof buf - 1), 0);
  close(out[0]);
  EXPECT_STREQ(buf, "daemon 1\n") << "the daemon gets this node's environment";
  auto end = WaitReport(12, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(code.load(), 3) << "the exec stream learns the exit status";
  EXPECT_EQ(end->exit_code(), 3);
  auto late = agent_->StartExec(ExecOf(12, "s3cret", "true"), 1, 2, {}, [](ExitStatus) {});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition) << "attempt ended";
}

// Open MPI's daemon is started outside the agent's lock too: while its spawn is stuck,
// heartbeats go out and commands are handled. A stop that came meanwhile kills it once
// started; a daemon that ends before the agent takes it over is still reported.
TEST_F(AgentTest, AnExecStuckStartingHoldsUpNothingAndAStopMeanwhileKillsIt) {
  ASSERT_TRUE(coordinator_->Push(SecondNodeOfMpiGang(743)));
  ASSERT_TRUE(WaitReport(743, v1::AttemptReport::PHASE_RUNNING));
  OpenOnExit open{spawner_};
  spawner_->Close(GateSpawner::Hold::kBeforeFork, 743);
  std::atomic<int> signal{-1};
  absl::StatusOr<pid_t> pid;
  std::thread exec([&] {
    pid = agent_->StartExec(ExecOf(743, "s3cret", "exec sleep 60"), 1, 2, {},
                            [&](ExitStatus st) { signal = st.term_signal; });
  });
  ASSERT_TRUE(spawner_->WaitForWaiting(1));
  auto is_heartbeat = [](const FakeCoordinator::Received& m) { return m.msg.has_heartbeat(); };
  size_t from = coordinator_->count();
  clock_->AdvanceMs(kHeartbeatMs);
  EXPECT_TRUE(coordinator_->WaitFor(is_heartbeat, from)) << "no heartbeat while exec starts";
  ASSERT_TRUE(coordinator_->Push(KillCommand(743, SIGTERM, /*grace_seconds=*/30)));
  // Commands are handled in order: once a later launch runs, the stop has been taken in,
  // while the exec is still held (without this, the stop could land after the start).
  Barrier();
  EXPECT_TRUE(agent_->IsLive(743, 1)) << "its daemon is being started";
  spawner_->Open();
  exec.join();
  ASSERT_TRUE(pid.ok()) << pid.status();
  auto end = WaitEnd(743);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(end->term_signal(), SIGKILL) << "stopped while it started: killed at once";
  EXPECT_EQ(signal.load(), SIGKILL) << "the exec stream learns how its daemon ended";

  ASSERT_TRUE(coordinator_->Push(SecondNodeOfMpiGang(744)));
  ASSERT_TRUE(WaitReport(744, v1::AttemptReport::PHASE_RUNNING));
  int exits = spawner_->exits();
  spawner_->Close(GateSpawner::Hold::kAfterFork, 744);
  std::atomic<int> code{-1};
  std::thread quick([&] {
    pid = agent_->StartExec(ExecOf(744, "s3cret", "exit 5"), 1, 2, {},
                            [&](ExitStatus st) { code = st.exit_code; });
  });
  ASSERT_TRUE(spawner_->WaitForExits(exits + 1)) << "it ends before StartExec takes it over";
  spawner_->Open();
  quick.join();
  ASSERT_TRUE(pid.ok()) << pid.status();
  auto quick_end = WaitEnd(744);
  ASSERT_TRUE(quick_end) << "its exit, seen while it started, was dropped";
  EXPECT_EQ(quick_end->exit_code(), 5);
  EXPECT_EQ(code.load(), 5);
}

TEST_F(AgentTest, MpiGangNodeWithoutItsDaemonEndsWhenStopped) {
  ASSERT_TRUE(coordinator_->Push(SecondNodeOfMpiGang(17)));
  ASSERT_TRUE(WaitReport(17, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(coordinator_->Push(KillCommand(17, SIGTERM, 30)));
  auto end = WaitReport(17, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end) << "nothing runs, so the stop ends the attempt at once";
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(
      agent_->StartExec(ExecOf(17, "s3cret", "true"), 1, 2, {}, [](ExitStatus) {}).status().code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST_F(AgentTest, ResentAndStaleLaunchesAreIgnored) {
  ASSERT_TRUE(coordinator_->Push(LaunchCommand(13, {"true"}, 1, {}, /*attempt=*/2)));
  ASSERT_TRUE(WaitReport(13, v1::AttemptReport::PHASE_EXITED));
  ASSERT_TRUE(coordinator_->Push(LaunchCommand(13, {"true"}, 1, {}, /*attempt=*/2)));  // resent
  ASSERT_TRUE(coordinator_->Push(LaunchCommand(13, {"true"}, 1, {}, /*attempt=*/1)));  // stale
  Barrier();
  EXPECT_EQ(Reports(13).size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(dir_->path() + "/jobs/13/1"));
}

TEST_F(AgentTest, ReconnectReReportsUnackedAttemptsAndForgetsAckedOnes) {
  Launch(20, {"true"});
  Launch(21, {"sh", "-c", "exit 5"});
  Launch(22, {"sleep", "60"});
  ASSERT_TRUE(WaitReport(20, v1::AttemptReport::PHASE_EXITED));
  ASSERT_TRUE(WaitReport(21, v1::AttemptReport::PHASE_EXITED));
  ASSERT_TRUE(WaitReport(22, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(coordinator_->Push(AckCommand(20)));
  ASSERT_TRUE(coordinator_->Push(AckCommand(22)));  // still running: not to be forgotten
  Barrier();

  int before = coordinator_->session();
  coordinator_->DropStream();
  auto reg = coordinator_->WaitFor(
      [&](const auto& m) { return m.session > before && m.msg.has_register_(); });
  ASSERT_TRUE(reg) << "the agent did not re-register";
  std::map<uint64_t, v1::AttemptReport> attempts;
  for (const auto& a : reg->msg.register_().attempts()) attempts[a.job_id()] = a;
  EXPECT_FALSE(attempts.count(20)) << "acknowledged attempts are forgotten";
  ASSERT_TRUE(attempts.count(21));
  EXPECT_EQ(attempts[21].phase(), v1::AttemptReport::PHASE_EXITED);
  EXPECT_EQ(attempts[21].exit_code(), 5);
  ASSERT_TRUE(attempts.count(22));
  EXPECT_EQ(attempts[22].phase(), v1::AttemptReport::PHASE_RUNNING);

  // The new stream carries commands again.
  ASSERT_TRUE(coordinator_->Push(KillCommand(22, SIGKILL, 0)));
  auto end = WaitReport(22, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->term_signal(), SIGKILL);
}

// --- jobs run as their owners -------------------------------------------------------------

v1::CoordinatorCommand As(v1::CoordinatorCommand cmd, const std::string& user) {
  cmd.mutable_launch()->set_user(user);
  cmd.mutable_launch()->set_allow_root(false);
  return cmd;
}

struct stat Stat(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST_F(AgentTest, AJobRunsAsItsOwnerWithItsGroupsAndNoNewPrivs) {
  if (std::string missing = testing::MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  passwd* alice = getpwnam(testing::kAlice);
  ASSERT_NE(alice, nullptr);
  ASSERT_TRUE(coordinator_->Push(
      As(LaunchCommand(140, {"sh", "-c",
                             "grep -E '^(Uid|Gid|Groups|NoNewPrivs):' /proc/self/status; "
                             "echo user=$USER; touch $TMPDIR/x && echo tmp-ok; pwd -P"}),
         testing::kAlice)));
  auto end = WaitReport(140, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end) << "not even started";
  std::string log = ReadFile(agent_->LogPath(140, 1));
  std::string uid = std::to_string(alice->pw_uid), gid = std::to_string(alice->pw_gid);
  EXPECT_THAT(log, HasSubstr("Uid:\t" + uid + "\t" + uid + "\t" + uid + "\t" + uid + "\n"));
  EXPECT_THAT(log, HasSubstr("Gid:\t" + gid + "\t" + gid + "\t" + gid + "\t" + gid + "\n"));
  EXPECT_THAT(log, HasSubstr("Groups:\t" + gid));
  EXPECT_THAT(log, HasSubstr("NoNewPrivs:\t1"));
  EXPECT_THAT(log, HasSubstr("user=baton-alice"));
  EXPECT_THAT(log, HasSubstr("tmp-ok"));
  std::string dir = dir_->path() + "/jobs/140/1";
  EXPECT_THAT(log, HasSubstr(dir + "/work\n")) << "its working dir is its own";
  EXPECT_EQ(Stat(dir).st_mode & 07777, 0711u) << "the agent's: reached by name, never listed";
  EXPECT_EQ(Stat(dir).st_uid, 0u);
  EXPECT_EQ(Stat(dir + "/work").st_uid, alice->pw_uid);
  EXPECT_EQ(Stat(dir + "/work").st_mode & 07777, 0700u);
  EXPECT_EQ(Stat(dir + "/attempt.pb").st_mode & 07777, 0600u) << "it holds the exec secret";
  EXPECT_EQ(Stat(dir + "/output.log").st_mode & 07777, 0600u);
}

TEST_F(AgentTest, RootJobsNeedThePolicysLeaveAndUnknownUsersAreRefused) {
  ASSERT_TRUE(coordinator_->Push(As(LaunchCommand(141, {"true"}), "root")));
  auto root = WaitReport(141, v1::AttemptReport::PHASE_REJECTED);
  ASSERT_TRUE(root);
  EXPECT_THAT(root->message(), HasSubstr("tenants[].allow_root"));
  ASSERT_TRUE(coordinator_->Push(As(LaunchCommand(145, {"true"}), "baton-nobody-here")));
  auto unknown = WaitReport(145, v1::AttemptReport::PHASE_REJECTED);
  ASSERT_TRUE(unknown);
  EXPECT_THAT(unknown->message(), HasSubstr("user 'baton-nobody-here' is unknown on node node-t"));
}

TEST_F(AgentTest, AnotherUsersJobCannotReadThisAttemptsFilesNorSignalItsProcesses) {
  if (std::string missing = testing::MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  v1::CoordinatorCommand victim =
      As(LaunchCommand(142, {"sh", "-c",
                             "echo '{\"state\":\"saving\",\"step\":3}' > $BATON_PROGRESS_FILE; "
                             "echo $$ > $BATON_JOB_DIR/pid; echo ready; exec sleep 60"}),
         testing::kAlice);
  victim.mutable_launch()->set_exec_secret("alice-secret-0123456789");
  ASSERT_TRUE(coordinator_->Push(victim));
  ASSERT_TRUE(WaitForLog(142, "ready"));
  std::string a = dir_->path() + "/jobs/142/1";
  std::string pid = ReadFile(a + "/work/pid");
  ASSERT_FALSE(pid.empty());
  pid.pop_back();
  std::string probe;
  for (const std::string& f : {a + "/attempt.pb", a + "/output.log", a + "/work/progress.json",
                               "/proc/" + pid + "/environ"}) {
    probe += "cat " + f + " >/dev/null 2>&1 && echo READ " + f + " || echo DENIED " + f + "; ";
  }
  probe += "grep -a alice-secret /proc/" + pid + "/environ " + a + "/attempt.pb 2>/dev/null; ";
  probe += "kill -0 " + pid + " 2>/dev/null && echo SIGNALLED || echo NO-SIGNAL; ";
  probe += "kill -USR1 " + pid + " 2>/dev/null && echo SIGNALLED || echo NO-SIGNAL; ";
  probe += "ls " + a + " >/dev/null 2>&1 && echo LISTED || echo NOT-LISTED; echo probed";
  ASSERT_TRUE(coordinator_->Push(As(LaunchCommand(143, {"sh", "-c", probe}), testing::kBob)));
  ASSERT_TRUE(WaitReport(143, v1::AttemptReport::PHASE_EXITED));
  std::string log = ReadFile(agent_->LogPath(143, 1));
  ASSERT_THAT(log, HasSubstr("probed"));
  EXPECT_THAT(log, Not(HasSubstr("READ "))) << log;
  EXPECT_THAT(log, Not(HasSubstr("alice-secret"))) << log;
  EXPECT_THAT(log, Not(HasSubstr("SIGNALLED"))) << log;
  EXPECT_THAT(log, HasSubstr("NOT-LISTED"));
  EXPECT_TRUE(agent_->IsLive(142, 1)) << "the victim runs on";
  ASSERT_TRUE(coordinator_->Push(KillCommand(142, SIGKILL, 0)));
  ASSERT_TRUE(WaitReport(142, v1::AttemptReport::PHASE_EXITED));
}

TEST_F(AgentTest, ExecRunsItsCommandAsTheAttemptsOwner) {
  if (std::string missing = testing::MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  passwd* bob = getpwnam(testing::kBob);
  ASSERT_NE(bob, nullptr);
  ASSERT_TRUE(coordinator_->Push(As(SecondNodeOfMpiGang(144), testing::kBob)));
  ASSERT_TRUE(WaitReport(144, v1::AttemptReport::PHASE_RUNNING));
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  auto pid = agent_->StartExec(ExecOf(144, "s3cret", "id -u; grep NoNewPrivs /proc/self/status"),
                               out[1], out[1], {}, [](ExitStatus) {});
  close(out[1]);
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::string got;
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  close(out[0]);
  EXPECT_EQ(got, std::to_string(bob->pw_uid) + "\nNoNewPrivs:\t1\n")
      << "the secret gives nothing its owner lacks";
  ASSERT_TRUE(WaitReport(144, v1::AttemptReport::PHASE_EXITED));
}

// Losing the coordinator stops nothing at once: past the lease the agent reconnects and
// every attempt runs on; a batch attempt is stopped gracefully (SIGUSR1, then its grace)
// only after its own stop_after_disconnect, a service never; the end is reported on
// reconnect as a stop for want of the coordinator.
TEST_F(AgentTest, LosingTheCoordinatorStopsOnlyWhatOutlivesItsStopAfterDisconnect) {
  v1::CoordinatorCommand batch = LaunchCommand(
      30, {"sh", "-c", "trap 'echo saved; exit 0' USR1; echo ready; while :; do sleep 0.05; done"});
  batch.mutable_launch()->set_stop_after_disconnect_ms(3 * kLeaseMs);
  batch.mutable_launch()->mutable_spec()->set_grace_seconds(30);
  ASSERT_TRUE(coordinator_->Push(batch));
  v1::CoordinatorCommand service = LaunchCommand(31, {"sleep", "600"});
  service.mutable_launch()->set_stop_after_disconnect_ms(0);  // never
  ASSERT_TRUE(coordinator_->Push(service));
  ASSERT_TRUE(WaitReport(31, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(WaitForLog(30, "ready"));
  coordinator_->Shutdown();
  ASSERT_TRUE(PollUntil([] { return !agent_->connected(); }));
  clock_->AdvanceMs(kLeaseMs + 1);
  // The worker ticks every 50 ms: six rounds past the lease, nothing has stopped.
  auto stopped = [](uint64_t job) {
    return PollUntil([job] { return !agent_->IsLive(job, 1); }, std::chrono::milliseconds(300));
  };
  EXPECT_FALSE(stopped(30)) << "past the lease: still running";
  EXPECT_FALSE(stopped(31));
  clock_->AdvanceMs(2 * kLeaseMs);  // past the batch job's stop_after_disconnect
  EXPECT_TRUE(PollUntil([] { return !agent_->IsLive(30, 1); })) << "stopped gracefully";
  EXPECT_THAT(ReadFile(agent_->LogPath(30, 1)), HasSubstr("saved")) << "it got SIGUSR1";
  clock_->AdvanceMs(100 * kLeaseMs);
  EXPECT_FALSE(stopped(31)) << "a service rides out any outage";

  int before = coordinator_->session();
  coordinator_->Start(tls_->server);  // same port
  auto reg = coordinator_->WaitFor(
      [&](const auto& m) { return m.session > before && m.msg.has_register_(); });
  ASSERT_TRUE(reg) << "the agent did not come back";
  bool found = false;
  for (const auto& a : reg->msg.register_().attempts()) {
    if (a.job_id() == 31) {
      EXPECT_EQ(a.phase(), v1::AttemptReport::PHASE_RUNNING);
    }
    if (a.job_id() != 30) continue;
    found = true;
    EXPECT_EQ(a.phase(), v1::AttemptReport::PHASE_EXITED);
    EXPECT_EQ(a.exit_code(), 0) << "it checkpointed and exited";
    EXPECT_TRUE(a.stopped_disconnected());
    EXPECT_THAT(a.message(), HasSubstr("without the coordinator"));
  }
  EXPECT_TRUE(found);
  ASSERT_TRUE(coordinator_->Push(KillCommand(31, SIGKILL, 0)));
  ASSERT_TRUE(WaitReport(31, v1::AttemptReport::PHASE_EXITED));
}

}  // namespace
}  // namespace baton
