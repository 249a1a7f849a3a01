// The cgroup v2 backend against FakeCgroupV2Fs, which enforces v2's rules (pure v2
// cannot run on these hybrid machines), plus layout detection and v1 mount parsing.
#include "launcher/agent/isolation/cgroup_v2.h"

#include <linux/magic.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/launcher/isolation/fake_cgroupfs.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::ReadFile;
using launcher_testing::ScratchDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CgroupV2Test : public ::testing::Test {
 protected:
  void Make(std::vector<std::string> controllers = {"cpuset", "cpu", "io", "memory", "pids"}) {
    fs_ = std::make_shared<testing::FakeCgroupV2Fs>(dir_.path(), controllers);
    driver_ = std::make_unique<CgroupV2Driver>(fs_, dir_.path(), "baton/n1");
  }
  void SetUp() override { Make(); }
  std::string At(const std::string& rel) const { return dir_.path() + "/" + rel; }
  std::string Leaf(const std::string& file) const { return At("baton/n1/job-1-a1/" + file); }

  ScratchDir dir_;
  std::shared_ptr<testing::FakeCgroupV2Fs> fs_;
  std::unique_ptr<CgroupV2Driver> driver_;
};

TEST_F(CgroupV2Test, CreateEnablesControllersDownTheParentChain) {
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  for (const char* level : {"", "baton/", "baton/n1/"}) {
    std::string enabled = ReadFile(At(std::string(level) + "cgroup.subtree_control"));
    EXPECT_THAT(enabled, HasSubstr("cpu")) << level;
    EXPECT_THAT(enabled, HasSubstr("cpuset")) << level;
    EXPECT_THAT(enabled, HasSubstr("memory")) << level;
    EXPECT_THAT(enabled, ::testing::Not(HasSubstr("io"))) << "only what baton sets";
  }
  EXPECT_THAT(ReadFile(Leaf("cgroup.controllers")), HasSubstr("memory"));
  EXPECT_TRUE(std::filesystem::exists(Leaf("cpu.max")));
  EXPECT_TRUE(driver_->Create("job-1-a1").ok()) << "idempotent";
}

TEST_F(CgroupV2Test, ApplyWritesEveryLimit) {
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  CgroupLimits l{.cpus = "2-3",
                 .mems = "0",
                 .cpu_quota_millis = 1500,
                 .cpu_weight = 150,
                 .memory_max_bytes = 1 << 30};
  ASSERT_TRUE(driver_->Apply("job-1-a1", l).ok());
  EXPECT_EQ(ReadFile(Leaf("cpu.max")), "150000 100000\n");
  EXPECT_EQ(ReadFile(Leaf("cpu.weight")), "150\n");
  EXPECT_EQ(ReadFile(Leaf("cpuset.cpus")), "2-3\n");
  EXPECT_EQ(ReadFile(Leaf("cpuset.mems")), "0\n");
  EXPECT_EQ(ReadFile(Leaf("memory.max")), std::to_string(1 << 30) + "\n");
  // Live change back to unlimited.
  ASSERT_TRUE(driver_->Apply("job-1-a1", CgroupLimits{}).ok());
  EXPECT_EQ(ReadFile(Leaf("cpu.max")), "max 100000\n");
  EXPECT_EQ(ReadFile(Leaf("memory.max")), "max\n");
  // A few millicores get the kernel's least quota, not a refused write.
  ASSERT_TRUE(driver_->Apply("job-1-a1", CgroupLimits{.cpu_quota_millis = 5}).ok());
  EXPECT_EQ(ReadFile(Leaf("cpu.max")), "1000 100000\n");
  EXPECT_EQ(ReadFile(Leaf("cpuset.cpus")), "\n") << "empty: the parent's CPUs";
}

class RecordingFilter : public DeviceFilter {
 public:
  absl::Status Deny(const std::string& dir, const std::vector<CharDevice>& denied) override {
    dirs.push_back(dir);
    last = denied;
    return absl::OkStatus();
  }
  std::vector<std::string> dirs;
  std::vector<CharDevice> last;
};

