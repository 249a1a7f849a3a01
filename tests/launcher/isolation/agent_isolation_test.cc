// The agent with its isolation on, against the real kernel (root; v1 controllers and the
// hybrid cgroup2 tree here): ranks in their attempt's cgroups with the class's limits,
// throttling reported, training narrowed for an inference arrival and widened after, and
// nothing left behind — no cgroup, tc class or nft rule — after success, failure, cancel,
// kill -9 of a job, or kill -9 of the agent and a restart.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/attempt_record.h"
#include "launcher/agent/inventory.h"
#include "launcher/agent/isolation/setup.h"
#include "tests/launcher/fake_coordinator.h"
#include "tests/launcher/isolation/fakes.h"
#include "tests/launcher/isolation/os_env.h"
#include "tests/util/subprocess.h"

namespace baton {
namespace {

using launcher_testing::FakeCoordinator;
using launcher_testing::KillCommand;
using launcher_testing::LaunchCommand;
using launcher_testing::PollUntil;
using launcher_testing::ReadFile;
using launcher_testing::ScratchDir;
using ::testing::HasSubstr;
using testing::RankOn;
using Received = FakeCoordinator::Received;

// A field of a /proc status file, its value trimmed ("" when absent).
std::string StatusField(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::string v = line.substr(key.size() + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

// Every thread of this process (the agent's, in this test) and its Cpus_allowed_list.
std::map<std::string, std::string> ThreadAffinities() {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string a = StatusField(e.path().string() + "/status", "Cpus_allowed_list");
    if (!a.empty()) out[e.path().filename().string()] = a;
  }
  return out;
}

// The Cpus_allowed_list of a process forked now (as the agent forks tc and nft).
std::string ForkedAffinity() {
  FILE* p = popen("grep Cpus_allowed_list: /proc/self/status", "r");
  if (!p) return "";
  char buf[256] = {};
  std::string line = fgets(buf, sizeof buf, p) ? buf : "";
  pclose(p);
  size_t tab = line.find_first_of(" \t");
  if (tab == std::string::npos) return "";
  line.erase(0, line.find_first_not_of(" \t", tab));
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

constexpr int64_t kStatsMs = 1000;

std::string Pid() { return std::to_string(getpid()); }

// A real baton-agent with isolation on that leaves its jobs running when it exits,
// against a fake coordinator of its own: the tests kill -9 it and start it again.
struct KeptAgent {
  KeptAgent(const std::string& name, const std::string& cgroup_top, const ScratchDir& dir,
            const std::string& veth)
      : node(name + Pid()),
        parent(cgroup_top + "/" + name),
        table("baton_" + node),
        data(dir.Sub(name + "-data")),
        tls(dir.Sub("tls-" + name), node),
        nic(veth + std::to_string(getpid() % 1000000)) {
    coordinator.Start(tls.server);
    auto [cert, key] = tls.security.NodeCert(node);
    argv = {std::string(BATON_BIN_DIR) + "/baton-agent",
            "--name",
            node,
            "--coordinator",
            coordinator.address(),
            "--data-dir",
            data,
            "--isolation",
            "v1",
            "--cgroup-parent",
            parent,
            "--nic",
            nic.name(),
            "--nic-rate",
            "1gbit",
            "--keep-jobs-on-exit",
            "--nvml",
            "",
            "--tls-ca",
            tls.security.ca(),
            "--tls-cert",
            cert,
            "--tls-key",
            key};
  }
  ~KeptAgent() {
    if (process) {
      process->Signal(SIGTERM);
      process->Wait(std::chrono::seconds(10));
    }
    coordinator.Shutdown();
    testing::Sh("nft delete table inet " + table + " 2>/dev/null; true");
  }
  // Starts (or restarts) the agent; its output goes to `out`.err/.out.
  void Start(const std::string& out) {
    process =
        std::make_unique<testing::Subprocess>(argv, std::map<std::string, std::string>{}, out);
  }
  void KillNine() {
    process->Signal(SIGKILL);
    process->Wait(std::chrono::seconds(10));
  }

  const std::string node, parent, table, data;
  launcher_testing::FakeCoordinatorTls tls;
  FakeCoordinator coordinator;
  testing::RootVeth nic;
  std::vector<std::string> argv;
  std::unique_ptr<testing::Subprocess> process;
};

v1::CoordinatorCommand Job(uint64_t job, const std::string& cls, uint64_t millis,
                           std::vector<std::string> cmd, const std::string& node) {
  v1::CoordinatorCommand c = LaunchCommand(job, std::move(cmd), 1, {}, 1, node);
  v1::JobSpec* s = c.mutable_launch()->mutable_spec();
  s->set_priority_class(cls);
  s->set_cpu_millis_per_node(millis);
  s->set_memory_bytes_per_node(256 << 20);
  return c;
}

// What is left of an attempt: cgroup dirs, its tc class (not the shared inference class,
// which stays), its nft rule ("" when nothing).
std::string Leftovers(const std::string& parent, const std::string& name, const std::string& nic,
                      const std::string& table, const std::string& class_id) {
  std::string found;
  std::vector<std::string> roots = {"/sys/fs/cgroup/unified"};
  for (const auto& [c, root] : testing::V1Mounts()) roots.push_back(root);
  for (const auto& root : roots) {
    if (std::filesystem::exists(root + "/" + parent + "/" + name))
      found += "cgroup in " + root + "; ";
  }
  // A capped class is on the NIC's IFB (ifb_redirect.h); the NIC is checked too.
  for (const std::string& dev : {nic, IfbNameFor(nic)}) {
    std::string classes = testing::Sh("tc class show dev " + dev + " 2>/dev/null");
    if (!class_id.empty() && class_id != "1:10" &&
        classes.find("htb " + class_id + " ") != std::string::npos) {
      found += "tc class " + class_id + " on " + dev + "; ";
    }
  }
  std::string rules = testing::Sh("nft -a list table inet " + table + " 2>/dev/null || true");
  if (rules.find(name + " ") != std::string::npos) found += "nft rule: " + rules;
  return found;
}

// The network class an attempt's first running report named.
std::string ClassOf(FakeCoordinator& c, uint64_t job) {
  for (const auto& m : c.received()) {
    if (m.msg.has_report() && m.msg.report().job_id() == job &&
        !m.msg.report().isolation().limits().net_class().empty()) {
      return m.msg.report().isolation().limits().net_class();
    }
  }
  return "";
}

class AgentIsolation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::V1Missing().empty() || !testing::HybridHost()) return;
    dir_ = new ScratchDir();
    veth_ = new testing::RootVeth("bta" + std::to_string(getpid() % 1000000));
    if (!veth_->error().empty()) return;
    guard_ = new testing::CgroupTreeGuard("baton-agtest-" + Pid());
    tls_ = new launcher_testing::FakeCoordinatorTls(dir_->path() + "/tls");
    coordinator_ = new FakeCoordinator();
    coordinator_->Start(tls_->server);
    auto inv = ReadInventory(InventoryOptions{.nvml_library = ""});
    ASSERT_TRUE(inv.ok()) << inv.status();
    inventory_ = new v1::Inventory(*inv);
    IsolationOptions io;
    io.mode = "v1";
    io.cgroup_parent = guard_->top() + "/n";
    io.classes.training_may_burst = false;  // quotas at the request: throttling is visible
    io.net =
        NetCapsOptions{.nic = veth_->name(), .nic_mbps = 1000, .table = "baton_agtest" + Pid()};
    auto iso = CreateIsolator(io, launcher_testing::kNode, *inv);
    ASSERT_TRUE(iso.ok()) << iso.status();
    // As the agent's main does: the agent (here, this process) keeps off inference's cores.
    std::vector<uint32_t> cpus;
    for (uint32_t c = 0; c < inv->cpus(); ++c) cpus.push_back(c);
    ASSERT_TRUE((*iso)->ManageSelfAffinity(std::make_shared<SelfAffinity>(cpus, cpus)).ok());
    AgentOptions o;
    o.node_name = launcher_testing::kNode;
    o.coordinator = coordinator_->address();
    o.data_dir = dir_->path();
    o.stats_interval = absl::Milliseconds(kStatsMs);
    o.tls = tls_->agent;
    agent_ = new Agent(o, *inv, clock_, std::move(*iso));
    agent_->Start("127.0.0.1:1");
  }
  static void TearDownTestSuite() {
    if (agent_) agent_->Stop();  // the agent (and its Reaper) stays allocated
    if (coordinator_) coordinator_->Shutdown();
    testing::Sh("nft delete table inet baton_agtest" + Pid() + " 2>/dev/null; true");
    delete tls_;  // stops the test munged
    delete guard_;
    delete veth_;
  }
  void SetUp() override {
    if (std::string why = testing::V1Missing(); !why.empty()) GTEST_SKIP() << why;
    if (!testing::HybridHost()) GTEST_SKIP() << "no cgroup2 tree for the network classes";
    if (!veth_ || !veth_->error().empty()) GTEST_SKIP() << "cannot make a veth pair";
    ASSERT_NE(agent_, nullptr);
  }
  static std::optional<v1::AttemptReport> WaitReport(
      uint64_t job, const std::function<bool(const v1::AttemptReport&)>& pred) {
    auto r = coordinator_->WaitFor([&](const Received& m) {
      return m.msg.has_report() && m.msg.report().job_id() == job && pred(m.msg.report());
    });
    if (!r) return std::nullopt;
    return r->msg.report();
  }
  static std::optional<v1::AttemptReport> WaitPhase(uint64_t job, v1::AttemptReport::Phase p) {
    return WaitReport(job, [p](const v1::AttemptReport& r) { return r.phase() == p; });
  }
  static std::string CgroupFile(const std::string& controller, uint64_t job,
                                const std::string& file) {
    return ReadFile(testing::V1Mounts()[controller] + "/" + guard_->top() + "/n/job-" +
                    std::to_string(job) + "-a1/" + file);
  }
  static std::string Left(uint64_t job) {
    return Leftovers(guard_->top() + "/n", "job-" + std::to_string(job) + "-a1", veth_->name(),
                     "baton_agtest" + Pid(), ClassOf(*coordinator_, job));
  }
  static bool WaitForLog(uint64_t job, const std::string& text) {
    return PollUntil(
        [&] { return ReadFile(agent_->LogPath(job, 1)).find(text) != std::string::npos; });
  }

