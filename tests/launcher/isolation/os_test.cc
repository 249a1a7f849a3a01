// The isolation drivers against the real kernel (root, v1 controllers + the hybrid
// cgroup2 tree here): processes in the expected cgroups with the expected limits, a busy
// process under a 0.5-CPU quota throttled, undo on partial failure, and network counters
// on the job's HTB class between two namespaces.
#include <sched.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/isolation/cgroup_v1.h"
#include "launcher/agent/isolation/device_filter.h"
#include "launcher/agent/isolation/net_caps.h"
#include "launcher/agent/process.h"
#include "tests/launcher/isolation/fakes.h"
#include "tests/launcher/isolation/os_env.h"
#include "tests/launcher/test_util.h"
#include "tests/util/softirqs.h"

namespace baton {
namespace {

using launcher_testing::PollUntil;
using launcher_testing::ReadFile;
using launcher_testing::ScratchDir;
using ::testing::HasSubstr;

// Fails MakeDir for paths containing `needle`; everything else reaches the real files.
class FaultyFs : public RealCgroupFs {
 public:
  explicit FaultyFs(std::string needle) : needle_(std::move(needle)) {}
  absl::Status MakeDir(const std::string& path) override {
    if (path.find(needle_) != std::string::npos) return absl::PermissionDeniedError("injected");
    return RealCgroupFs::MakeDir(path);
  }

 private:
  std::string needle_;
};

// The real files, with every write recorded.
class RecordingFs : public RealCgroupFs {
 public:
  absl::Status Write(const std::string& path, const std::string& value) override {
    writes.push_back(path + "=" + value);
    return RealCgroupFs::Write(path, value);
  }
  std::vector<std::string> writes;
};

class CgroupV1Real : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::V1Missing(); !why.empty()) GTEST_SKIP() << why;
    guard_ = std::make_unique<testing::CgroupTreeGuard>("baton-ostest-" + std::to_string(getpid()));
    driver_ = Make(std::make_shared<RealCgroupFs>());
  }
  // `hybrid`: with the cgroup2 tree (when the host has one); false: pure v1.
  std::unique_ptr<CgroupV1Driver> Make(std::shared_ptr<CgroupFs> fs, bool hybrid = true) {
    bool unified = hybrid && testing::HybridHost();
    return std::make_unique<CgroupV1Driver>(fs, testing::V1Mounts(), guard_->top() + "/n1",
                                            unified ? "/sys/fs/cgroup/unified" : "");
  }
  std::string Dir(const std::string& controller, const std::string& name) {
    return testing::V1Mounts()[controller] + "/" + guard_->top() + "/n1/" + name;
  }
  pid_t Start(const std::vector<std::string>& argv, const std::string& name) {
    SpawnOptions so;
    so.argv = argv;
    so.env = {"PATH=/usr/bin:/bin"};
    so.cwd = "/";
    so.log_path = scratch_.Sub("log");
    so.cgroup_procs = driver_->ProcsFiles(name);
    auto pid = Spawn(so);
    EXPECT_TRUE(pid.ok()) << pid.status();
    return pid.ok() ? *pid : -1;
  }

  // `sh` and two sleeps in `name`'s cgroups; -1 (and a failure) unless all three show up.
  pid_t StartTree(const std::string& name) {
    pid_t pid = Start({"sh", "-c", "sleep 30 & sleep 30 & wait"}, name);
    bool three = pid > 0 && PollUntil([&] {
                   auto pids = driver_->Pids(name);
                   return pids.ok() && pids->size() == 3;
                 });
    EXPECT_TRUE(three) << name;
    return three ? pid : -1;
  }
  // StartTree's `pid` died of SIGKILL, and its sleeps with it.
  void ExpectTreeKilled(pid_t pid, const std::string& name) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    EXPECT_TRUE(PollUntil([&] {
      auto pids = driver_->Pids(name);
      return pids.ok() && pids->empty();
    })) << "the sleeps died with it";
  }

  // Network caps (`mbps`, nft table `table`) on namespace a's end of a fresh veth pair,
  // torn down with it. Null where the host cannot make one (the reason in `*skip`) or the
  // caps fail (a test failure).
  struct NetBed {
    NetBed(const std::string& prefix, int subnet) : ns(prefix, subnet) {}
    ~NetBed() {
      if (caps) (void)caps->TearDown();
    }
    testing::NetnsPair ns;
    std::shared_ptr<testing::NetnsRunner> runner;
    std::unique_ptr<NetCaps> caps;
  };
  static std::unique_ptr<NetBed> MakeNetBed(const std::string& prefix, int subnet, uint64_t mbps,
                                            const std::string& table, std::string* skip) {
    if (!testing::HybridHost()) {
      *skip = "no cgroup2 tree to classify by";
      return nullptr;
    }
    auto bed = std::make_unique<NetBed>(prefix + std::to_string(getpid() % 100000),
                                        subnet + getpid() % 50);
    if (!bed->ns.error().empty()) {
      *skip = "cannot make network namespaces: " + bed->ns.error();
      return nullptr;
    }
    bed->runner = std::make_shared<testing::NetnsRunner>(bed->ns.a());
    auto caps = NetCaps::Create(
        NetCapsOptions{.nic = bed->ns.a(), .nic_mbps = mbps, .table = table}, bed->runner);
    if (!caps.ok()) {
      ADD_FAILURE() << caps.status();
      return nullptr;
    }
    bed->caps = std::move(*caps);
    return bed;
  }

  ScratchDir scratch_;
  std::unique_ptr<testing::CgroupTreeGuard> guard_;
  std::unique_ptr<CgroupV1Driver> driver_;
};