TEST_F(CgroupV2Test, PidsAreLimitedAndDevicesFencedThroughTheBpfFilter) {
  auto filter = std::make_shared<RecordingFilter>();
  fs_ = std::make_shared<testing::FakeCgroupV2Fs>(
      dir_.path(), std::vector<std::string>{"cpuset", "cpu", "memory", "pids"});
  driver_ = std::make_unique<CgroupV2Driver>(fs_, dir_.path(), "baton/n1", "", filter);
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  EXPECT_THAT(ReadFile(At("baton/n1/cgroup.subtree_control")), HasSubstr("pids"));
  ASSERT_TRUE(driver_->LimitPids("job-1-a1", 64).ok());
  EXPECT_EQ(ReadFile(Leaf("pids.max")), "64\n");
  ASSERT_TRUE(driver_->LimitPids("job-1-a1", 0).ok());
  EXPECT_EQ(ReadFile(Leaf("pids.max")), "max\n");
  std::vector<CharDevice> others = {{kNvidiaMajor, 1}, {kNvidiaMajor, 3}};
  ASSERT_TRUE(driver_->DenyDevices("job-1-a1", others).ok());
  EXPECT_THAT(filter->dirs, ElementsAre(At("baton/n1/job-1-a1")));
  EXPECT_EQ(filter->last, others);
}

TEST_F(CgroupV2Test, WithoutAFilterOrAPidsControllerTheRefusalIsClear) {
  Make({"cpuset", "cpu", "memory"});
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  EXPECT_TRUE(driver_->LimitPids("job-1-a1", 0).ok()) << "no limit asked: nothing to refuse";
  absl::Status pids = driver_->LimitPids("job-1-a1", 64);
  EXPECT_EQ(pids.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(pids.message(), HasSubstr("pids"));
  EXPECT_TRUE(driver_->DenyDevices("job-1-a1", {}).ok());
  absl::Status devices = driver_->DenyDevices("job-1-a1", {{kNvidiaMajor, 1}});
  EXPECT_EQ(devices.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(driver_->CanFenceDevices().ok());
}

TEST_F(CgroupV2Test, ProcessesJoinTheLeafNeverAnInnerCgroup) {
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  EXPECT_THAT(driver_->ProcsFiles("job-1-a1"), ElementsAre(Leaf("cgroup.procs")));
  EXPECT_FALSE(fs_->AddProcess(At("baton/n1"), 4242).ok()) << "the fake enforces v2's rule";
  ASSERT_TRUE(fs_->AddProcess(At("baton/n1/job-1-a1"), 4242).ok());
  auto pids = driver_->Pids("job-1-a1");
  ASSERT_TRUE(pids.ok());
  EXPECT_THAT(*pids, ElementsAre(4242));
}

TEST_F(CgroupV2Test, RemoveWaitsForKillAllAndIsIdempotent) {
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  ASSERT_TRUE(fs_->AddProcess(At("baton/n1/job-1-a1"), 4242).ok());
  absl::Status busy = driver_->Remove("job-1-a1");
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition) << busy;
  ASSERT_TRUE(driver_->KillAll("job-1-a1").ok());
  EXPECT_THAT(fs_->killed(), ElementsAre(At("baton/n1/job-1-a1")));
  ASSERT_TRUE(driver_->Remove("job-1-a1").ok());
  EXPECT_FALSE(std::filesystem::exists(At("baton/n1/job-1-a1")));
  EXPECT_TRUE(driver_->Remove("job-1-a1").ok());
  EXPECT_TRUE(driver_->KillAll("job-1-a1").ok()) << "nothing to kill is fine";
}

TEST_F(CgroupV2Test, StatsReadThrottlingAndMemoryPeak) {
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  fs_->SetFile(Leaf("cpu.stat"),
               "usage_usec 900000\nuser_usec 1\nsystem_usec 2\nnr_periods 40\nnr_throttled 12\n"
               "throttled_usec 345000\n");
  fs_->SetFile(Leaf("memory.peak"), "7340032\n");
  fs_->SetFile(Leaf("memory.current"), "1048576\n");
  auto st = driver_->Stats("job-1-a1");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->cpu_usage_us, 900000u);
  EXPECT_EQ(st->nr_periods, 40u);
  EXPECT_EQ(st->nr_throttled, 12u);
  EXPECT_EQ(st->throttled_us, 345000u);
  EXPECT_EQ(st->memory_peak_bytes, 7340032u);
  EXPECT_EQ(st->memory_current_bytes, 1048576u);
}