  static inline ScratchDir* dir_ = nullptr;
  static inline testing::RootVeth* veth_ = nullptr;
  static inline testing::CgroupTreeGuard* guard_ = nullptr;
  static inline FakeCoordinator* coordinator_ = nullptr;
  static inline launcher_testing::FakeCoordinatorTls* tls_ = nullptr;
  static inline v1::Inventory* inventory_ = nullptr;
  static inline FakeClock* clock_ = new FakeClock();
  static inline Agent* agent_ = nullptr;
};

TEST_F(AgentIsolation, RanksSitInTheirAttemptsCgroupsWithTheClassLimits) {
  ASSERT_TRUE(coordinator_->Push(Job(1, "training", 1000,
                                     {"sh", "-c", "cat /proc/self/cgroup; echo ready; sleep 60"},
                                     launcher_testing::kNode)));
  auto running = WaitPhase(1, v1::AttemptReport::PHASE_RUNNING);
  ASSERT_TRUE(running);
  ASSERT_TRUE(WaitForLog(1, "ready"));
  std::string path = "/" + guard_->top() + "/n/job-1-a1\n";
  std::string log = ReadFile(agent_->LogPath(1, 1));
  EXPECT_THAT(log, HasSubstr(":cpu:" + path));
  EXPECT_THAT(log, HasSubstr(":memory:" + path));
  EXPECT_THAT(log, HasSubstr(":cpuset:" + path));
  EXPECT_THAT(log, HasSubstr("0::" + path)) << "the v2 tree classifies its traffic";
  EXPECT_EQ(CgroupFile("memory", 1, "memory.limit_in_bytes"), std::to_string(256 << 20) + "\n");
  EXPECT_EQ(CgroupFile("cpu", 1, "cpu.cfs_quota_us"), "100000\n");
  EXPECT_EQ(CgroupFile("cpu", 1, "cpu.shares"), "1024\n");
  const v1::IsolationLimits& l = running->isolation().limits();
  EXPECT_EQ(l.cgroup(), guard_->top() + "/n/job-1-a1");
  EXPECT_EQ(l.kind(), v1::WORKLOAD_KIND_TRAINING);
  EXPECT_EQ(l.memory_limit_bytes(), 256u << 20);
  EXPECT_EQ(l.net_class(), "1:100");
  EXPECT_EQ(l.net_ceil_mbps(), 700u);
  ASSERT_TRUE(coordinator_->Push(KillCommand(1, SIGKILL, 0)));
  ASSERT_TRUE(WaitPhase(1, v1::AttemptReport::PHASE_EXITED));
  EXPECT_EQ(Left(1), "");
}

TEST_F(AgentIsolation, ABusyJobUnderHalfACpuIsThrottledAndTheReportsSayIt) {
  ASSERT_TRUE(coordinator_->Push(
      Job(2, "training", 500, {"sh", "-c", "while :; do :; done"}, launcher_testing::kNode)));
  ASSERT_TRUE(WaitPhase(2, v1::AttemptReport::PHASE_RUNNING));
  EXPECT_EQ(CgroupFile("cpu", 2, "cpu.cfs_quota_us"), "50000\n");
  std::optional<v1::AttemptReport> throttled;
  EXPECT_TRUE(PollUntil([&] {
    clock_->AdvanceMs(kStatsMs);
    for (const auto& m : coordinator_->received()) {
      if (m.msg.has_report() && m.msg.report().job_id() == 2 &&
          m.msg.report().isolation().stats().nr_throttled() >= 2) {
        throttled = m.msg.report();
        return true;
      }
    }
    return false;
  })) << "no report of throttling";
  if (throttled) {
    EXPECT_GT(throttled->isolation().stats().throttled_us(), 0u);
  }
  ASSERT_TRUE(coordinator_->Push(KillCommand(2, SIGTERM, 0)));
  ASSERT_TRUE(WaitPhase(2, v1::AttemptReport::PHASE_EXITED));
  EXPECT_EQ(Left(2), "");
}

TEST_F(AgentIsolation, InferenceArrivalNarrowsTrainingAndItsDepartureWidensIt) {
  if (inventory_->cpus() < 2) GTEST_SKIP() << "needs two CPUs";
  std::string all = "0-" + std::to_string(inventory_->cpus() - 1) + "\n";
  ASSERT_TRUE(
      coordinator_->Push(Job(3, "training", 2000, {"sleep", "60"}, launcher_testing::kNode)));
  ASSERT_TRUE(WaitPhase(3, v1::AttemptReport::PHASE_RUNNING));
  EXPECT_EQ(CgroupFile("cpuset", 3, "cpuset.cpus"), all);
  v1::CoordinatorCommand inference =
      Job(4, "inference", 1000, {"sh", "-c", "grep Cpus_allowed_list: /proc/self/status; sleep 60"},
          launcher_testing::kNode);
  inference.mutable_launch()->set_kind(v1::WORKLOAD_KIND_INFERENCE);
  ASSERT_TRUE(coordinator_->Push(inference));
  auto inf = WaitPhase(4, v1::AttemptReport::PHASE_RUNNING);
  ASSERT_TRUE(inf);
  std::string mine = CgroupFile("cpuset", 4, "cpuset.cpus");
  std::string last = std::to_string(inventory_->cpus() - 1);
  EXPECT_EQ(mine, last + "\n") << "one exclusive core, from the top";
  EXPECT_TRUE(inf->isolation().limits().exclusive_cpus());
  std::string narrowed = CgroupFile("cpuset", 3, "cpuset.cpus");
  EXPECT_EQ(narrowed.find(last + "\n"), std::string::npos) << narrowed;
  EXPECT_NE(narrowed, all);
  auto report = WaitReport(
      3, [](const v1::AttemptReport& r) { return r.isolation().limits().narrowed_cpus() == 1; });
  EXPECT_TRUE(report) << "the narrowing is reported";
  // The agent's threads (this process's) and what they fork now keep off the inference
  // core; the inference rank itself runs on it alone.
  std::string off = "0-" + std::to_string(inventory_->cpus() - 2);
  if (inventory_->cpus() == 2) off = "0";
  for (const auto& [tid, allowed] : ThreadAffinities()) {
    EXPECT_EQ(allowed, off) << "agent thread " << tid;
  }
  EXPECT_EQ(StatusField("/proc/self/status", "Cpus_allowed_list"), off);
  EXPECT_EQ(ForkedAffinity(), off) << "a helper the agent forks (tc, nft) inherits it";
  EXPECT_TRUE(WaitForLog(4, "Cpus_allowed_list:\t" + last + "\n"))
      << ReadFile(agent_->LogPath(4, 1));
  ASSERT_TRUE(coordinator_->Push(KillCommand(4, SIGKILL, 0)));
  ASSERT_TRUE(WaitPhase(4, v1::AttemptReport::PHASE_EXITED));
  EXPECT_EQ(CgroupFile("cpuset", 3, "cpuset.cpus"), all) << "widened back";
  std::string every = all.substr(0, all.size() - 1);
  for (const auto& [tid, allowed] : ThreadAffinities()) {
    EXPECT_EQ(allowed, every) << "agent thread " << tid << " once inference has left";
  }
  EXPECT_EQ(Left(4), "");
  ASSERT_TRUE(coordinator_->Push(KillCommand(3, SIGKILL, 0)));
  ASSERT_TRUE(WaitPhase(3, v1::AttemptReport::PHASE_EXITED));
}

// What a rank prints of where it runs: "bound LOCAL_RANK CPUS MEMS N", N the mappings
// under a bind memory policy (0: the default policy).
constexpr const char* kWhereAmI =
    "printf 'bound %s %s %s %s\\n' \"$LOCAL_RANK\" "
    "\"$(grep Cpus_allowed_list: /proc/self/status | cut -f2)\" "
    "\"$(grep Mems_allowed_list: /proc/self/status | cut -f2)\" "
    "\"$(grep -c ' bind:' /proc/self/numa_maps)\"";

// Each rank runs where the binding the agent reports says, and the kernel agrees
// (/proc/PID/status, numa_maps): a rank with a charged CPU on exactly it, a rank on a NUMA
// node on that node's CPUs with its memory bound there, a spanning rank on the attempt's
// cpuset with the default memory policy.
TEST_F(AgentIsolation, EachRankRunsWhereItsBindingSays) {
  if (inventory_->cpus() < 2) GTEST_SKIP() << "needs two CPUs";
  if (access("/proc/self/numa_maps", R_OK) != 0) GTEST_SKIP() << "no NUMA support here";
  ASSERT_GT(inventory_->numa_nodes_size(), 0);
  const v1::NumaNode& node = inventory_->numa_nodes(0);
  v1::CoordinatorCommand c =
      Job(12, "training", 1000, {"sh", "-c", std::string(kWhereAmI) + "; sleep 60"},
          launcher_testing::kNode);
  c.mutable_launch()->mutable_spec()->set_ranks_per_node(3);
  v1::NodeAssignment* p = c.mutable_launch()->mutable_placement(0);
  *p->add_ranks() = RankOn(node.id(), {node.cpus(node.cpus_size() - 1)});
  *p->add_ranks() = RankOn(node.id());
  *p->add_ranks() = RankOn(-1);
  ASSERT_TRUE(coordinator_->Push(c));
  auto running = WaitPhase(12, v1::AttemptReport::PHASE_RUNNING);
  ASSERT_TRUE(running);
  const v1::IsolationLimits& l = running->isolation().limits();
  ASSERT_EQ(l.ranks_size(), 3);
  EXPECT_EQ(l.ranks(0).cpus(), std::to_string(node.cpus(node.cpus_size() - 1)));
  EXPECT_EQ(l.ranks(0).mems(), std::to_string(node.id()));
  EXPECT_EQ(l.ranks(1).numa(), node.id());
  EXPECT_EQ(l.ranks(2).numa(), -1);
  EXPECT_EQ(l.ranks(2).cpus(), l.cpus()) << "spanning: the attempt's cpuset";
  for (int r = 0; r < 3; ++r) {
    std::string line =
        "bound " + std::to_string(r) + " " + l.ranks(r).cpus() + " " + l.ranks(r).mems() + " ";
    ASSERT_TRUE(WaitForLog(12, "[rank " + std::to_string(r) + "] " + line))
        << line << "\n"
        << ReadFile(agent_->LogPath(12, 1));
    std::string log = ReadFile(agent_->LogPath(12, 1));
    std::string bound = log.substr(log.find(line) + line.size());
    EXPECT_EQ(bound.substr(0, 2) == "0\n", r == 2)
        << "rank " << r << ": memory bound " << (r == 2 ? "nowhere" : "to its node") << "\n"
        << log;
  }
  ASSERT_TRUE(coordinator_->Push(KillCommand(12, SIGKILL, 0)));
  ASSERT_TRUE(WaitPhase(12, v1::AttemptReport::PHASE_EXITED));
}

// An inference attempt takes the core the scheduler charged (here the lowest, where the
// agent's own pick would take the highest), and its rank runs on it.
TEST_F(AgentIsolation, InferenceRunsOnTheCoresTheSchedulerCharged) {
  if (inventory_->cpus() < 2) GTEST_SKIP() << "needs two CPUs";
  const v1::NumaNode& node = inventory_->numa_nodes(0);
  uint32_t first = node.cpus(0);
  v1::CoordinatorCommand c =
      Job(13, "inference", 1000, {"sh", "-c", std::string(kWhereAmI) + "; sleep 60"},
          launcher_testing::kNode);
  c.mutable_launch()->set_kind(v1::WORKLOAD_KIND_INFERENCE);
  *c.mutable_launch()->mutable_placement(0)->add_ranks() = RankOn(node.id(), {first});
  ASSERT_TRUE(coordinator_->Push(c));
  auto running = WaitPhase(13, v1::AttemptReport::PHASE_RUNNING);
  ASSERT_TRUE(running);
  EXPECT_EQ(CgroupFile("cpuset", 13, "cpuset.cpus"), std::to_string(first) + "\n");
  EXPECT_EQ(running->isolation().limits().ranks(0).cpus(), std::to_string(first));
  EXPECT_TRUE(WaitForLog(
      13, "[rank 0] bound 0 " + std::to_string(first) + " " + std::to_string(node.id()) + " "))
      << ReadFile(agent_->LogPath(13, 1));
  ASSERT_TRUE(coordinator_->Push(KillCommand(13, SIGKILL, 0)));
  ASSERT_TRUE(WaitPhase(13, v1::AttemptReport::PHASE_EXITED));
  EXPECT_EQ(Left(13), "");
}

TEST_F(AgentIsolation, NothingIsLeftAfterSuccessFailureCancelOrKillNineOfTheJob) {
  const std::string node = launcher_testing::kNode;
  ASSERT_TRUE(coordinator_->Push(Job(5, "training", 500, {"true"}, node)));
  ASSERT_TRUE(coordinator_->Push(Job(6, "training", 500, {"sh", "-c", "exit 3"}, node)));
  ASSERT_TRUE(coordinator_->Push(Job(7, "training", 500, {"sleep", "60"}, node)));
  // A rank with a background child, killed with -9 from outside: the child dies too.
  ASSERT_TRUE(coordinator_->Push(Job(
      8, "training", 500, {"sh", "-c", "sleep 60 & echo $$ > rank.pid; echo ready; wait"}, node)));
  ASSERT_TRUE(WaitPhase(7, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(coordinator_->Push(KillCommand(7, SIGTERM, 30)));
  ASSERT_TRUE(WaitForLog(8, "ready"));
  std::string rank = ReadFile(dir_->path() + "/jobs/8/1/work/rank.pid");
  ASSERT_FALSE(rank.empty());
  kill(std::stoi(rank), SIGKILL);
  for (uint64_t job : {5, 6, 7, 8}) ASSERT_TRUE(WaitPhase(job, v1::AttemptReport::PHASE_EXITED));
  // Checked once all have ended: a freed class id is reused by the next attempt.
  for (uint64_t job : {5, 6, 7, 8}) EXPECT_EQ(Left(job), "") << "job " << job;
  EXPECT_EQ(WaitPhase(6, v1::AttemptReport::PHASE_EXITED)->exit_code(), 3);
  EXPECT_EQ(WaitPhase(8, v1::AttemptReport::PHASE_EXITED)->term_signal(), SIGKILL);
}

// A real baton-agent, kill -9'd while two jobs run; one job dies while no agent watches.
// The restarted agent re-adopts the live one and removes everything of the dead one.
TEST_F(AgentIsolation, KillNineOfTheAgentThenRestartReadoptsTheLiveAndCleansTheDead) {
  KeptAgent agent("rs", guard_->top(), *dir_, "btr");
  ASSERT_EQ(agent.nic.error(), "");
  FakeCoordinator& coordinator = agent.coordinator;
  const std::string& parent = agent.parent;
  agent.Start(dir_->Sub("agent1"));
  auto running = [&](uint64_t job) {
    return coordinator.WaitFor([&](const Received& m) {
      return m.msg.has_report() && m.msg.report().job_id() == job &&
             m.msg.report().phase() == v1::AttemptReport::PHASE_RUNNING;
    });
  };
  ASSERT_TRUE(coordinator.Push(Job(10, "training", 500, {"sleep", "60"}, agent.node)));
  ASSERT_TRUE(coordinator.Push(Job(11, "training", 500, {"sleep", "60"}, agent.node)));
  ASSERT_TRUE(running(10));
  ASSERT_TRUE(running(11));
  agent.KillNine();
  std::string procs = testing::V1Mounts()["cpu"] + "/" + parent + "/job-11-a1/cgroup.procs";
  std::string pid = ReadFile(procs);
  ASSERT_FALSE(pid.empty()) << "the job outlives the agent";
  std::istringstream pids(pid);  // the rank and its keeper
  for (int p = 0; pids >> p;) kill(p, SIGKILL);
  ASSERT_TRUE(PollUntil([&] { return ReadFile(procs).empty(); }));
  EXPECT_NE(Leftovers(parent, "job-11-a1", agent.nic.name(), agent.table, ClassOf(coordinator, 11)),
            "")
      << "nothing cleaned it yet";

  int before = coordinator.session();
  agent.Start(dir_->Sub("agent2"));
  auto reg = coordinator.WaitFor(
      [&](const Received& m) { return m.session > before && m.msg.has_register_(); });
  ASSERT_TRUE(reg) << ReadFile(dir_->Sub("agent2.err"));
  std::set<uint64_t> adopted;
  for (const auto& a : reg->msg.register_().attempts()) {
    if (a.phase() == v1::AttemptReport::PHASE_RUNNING) adopted.insert(a.job_id());
  }
  EXPECT_EQ(adopted, std::set<uint64_t>{10});
  EXPECT_EQ(Leftovers(parent, "job-11-a1", agent.nic.name(), agent.table, ClassOf(coordinator, 11)),
            "");
  EXPECT_NE(Leftovers(parent, "job-10-a1", agent.nic.name(), agent.table, ClassOf(coordinator, 10)),
            "")
      << "the live one kept";
  ASSERT_TRUE(coordinator.Push(KillCommand(10, SIGKILL, 0)));
  auto end = coordinator.WaitFor([&](const Received& m) {
    return m.session > before && m.msg.has_report() && m.msg.report().job_id() == 10 &&
           m.msg.report().phase() == v1::AttemptReport::PHASE_EXITED;
  });
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->msg.report().killed());
  EXPECT_EQ(Leftovers(parent, "job-10-a1", agent.nic.name(), agent.table, ClassOf(coordinator, 10)),
            "");
}

// A restarted agent re-adopts from its records, but believes a process group only when
// the attempt's own processes are in it: a ranks record naming another job's group (or
// 1, or 0: job_files_test.cc) must not make "kill this attempt" reach that job.
TEST_F(AgentIsolation, ARestartedAgentSignalsNothingOutsideTheAttemptWhateverItsRecordSays) {
  KeptAgent agent("rk", guard_->top(), *dir_, "btk");
  ASSERT_EQ(agent.nic.error(), "");
  FakeCoordinator& coordinator = agent.coordinator;
  agent.Start(dir_->Sub("rk1"));
  auto phase = [&](uint64_t job, v1::AttemptReport::Phase p, int session) {
    return coordinator.WaitFor([&](const Received& m) {
      return m.session >= session && m.msg.has_report() && m.msg.report().job_id() == job &&
             m.msg.report().phase() == p;
    });
  };
  ASSERT_TRUE(coordinator.Push(Job(20, "training", 500, {"sleep", "60"}, agent.node)));
  ASSERT_TRUE(coordinator.Push(Job(21, "training", 500, {"sleep", "60"}, agent.node)));
  ASSERT_TRUE(phase(20, v1::AttemptReport::PHASE_RUNNING, 0));
  ASSERT_TRUE(phase(21, v1::AttemptReport::PHASE_RUNNING, 0));
  agent.KillNine();
  // Job 20's record now names job 21's process group.
  absl::StatusOr<v1::AgentAttemptRecord> victim = ReadAttemptRecord(agent.data + "/jobs/21/1");
  ASSERT_TRUE(victim.ok()) << victim.status();
  pid_t victim_group = victim->process_group();
  ASSERT_GT(victim_group, 1);
  ASSERT_EQ(kill(-victim_group, 0), 0) << "job 21 runs";
  absl::StatusOr<v1::AgentAttemptRecord> record = ReadAttemptRecord(agent.data + "/jobs/20/1");
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_EQ(record->processes_size(), 1);
  record->set_process_group(victim_group);
  ASSERT_TRUE(WriteAttemptRecord(agent.data + "/jobs/20/1", *record).ok());

  int before = coordinator.session();
  agent.Start(dir_->Sub("rk2"));
  ASSERT_TRUE(coordinator.WaitFor([&](const Received& m) {
    return m.session > before && m.msg.has_register_();
  })) << ReadFile(dir_->Sub("rk2.err"));
  ASSERT_TRUE(coordinator.Push(KillCommand(20, SIGKILL, 0)));
  auto end = phase(20, v1::AttemptReport::PHASE_EXITED, before + 1);
  ASSERT_TRUE(end) << "job 20 still ends: its rank is known by its pid";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(kill(-victim_group, 0), 0) << "job 21's processes were not signalled";
  for (const auto& m : coordinator.received()) {
    if (m.session > before && m.msg.has_report() && m.msg.report().job_id() == 21) {
      EXPECT_NE(m.msg.report().phase(), v1::AttemptReport::PHASE_EXITED) << "job 21 runs on";
    }
  }
  ASSERT_TRUE(coordinator.Push(KillCommand(21, SIGKILL, 0)));
  EXPECT_TRUE(phase(21, v1::AttemptReport::PHASE_EXITED, before + 1));
}

}  // namespace
}  // namespace baton