TEST_F(CgroupV1Real, ProcessesJoinEveryHierarchyWithTheLimits) {
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  CgroupLimits l{.cpus = "0",
                 .mems = "0",
                 .cpu_quota_millis = 1500,
                 .cpu_weight = 50,
                 .memory_max_bytes = 64 << 20};
  ASSERT_TRUE(driver_->Apply("job-1-a1", l).ok());
  EXPECT_EQ(ReadFile(Dir("cpu", "job-1-a1") + "/cpu.cfs_quota_us"), "150000\n");
  EXPECT_EQ(ReadFile(Dir("cpu", "job-1-a1") + "/cpu.shares"), "512\n");
  EXPECT_EQ(ReadFile(Dir("cpuset", "job-1-a1") + "/cpuset.cpus"), "0\n");
  EXPECT_EQ(ReadFile(Dir("memory", "job-1-a1") + "/memory.limit_in_bytes"),
            std::to_string(64 << 20) + "\n");
  pid_t pid = Start({"sleep", "30"}, "job-1-a1");
  ASSERT_GT(pid, 0);
  std::string cg = ReadFile("/proc/" + std::to_string(pid) + "/cgroup");
  std::string path = "/" + guard_->top() + "/n1/job-1-a1";
  EXPECT_THAT(cg, HasSubstr(":cpu:" + path + "\n"));
  EXPECT_THAT(cg, HasSubstr(":memory:" + path + "\n"));
  EXPECT_THAT(cg, HasSubstr(":cpuset:" + path + "\n"));
  if (testing::HybridHost()) {
    EXPECT_THAT(cg, HasSubstr("0::" + path + "\n"));
  }
  auto pids = driver_->Pids("job-1-a1");
  ASSERT_TRUE(pids.ok());
  EXPECT_THAT(*pids, ::testing::ElementsAre(pid));
  ASSERT_TRUE(driver_->KillAll("job-1-a1").ok());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_TRUE(driver_->Remove("job-1-a1").ok());
  for (const char* c : {"cpu", "memory", "cpuset"}) {
    EXPECT_FALSE(std::filesystem::exists(Dir(c, "job-1-a1"))) << c;
  }
}