TEST_F(CgroupV2Test, ListFindsOnlyAttemptCgroups) {
  ASSERT_TRUE(driver_->Create("job-2-a3").ok());
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  ASSERT_TRUE(fs_->MakeDir(At("baton/n1/not-a-job")).ok());
  auto names = driver_->List();
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ElementsAre("job-1-a1", "job-2-a3"));
}

TEST_F(CgroupV2Test, KeepersWriteExitRecordsFromALastingLeafOffInferenceCpus) {
  // A parent that enables controllers may hold no process: the exit cgroup is a leaf.
  EXPECT_EQ(driver_->ExitProcsFile(), At("baton/n1/exit/cgroup.procs"));
  ASSERT_TRUE(driver_->LimitExitCpus("0-2,4-6").ok()) << "before Init: kept for it";
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  EXPECT_EQ(ReadFile(At("baton/n1/exit/cpuset.cpus")), "0-2,4-6\n");
  EXPECT_THAT(ReadFile(At("baton/n1/exit/cgroup.controllers")), HasSubstr("memory"));
  ASSERT_TRUE(fs_->Write(driver_->ExitProcsFile(), "77").ok()) << "a keeper can join it";
  ASSERT_TRUE(driver_->LimitExitCpus("").ok());
  EXPECT_EQ(ReadFile(At("baton/n1/exit/cpuset.cpus")), "\n") << "no inference: all CPUs";
  EXPECT_THAT(*driver_->List(), ElementsAre("job-1-a1")) << "the exit leaf is no attempt";
  ASSERT_TRUE(driver_->Remove("job-1-a1").ok()) << "the keeper in exit keeps no attempt alive";
}

TEST_F(CgroupV2Test, NetworkPathIsTheCgroupPathAndItsDepth) {
  EXPECT_EQ(driver_->NetPath("job-1-a1"), "baton/n1/job-1-a1");
  EXPECT_EQ(driver_->NetLevel("job-1-a1"), 3);
  CgroupV2Driver hybrid(fs_, dir_.path(), "baton/n1", "unified/");
  EXPECT_EQ(hybrid.NetPath("job-1-a1"), "unified/baton/n1/job-1-a1");
  EXPECT_EQ(hybrid.NetLevel("job-1-a1"), 3) << "the prefix is the mount, not a level";
}

TEST_F(CgroupV2Test, AMissingControllerIsAClearErrorNotASilentNoLimit) {
  Make({"cpu", "io"});
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  absl::Status s = driver_->Apply("job-1-a1", CgroupLimits{.cpus = "1"});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cpuset"));
  s = driver_->Apply("job-1-a1", CgroupLimits{.memory_max_bytes = 1 << 20});
  EXPECT_THAT(std::string(s.message()), HasSubstr("memory"));
  EXPECT_TRUE(driver_->Apply("job-1-a1", CgroupLimits{.cpu_quota_millis = 500}).ok());
}

TEST_F(CgroupV2Test, AFailingWriteIsReported) {
  fs_->FailWrites("memory.max", absl::ResourceExhaustedError("memory.max: Device busy"));
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  absl::Status s = driver_->Apply("job-1-a1", CgroupLimits{.memory_max_bytes = 1 << 20});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
}

// systemd with Delegate=yes: the unit's cgroup is the agent's, and the top of its subtree.
class DelegatedCgroupV2Test : public CgroupV2Test {
 protected:
  static constexpr char kUnit[] = "system.slice/baton-agent.service";
  static constexpr int kAgentPid = 4242;
  // The agent in the unit's cgroup, attempts under `parent`.
  void MakeUnder(const std::string& parent, bool tell_agent_cgroup = true) {
    fs_ = std::make_shared<testing::FakeCgroupV2Fs>(dir_.path(), kControllers);
    for (const char* d : {"system.slice", kUnit}) ASSERT_TRUE(fs_->MakeDir(At(d)).ok());
    ASSERT_TRUE(fs_->AddProcess(At(kUnit), kAgentPid).ok());
    driver_ = std::make_unique<CgroupV2Driver>(fs_, dir_.path(), parent);
    if (tell_agent_cgroup) driver_->SetAgentCgroup(kUnit, kAgentPid);
  }
  std::string Procs(const std::string& rel) const { return ReadFile(At(rel + "/cgroup.procs")); }
  static inline const std::vector<std::string> kControllers = {"cpuset", "cpu", "memory", "pids"};
};