TEST_F(CgroupV1Real, AFreshCpusetTakesItsParentsListsAndAnEmptyLimitWritesThemOut) {
  if (testing::V1Mounts().count("cpuset") == 0) GTEST_SKIP() << "no v1 cpuset mounted";
  std::string parent = testing::V1Mounts()["cpuset"] + "/" + guard_->top() + "/n1";
  ASSERT_TRUE(driver_->Create("job-2-a1").ok());
  std::string cs = Dir("cpuset", "job-2-a1");
  EXPECT_EQ(ReadFile(cs + "/cpuset.cpus"), ReadFile(parent + "/cpuset.cpus"));
  EXPECT_EQ(ReadFile(cs + "/cpuset.mems"), ReadFile(parent + "/cpuset.mems"));
  ASSERT_TRUE(driver_->Apply("job-2-a1", CgroupLimits{.cpus = "0", .mems = "0"}).ok());
  EXPECT_EQ(ReadFile(cs + "/cpuset.cpus"), "0\n");
  ASSERT_TRUE(driver_->Create("job-2-a1").ok()) << "again: keeps what it has";
  EXPECT_EQ(ReadFile(cs + "/cpuset.cpus"), "0\n");
  ASSERT_TRUE(driver_->Apply("job-2-a1", CgroupLimits{}).ok());
  EXPECT_EQ(ReadFile(cs + "/cpuset.cpus"), ReadFile(parent + "/cpuset.cpus"))
      << "v1 has no inherit: the parent's list, written out";
  ASSERT_TRUE(driver_->Remove("job-2-a1").ok());
}

// KillAll freezes a cgroup with processes (nothing forks away mid-kill) and leaves an
// empty one alone: freezing costs the kernel, and an empty cgroup cannot fill again.
TEST_F(CgroupV1Real, KillAllFreezesOnlyACgroupWithProcesses) {
  if (testing::V1Mounts().count("freezer") == 0) GTEST_SKIP() << "no v1 freezer mounted";
  auto fs = std::make_shared<RecordingFs>();
  driver_ = Make(fs, /*hybrid=*/false);  // pure v1: no cgroup.kill, so the freezer is used
  ASSERT_TRUE(driver_->Create("job-5-a1").ok());
  pid_t pid = StartTree("job-5-a1");
  ASSERT_GT(pid, 0);
  fs->writes.clear();
  ASSERT_TRUE(driver_->KillAll("job-5-a1").ok());
  auto froze = [&] {
    return std::count_if(fs->writes.begin(), fs->writes.end(), [](const std::string& w) {
      return w.find("freezer.state=FROZEN") != std::string::npos;
    });
  };
  EXPECT_EQ(froze(), 1) << "processes to kill: frozen first";
  ExpectTreeKilled(pid, "job-5-a1");
  fs->writes.clear();
  ASSERT_TRUE(driver_->KillAll("job-5-a1").ok());
  EXPECT_EQ(froze(), 0) << "an empty cgroup is not frozen";
  ASSERT_TRUE(driver_->Remove("job-5-a1").ok());
}

// With cgroup2's atomic cgroup.kill an attempt needs no freezer cgroup, and without a GPU
// to fence no devices cgroup: its processes join the node's there, and the kill still takes
// a whole forking tree.
TEST_F(CgroupV1Real, WithCgroupKillNoFreezerCgroupAndNoDevicesCgroupUntilAFence) {
  if (!testing::HybridHost()) GTEST_SKIP() << "no cgroup2 tree: no cgroup.kill";
  auto mounts = testing::V1Mounts();
  if (!mounts.count("freezer") || !mounts.count("devices")) {
    GTEST_SKIP() << "no v1 freezer or devices hierarchy mounted";
  }
  ASSERT_TRUE(driver_->Create("job-6-a1").ok());
  if (!std::filesystem::exists("/sys/fs/cgroup/unified/" + guard_->top() + "/n1/cgroup.kill")) {
    GTEST_SKIP() << "this kernel has no cgroup.kill (Linux < 5.14)";
  }
  for (const char* c : {"freezer", "devices"}) {
    EXPECT_FALSE(std::filesystem::exists(Dir(c, "job-6-a1"))) << c;
  }
  EXPECT_TRUE(std::filesystem::exists(Dir("cpu", "job-6-a1")));
  pid_t pid = StartTree("job-6-a1");
  ASSERT_GT(pid, 0);
  std::string cg = ReadFile("/proc/" + std::to_string(pid) + "/cgroup");
  std::string node = "/" + guard_->top() + "/n1";
  EXPECT_THAT(cg, HasSubstr(":freezer:" + node + "\n")) << "the node's, not the agent's";
  EXPECT_THAT(cg, HasSubstr(":devices:" + node + "\n"));
  EXPECT_THAT(cg, HasSubstr(":cpu:" + node + "/job-6-a1\n"));
  ASSERT_TRUE(driver_->KillAll("job-6-a1").ok());
  ExpectTreeKilled(pid, "job-6-a1");
  ASSERT_TRUE(driver_->Remove("job-6-a1").ok());
  EXPECT_FALSE(std::filesystem::exists(Dir("cpu", "job-6-a1")));

  // A fence makes the devices cgroup, and the attempt's processes join that one.
  ASSERT_TRUE(driver_->Create("job-7-a1").ok());
  ASSERT_TRUE(driver_->DenyDevices("job-7-a1", {CharDevice{1, 7}}).ok());
  EXPECT_THAT(driver_->ProcsFiles("job-7-a1"),
              ::testing::Contains(Dir("devices", "job-7-a1") + "/cgroup.procs"));
  ASSERT_TRUE(driver_->Remove("job-7-a1").ok());
  EXPECT_FALSE(std::filesystem::exists(Dir("devices", "job-7-a1")));
}

TEST_F(CgroupV1Real, ABusyProcessUnderHalfACpuIsThrottled) {
  ASSERT_TRUE(driver_->Create("job-2-a1").ok());
  ASSERT_TRUE(driver_->Apply("job-2-a1", CgroupLimits{.cpu_quota_millis = 500}).ok());
  pid_t pid = Start({"sh", "-c", "while :; do :; done"}, "job-2-a1");
  ASSERT_GT(pid, 0);
  CgroupStats st;
  EXPECT_TRUE(PollUntil([&] {
    auto s = driver_->Stats("job-2-a1");
    if (s.ok()) st = *s;
    return st.nr_throttled >= 3;
  })) << "periods "
      << st.nr_periods << ", throttled " << st.nr_throttled;
  EXPECT_GT(st.throttled_us, 0u);
  EXPECT_GT(st.cpu_usage_us, 0u);
  EXPECT_GE(st.nr_periods, st.nr_throttled);
  ASSERT_TRUE(driver_->KillAll("job-2-a1").ok());
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(driver_->Remove("job-2-a1").ok());
}

// Device nodes of two fake GPUs (no driver behind them: an allowed open fails ENXIO, a
// refused one EPERM); `cat` says which.
std::string GpuNodes(const ScratchDir& dir) {
  for (int m : {0, 1}) {
    std::string node = dir.Sub("nvidia" + std::to_string(m));
    unlink(node.c_str());
    EXPECT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, m)), 0) << node;
  }
  return "cat " + dir.Sub("nvidia0") + "; cat " + dir.Sub("nvidia1") + "; true";
}