TEST_F(DelegatedCgroupV2Test, TheAgentMovesIntoALeafSoThatAttemptsAreItsSiblings) {
  MakeUnder(kUnit);
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  EXPECT_EQ(Procs(std::string(kUnit) + "/agent"), "4242\n");
  EXPECT_EQ(Procs(kUnit), "") << "v2: no process in a cgroup that enables controllers";
  EXPECT_THAT(ReadFile(At(std::string(kUnit) + "/cgroup.subtree_control")), HasSubstr("cpu"));
  EXPECT_TRUE(std::filesystem::exists(At(std::string(kUnit) + "/job-1-a1/cpu.max")));
  ASSERT_TRUE(driver_->Apply("job-1-a1", CgroupLimits{.cpu_quota_millis = 500}).ok());
  EXPECT_THAT(*driver_->List(), ElementsAre("job-1-a1")) << "the agent's leaf is no attempt";
  ASSERT_TRUE(fs_->AddProcess(At(std::string(kUnit) + "/job-1-a1"), 7).ok());
  EXPECT_EQ(Procs(std::string(kUnit) + "/agent"), "4242\n") << "a job joining moves no agent";
}

TEST_F(DelegatedCgroupV2Test, ThePackagedLayoutPutsAttemptsUnderJobsNextToTheAgent) {
  MakeUnder(std::string(kUnit) + "/jobs");  // packaging/systemd/agent.yaml's cgroup-parent
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  EXPECT_EQ(Procs(std::string(kUnit) + "/agent"), "4242\n");
  EXPECT_TRUE(std::filesystem::exists(At(std::string(kUnit) + "/jobs/job-1-a1/memory.max")));
}

TEST_F(DelegatedCgroupV2Test, WithoutKnowingItsCgroupTheAgentBlocksTheControllers) {
  MakeUnder(kUnit, /*tell_agent_cgroup=*/false);
  absl::Status s = driver_->Create("job-1-a1");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("with processes"));
}

TEST_F(DelegatedCgroupV2Test, AnAgentOutsideTheParentChainStaysWhereItIs) {
  MakeUnder("baton/n1");
  ASSERT_TRUE(driver_->Create("job-1-a1").ok());
  EXPECT_EQ(Procs(kUnit), "4242\n");
  EXPECT_FALSE(std::filesystem::exists(At(std::string(kUnit) + "/agent")));
}

TEST(CgroupLayout, TheV2PathOfAProcess) {
  EXPECT_EQ(*ParseV2CgroupPath("0::/system.slice/baton-agent.service\n"),
            "system.slice/baton-agent.service");
  EXPECT_EQ(*ParseV2CgroupPath("0::/\n"), "") << "the root";
  EXPECT_EQ(*ParseV2CgroupPath("12:cpu,cpuacct:/user.slice\n1:name=systemd:/user.slice\n"
                               "0::/user.slice/session-3.scope\n"),
            "user.slice/session-3.scope")
      << "hybrid: the v2 line among v1 ones";
  auto v1_only = ParseV2CgroupPath("12:cpu,cpuacct:/user.slice\n");
  EXPECT_EQ(v1_only.status().code(), absl::StatusCode::kNotFound);
}

TEST(CgroupLayout, ClassifiedByTheFilesystemMagic) {
  EXPECT_EQ(ClassifyCgroupLayout(CGROUP2_SUPER_MAGIC, 0), CgroupLayout::kV2);
  EXPECT_EQ(ClassifyCgroupLayout(TMPFS_MAGIC, CGROUP2_SUPER_MAGIC), CgroupLayout::kHybrid);
  EXPECT_EQ(ClassifyCgroupLayout(TMPFS_MAGIC, 0), CgroupLayout::kV1);
  EXPECT_EQ(ClassifyCgroupLayout(EXT4_SUPER_MAGIC, 0), CgroupLayout::kNone);
}

TEST(CgroupLayout, V1MountsByController) {
  auto m = ParseV1Mounts(
      "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
      "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
      "cgroup /sys/fs/cgroup/systemd cgroup rw,name=systemd 0 0\n");
  EXPECT_EQ(m["cpu"], "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(m["cpuacct"], "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(m["memory"], "/sys/fs/cgroup/memory");
  EXPECT_EQ(m.size(), 3u);
}

}  // namespace
}  // namespace baton