TEST_F(CgroupV1Real, AnotherGpusDeviceNodeIsRefusedAndForksStopAtThePidsLimit) {
  if (!testing::V1Mounts().count("devices") || !testing::V1Mounts().count("pids")) {
    GTEST_SKIP() << "no devices or pids hierarchy";
  }
  ASSERT_TRUE(driver_->Create("job-4-a1").ok());
  ASSERT_TRUE(driver_->DenyDevices("job-4-a1", {{kNvidiaMajor, 1}}).ok());
  ASSERT_TRUE(driver_->LimitPids("job-4-a1", 8).ok());
  EXPECT_EQ(ReadFile(Dir("pids", "job-4-a1") + "/pids.max"), "8\n");
  // The loop runs in a subshell: a shell that cannot fork gives up on its command list.
  std::string probe =
      GpuNodes(scratch_) + "; (for i in $(seq 20); do sleep 30 & done); echo forked; wait";
  pid_t pid = Start({"sh", "-c", probe}, "job-4-a1");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(PollUntil([&] {
    return ReadFile(scratch_.Sub("log")).find("forked") != std::string::npos;
  })) << ReadFile(scratch_.Sub("log"));
  std::string log = ReadFile(scratch_.Sub("log"));
  EXPECT_THAT(log, HasSubstr("nvidia0: No such device or address")) << "its own GPU: allowed";
  EXPECT_THAT(log, HasSubstr("nvidia1: Operation not permitted")) << "another GPU: refused";
  EXPECT_THAT(log, HasSubstr("fork")) << "the shell was refused more processes: " << log;
  uint64_t current = std::stoull(ReadFile(Dir("pids", "job-4-a1") + "/pids.current"));
  EXPECT_LE(current, 8u);
  ASSERT_TRUE(driver_->KillAll("job-4-a1").ok());
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(PollUntil([&] { return driver_->Remove("job-4-a1").ok(); }));
}

// cgroup v2's way (pure v2 production hosts): the BPF device program, tried here on the
// hybrid host's cgroup2 tree, which runs BPF device programs as a v2 host does.
TEST(BpfDeviceFilterReal, RefusesOnlyTheDeniedDevicesAndOnlyInItsCgroup) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  std::string root = testing::HybridHost() ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
  if (DetectCgroupLayout("/sys/fs/cgroup") == CgroupLayout::kV1) GTEST_SKIP() << "no cgroup2";
  if (absl::Status s = BpfDeviceFilter::Probe(); !s.ok()) GTEST_SKIP() << s;
  testing::CgroupTreeGuard guard("baton-bpftest-" + std::to_string(getpid()));
  std::string dir = root + "/" + guard.top();
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
  BpfDeviceFilter filter;
  ASSERT_TRUE(filter.Deny(dir, {{kNvidiaMajor, 1}}).ok());
  ScratchDir scratch;
  std::string probe = GpuNodes(scratch);
  auto run = [&](bool inside) {
    SpawnOptions so;
    so.argv = {"sh", "-c", probe};
    so.env = {"PATH=/usr/bin:/bin"};
    so.cwd = "/";
    so.log_path = scratch.Sub(inside ? "inside" : "outside");
    if (inside) so.cgroup_procs = {dir + "/cgroup.procs"};
    auto pid = Spawn(so);
    EXPECT_TRUE(pid.ok()) << pid.status();
    if (pid.ok()) waitpid(*pid, nullptr, 0);
    return ReadFile(so.log_path);
  };
  std::string inside = run(true), outside = run(false);
  EXPECT_THAT(inside, HasSubstr("nvidia0: No such device or address"));
  EXPECT_THAT(inside, HasSubstr("nvidia1: Operation not permitted"));
  EXPECT_THAT(outside, HasSubstr("nvidia1: No such device or address")) << "only its cgroup";
}

TEST_F(CgroupV1Real, CreateUndoesOnPartialFailure) {
  std::string memory = testing::V1Mounts()["memory"];
  auto faulty = Make(std::make_shared<FaultyFs>(memory + "/" + guard_->top() + "/n1/job-3"));
  absl::Status s = faulty->Create("job-3-a1");
  ASSERT_FALSE(s.ok());
  for (const auto& [c, root] : testing::V1Mounts()) {
    EXPECT_FALSE(std::filesystem::exists(Dir(c, "job-3-a1"))) << c << " left behind";
  }
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup/unified/" + guard_->top() + "/n1/job-3-a1"));
  EXPECT_TRUE(driver_->Create("job-3-a1").ok()) << "and a later try starts clean";
  EXPECT_TRUE(driver_->Remove("job-3-a1").ok());
}

// From namespace a: a flow inside the job's cgroup and one outside it; only the first
// is counted on the job's HTB class.
TEST_F(CgroupV1Real, OnlyTheJobsFlowIsCountedOnItsHtbClass) {
  std::string skip;
  auto bed = MakeNetBed("btn", 200, 1000, "baton_ostest", &skip);
  if (!bed && !skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(bed, nullptr);
  const testing::NetnsPair& ns = bed->ns;
  auto& runner = bed->runner;
  auto* caps = &bed->caps;
  ASSERT_TRUE(driver_->Create("job-4-a1").ok());
  auto cls =
      (*caps)->Add("job-4-a1", driver_->NetPath("job-4-a1"), driver_->NetLevel("job-4-a1"), 0,
                   /*inference=*/false);
  ASSERT_TRUE(cls.ok()) << cls.status();
  EXPECT_EQ(cls->ceil_mbps, 700u);
  // 200 UDP datagrams of 1000 bytes (no listener needed: UDP sends anyway).
  std::vector<std::string> flow = {
      "nsenter", "--net=/var/run/netns/" + ns.a(), "bash", "-c",
      "for i in $(seq 200); do printf '%1000s' x > /dev/udp/" + ns.ip_b() + "/9; done"};
  // The job's class is on the caps' IFB; traffic outside capped jobs stays on the NIC's.
  auto bytes = [&](uint32_t minor) {
    auto classes = Htb(runner.get(), minor == 0x100 ? (*caps)->ifb() : ns.a()).Classes();
    return classes.ok() ? (*classes)[minor].bytes : 0;
  };
  pid_t inside = Start(flow, "job-4-a1");
  ASSERT_GT(inside, 0);
  int status = 0;
  ASSERT_EQ(waitpid(inside, &status, 0), inside);
  ASSERT_EQ(status, 0) << ReadFile(scratch_.Sub("log"));
  uint64_t job_bytes = bytes(0x100), other_bytes = bytes(NetCaps::kDefaultMinor);
  EXPECT_GE(job_bytes, 200u * 1000) << "the job's flow on the job's class";
  EXPECT_LT(other_bytes, 200u * 1000) << "and not on the default class";
  EXPECT_GE(bytes(NetCaps::kCappedMinor), 200u * 1000)
      << "past its cap, on the NIC's class of capped traffic";

  auto outside = RealCommandRunner().Run(flow);  // the same flow, outside every job cgroup
  ASSERT_TRUE(outside.ok() && outside->exit_code == 0);
  EXPECT_EQ(bytes(0x100), job_bytes) << "a flow outside the cgroup is not the job's";
  EXPECT_GE(bytes(NetCaps::kDefaultMinor), other_bytes + 200u * 1000);
  auto st = (*caps)->Stats("job-4-a1");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->bytes, job_bytes);

  ASSERT_TRUE((*caps)->Remove("job-4-a1").ok());
  EXPECT_FALSE(Htb(runner.get(), (*caps)->ifb()).Classes()->count(0x100)) << "class removed";
  EXPECT_THAT(runner->Run({"nft", "-a", "list", "table", "inet", "baton_ostest"})->out,
              ::testing::Not(HasSubstr("job-4-a1")));
  EXPECT_TRUE(driver_->Remove("job-4-a1").ok());
}

// A training flow pushes at its 70% cap while an inference job sends: the inference
// packets go through the inference class (priority 0, the whole link), none dropped, and
// the training class is held at its ceiling.
TEST_F(CgroupV1Real, InferenceTrafficIsCountedInItsPriorityClassWhileTrainingIsAtItsCap) {
  std::string skip;
  auto bed = MakeNetBed("btp", 150, 100, "baton_ostest_p", &skip);
  if (!bed && !skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(bed, nullptr);
  const testing::NetnsPair& ns = bed->ns;
  auto& runner = bed->runner;
  auto* caps = &bed->caps;
  for (const char* name : {"job-5-a1", "job-6-a1"}) ASSERT_TRUE(driver_->Create(name).ok());
  auto training = (*caps)->Add("job-5-a1", driver_->NetPath("job-5-a1"),
                               driver_->NetLevel("job-5-a1"), 0, /*inference=*/false);
  ASSERT_TRUE(training.ok()) << training.status();
  auto inference = (*caps)->Add("job-6-a1", driver_->NetPath("job-6-a1"),
                                driver_->NetLevel("job-6-a1"), 0, /*inference=*/true);
  ASSERT_TRUE(inference.ok()) << inference.status();
  EXPECT_EQ(inference->class_id, "1:10");
  std::string shown = runner->Run({"tc", "class", "show", "dev", ns.a()})->out;
  EXPECT_THAT(shown, HasSubstr("class htb 1:10 parent 1:1 prio 0 rate 30Mbit ceil 100Mbit"));
  std::string capped = runner->Run({"tc", "class", "show", "dev", (*caps)->ifb()})->out;
  EXPECT_THAT(capped, HasSubstr("class htb 1:100 parent 1:1 prio 2 rate 7Mbit ceil 70Mbit"));

  std::string net = "--net=/var/run/netns/" + ns.a();
  pid_t hog = Start({"nsenter", net, "timeout", "4", "bash", "-c",
                     "while :; do printf '%1400s' x > /dev/udp/" + ns.ip_b() + "/9; done"},
                    "job-5-a1");
  ASSERT_GT(hog, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  pid_t probe =
      Start({"nsenter", net, "bash", "-c",
             "for i in $(seq 200); do printf '%1000s' x > /dev/udp/" + ns.ip_b() + "/9; done"},
            "job-6-a1");
  ASSERT_GT(probe, 0);
  int status = 0;
  ASSERT_EQ(waitpid(probe, &status, 0), probe);
  ASSERT_EQ(status, 0) << ReadFile(scratch_.Sub("log"));
  // The probe has written its packets; the last of them may still wait in the class's
  // queue (it borrows beyond its rate), counted once they leave.
  auto classes = Htb(runner.get(), ns.a()).Classes();
  for (int i = 0; i < 40 && classes.ok() && (*classes)[NetCaps::kInferenceMinor].packets < 200;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    classes = Htb(runner.get(), ns.a()).Classes();
  }
  ASSERT_TRUE(classes.ok()) << classes.status();
  for (const auto& [minor, c] : *classes) {
    EXPECT_EQ(c.ceil_bits, 100'000'000u)
        << "class " << HtbClassId(minor) << " on the NIC's qdisc, which inference traffic "
        << "goes through, could hold traffic back below the link's rate";
  }
  auto capped_classes = Htb(runner.get(), (*caps)->ifb()).Classes();
  ASSERT_TRUE(capped_classes.ok()) << capped_classes.status();
  const HtbClassStats& inf = (*classes)[NetCaps::kInferenceMinor];
  const HtbClassStats& train = (*capped_classes)[0x100];
  EXPECT_GE(inf.packets, 200u) << "the inference job's packets, in its class";
  EXPECT_GE(inf.bytes, 200u * 1000);
  EXPECT_EQ(inf.dropped, 0u);
  EXPECT_GT(train.overlimits, 0u) << "the training flow was held at its ceiling";
  ASSERT_EQ(waitpid(hog, &status, 0), hog);

  ASSERT_TRUE((*caps)->Remove("job-6-a1").ok());
  EXPECT_TRUE(Htb(runner.get(), ns.a()).Classes()->count(NetCaps::kInferenceMinor))
      << "the shared inference class stays";
  ASSERT_TRUE((*caps)->Remove("job-5-a1").ok());
  for (const char* name : {"job-5-a1", "job-6-a1"}) EXPECT_TRUE(driver_->Remove(name).ok());
}

// The defence against a capped flow's qdisc work landing on inference's CPU: a training
// flow pinned to CPU 0 pushes at its ceiling while an inference sender on CPU 1 sends 500
// packets, 2 ms apart. With the capped class on the NIC's own qdisc, those sends run that
// qdisc, find the training class held back and arm its watchdog on the inference CPU,
// whose NET_TX softirq then dequeues training packets: 52-80 softirqs in three runs of
// that layout here. On the caps' IFB: 0-3 in three runs.
TEST_F(CgroupV1Real, ACappedFlowsQdiscWorkStaysOffTheInferenceSendersCpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  if (!CPU_ISSET(0, &set) || !CPU_ISSET(1, &set)) GTEST_SKIP() << "needs CPUs 0 and 1";
  if (testing::NetTxSoftirqs(1) < 0) GTEST_SKIP() << "no NET_TX line in /proc/softirqs";
  std::string skip;
  auto bed = MakeNetBed("btq", 120, 100, "baton_ostest_q", &skip);
  if (!bed && !skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(bed, nullptr);
  auto& caps = bed->caps;
  for (const char* name : {"job-7-a1", "job-8-a1"}) ASSERT_TRUE(driver_->Create(name).ok());
  ASSERT_TRUE(caps->Add("job-7-a1", driver_->NetPath("job-7-a1"), driver_->NetLevel("job-7-a1"), 0,
                        /*inference=*/false)
                  .ok());
  ASSERT_TRUE(caps->Add("job-8-a1", driver_->NetPath("job-8-a1"), driver_->NetLevel("job-8-a1"), 0,
                        /*inference=*/true)
                  .ok());
  std::string net = "--net=/var/run/netns/" + bed->ns.a();
  std::string to = " > /dev/udp/" + bed->ns.ip_b() + "/9";
  pid_t flood = Start({"nsenter", net, "taskset", "-c", "0", "timeout", "5", "bash", "-c",
                       "while :; do printf '%1400s' x" + to + "; done"},
                      "job-7-a1");
  ASSERT_GT(flood, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int64_t before = testing::NetTxSoftirqs(1);
  pid_t sender = Start({"nsenter", net, "taskset", "-c", "1", "bash", "-c",
                        "for i in $(seq 500); do printf '%1000s' x" + to + "; sleep 0.002; done"},
                       "job-8-a1");
  ASSERT_GT(sender, 0);
  int status = 0;
  ASSERT_EQ(waitpid(sender, &status, 0), sender);
  int64_t on_inference_cpu = testing::NetTxSoftirqs(1) - before;
  ASSERT_EQ(status, 0) << ReadFile(scratch_.Sub("log"));
  auto held = caps->Stats("job-7-a1");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_GT(held->overlimits, 0u) << "the training flow was held at its ceiling meanwhile";
  EXPECT_LT(on_inference_cpu, 15) << "NET_TX softirqs on the inference sender's CPU";
  std::printf("NET_TX softirqs on the inference CPU while it sent 500 packets: %lld\n",
              static_cast<long long>(on_inference_cpu));
  EXPECT_TRUE(driver_->KillAll("job-7-a1").ok());
  ASSERT_EQ(waitpid(flood, &status, 0), flood);
  for (const char* name : {"job-7-a1", "job-8-a1"}) {
    ASSERT_TRUE(caps->Remove(name).ok());
    EXPECT_TRUE(driver_->Remove(name).ok());
  }
}

// TearDown leaves the NIC as it found it: no IFB, no clsact hook, no HTB root.
TEST_F(CgroupV1Real, TearDownRemovesTheIfbAndTheRedirect) {
  std::string skip;
  auto bed = MakeNetBed("btd", 90, 100, "baton_ostest_d", &skip);
  if (!bed && !skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(bed, nullptr);
  auto& runner = bed->runner;
  std::string ifb = bed->caps->ifb();
  EXPECT_EQ(runner->Run({"ip", "link", "show", "dev", ifb})->exit_code, 0);
  EXPECT_THAT(runner->Run({"tc", "filter", "show", "dev", bed->ns.a(), "egress"})->out,
              HasSubstr("Redirect to device " + ifb));
  ASSERT_TRUE(bed->caps->TearDown().ok());
  bed->caps.reset();
  EXPECT_NE(runner->Run({"ip", "link", "show", "dev", ifb})->exit_code, 0) << "the IFB is gone";
  std::string qdiscs = runner->Run({"tc", "qdisc", "show", "dev", bed->ns.a()})->out;
  EXPECT_THAT(qdiscs, ::testing::Not(HasSubstr("clsact")));
  EXPECT_THAT(qdiscs, ::testing::Not(HasSubstr("htb")));
}

}  // namespace
}  // namespace baton
