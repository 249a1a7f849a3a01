// An operator's day on real daemons: a backup taken while researchers submit, restored
// into a fresh data dir after the coordinator stops (every job acknowledged before the
// backup began is there); and a node drained with --evict while a training gang runs on
// it: the gang checkpoints, moves to the other node and ends with the weights of an
// uninterrupted run, no eviction counted (namespace cluster; needs root).
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/local_cluster.h"
#include "tests/integration/witness.h"

namespace baton::testing {
namespace {

struct Acked {
  uint64_t id;
  std::string name;
};

TEST(Operations, ABackupTakenWhileSubmitsRunRestoresEveryJobAcknowledgedBeforeIt) {
  LocalCluster cluster(/*agents=*/1, /*gpus=*/0);
  const std::string backup = cluster.dir() + "/backup";
  std::mutex mu;
  std::vector<Acked> acked;
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string name = "b" + std::to_string(t) + "-" + std::to_string(i);
        CommandResult r;
        // Throttled (7) or, on a loaded machine, unavailable (5): retry. Only acknowledged
        // submits are checked, so one that landed without its answer does no harm.
        for (int tries = 0; tries < 20; ++tries) {
          r = cluster.Baton({"submit", "-q", "--name", name, "--", "true"});
          if (r.exit_code != 7 && r.exit_code != 5) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
        ASSERT_EQ(r.exit_code, 0) << r.err;
        std::lock_guard<std::mutex> lock(mu);
        acked.push_back({ClusterClient::SubmittedId(r.out), name});
      }
    });
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return acked.size() >= 40;
      },
      std::chrono::seconds(120)));
  std::vector<Acked> before_backup;
  {
    std::lock_guard<std::mutex> lock(mu);
    before_backup = acked;
  }
  // Retried, as the submitters are, when it cannot reach the coordinator (exit 5: on two
  // busy cores a TLS handshake can time out; one that never connected wrote nothing).
  auto retried = [&cluster](std::vector<std::string> args, const std::string& user) {
    CommandResult r;
    for (int tries = 0; tries < 5; ++tries) {
      r = cluster.Baton(args, user);
      if (r.exit_code != 5) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return r;
  };
  CommandResult made = retried({"admin", "backup", backup}, kRoot);
  for (auto& s : submitters) s.join();
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("backup written to " + backup), std::string::npos) << made.out;
  EXPECT_LT(before_backup.size(), acked.size()) << "submits went on during the backup";

  // Only admins back up; an existing directory is never written into.
  CommandResult denied = retried({"admin", "backup", cluster.shared_dir() + "/mine"}, kAlice);
  EXPECT_EQ(denied.exit_code, 4) << denied.err;
  EXPECT_FALSE(std::filesystem::exists(cluster.shared_dir() + "/mine"));
  EXPECT_TRUE(std::filesystem::is_empty(cluster.shared_dir())) << "no partial directory left";
  CommandResult again = retried({"admin", "backup", backup}, kRoot);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;

  // Restore, as the README says: stop, move the old data dir away, restore, start.
  cluster.KillCoordinator(SIGTERM);
  const std::string data = cluster.dir() + "/coordinator";
  std::filesystem::rename(data, data + ".old");
  CommandResult restored =
      RunProcess({Bin("baton-coordinator"), "restore", backup, "--data-dir", data}, {});
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("restored " + data), std::string::npos) << restored.out;
  CommandResult over =
      RunProcess({Bin("baton-coordinator"), "restore", backup, "--data-dir", data}, {});
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_NE(over.err.find("not empty"), std::string::npos) << over.err;

  cluster.StartCoordinator();
  CommandResult all = cluster.Baton({"queue", "--all", "--json"}, kRoot);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::map<uint64_t, std::string> listed;
  std::istringstream lines(all.out);
  for (std::string line; std::getline(lines, line);) {
    auto job = nlohmann::json::parse(line);
    listed[std::stoull(job["id"].get<std::string>())] = job["spec"]["name"];
  }
  for (const Acked& a : before_backup) {
    ASSERT_TRUE(listed.count(a.id)) << "job " << a.id << " was acknowledged before the backup";
    EXPECT_EQ(listed[a.id], a.name);
  }
}

class DrainOnNamespaces : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("baton-drain");
    MakeShared(dir_->path());
    cluster_ = new NetnsCluster(/*nodes=*/2, /*gpus=*/2, "", "d");
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  void SetUp() override {
    if (!cluster_->ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster_->why();
  }
  // train_mlp as a 1-node, 4-rank MPI gang on 2 GPUs, 120 steps saved every 25, as
  // alice; its id.
  static std::vector<std::string> TrainFlags() { return {"--steps", "120", "--save-every", "25"}; }
  static uint64_t SubmitTraining(const std::string& ckpt) {
    std::vector<std::string> args = {"submit",           "-q",  "--class", "training",
                                     "--mode",           "mpi", "--nodes", "1",
                                     "--ranks-per-node", "4",   "--gpus",  "2",
                                     "--cpus",           "1",   "--grace", "20s",
                                     "--checkpoint-dir", ckpt,  "--",      StagedBin("train_mlp")};
    for (const std::string& f : TrainFlags()) args.push_back(f);
    args.insert(args.end(), {"--step-ms", "50"});
    return ClusterClient::SubmittedId(cluster_->Baton(args).out);
  }
  static TempDir* dir_;
  static NetnsCluster* cluster_;
};
TempDir* DrainOnNamespaces::dir_ = nullptr;
NetnsCluster* DrainOnNamespaces::cluster_ = nullptr;

TEST_F(DrainOnNamespaces, EvictMovesATrainingGangWhichResumesWithNothingLost) {
  const std::string ckpt = dir_->Sub("ckpt");
  const std::vector<std::string> flags = TrainFlags();
  uint64_t train = SubmitTraining(ckpt);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_RUNNING")) << cluster_->Describe(train);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", std::to_string(train)}).out.find("step 12 ") !=
               std::string::npos;
      },
      std::chrono::seconds(30)));
  std::optional<v1::Job> job = cluster_->GetJob(train);
  ASSERT_TRUE(job);
  const std::string first = job->attempts(0).placement(0).node();

  CommandResult denied = cluster_->Baton({"nodes", "drain", first, "--evict"});
  EXPECT_EQ(denied.exit_code, 4) << "only admins drain: " << denied.err;
  CommandResult drained =
      cluster_->Baton({"nodes", "drain", first, "--evict", "--reason", "kernel update"}, kRoot);
  ASSERT_EQ(drained.exit_code, 0) << drained.err;
  EXPECT_NE(cluster_->Baton({"nodes", "--json"}, kRoot).out.find("kernel update"),
            std::string::npos);

  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
      << cluster_->Describe(train);
  job = cluster_->GetJob(train);
  ASSERT_TRUE(job);
  ASSERT_EQ(job->attempts_size(), 2) << cluster_->Describe(train);
  EXPECT_EQ(job->attempts(0).drained_node(), first);
  EXPECT_NE(job->attempts(1).placement(0).node(), first) << "moved off the drained node";
  EXPECT_EQ(job->evictions(), 0u) << "a drain is not counted against the job";
  std::string log1 = cluster_->Baton({"logs", std::to_string(train), "--attempt", "1"}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log1, m, std::regex("evicted: saved step (\\d+)"))) << log1;
  std::string log2 = cluster_->Baton({"logs", std::to_string(train)}).out;
  EXPECT_NE(log2.find("restored step " + std::string(m[1])), std::string::npos) << log2;
  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags)) << "no step lost";
  std::string witness = ReadFile(ckpt + "/WITNESS");
  EXPECT_EQ(WitnessOverlap(witness), "") << witness;

  // Drained, the node takes nothing new; undrained, it does.
  uint64_t a = ClusterClient::SubmittedId(
      cluster_->Baton({"submit", "-q", "--gpus", "2", "--", "sleep", "600"}).out);
  uint64_t b = ClusterClient::SubmittedId(
      cluster_->Baton({"submit", "-q", "--gpus", "2", "--", "sleep", "600"}).out);
  ASSERT_TRUE(cluster_->WaitForState(a, "JOB_STATE_RUNNING")) << cluster_->Describe(a);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(cluster_->StateOf(b), "JOB_STATE_PENDING") << cluster_->Describe(b);
  ASSERT_EQ(cluster_->Baton({"nodes", "undrain", first}, kRoot).exit_code, 0);
  EXPECT_TRUE(cluster_->WaitForState(b, "JOB_STATE_RUNNING")) << cluster_->Describe(b);
  job = cluster_->GetJob(b);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->attempts(0).placement(0).node(), first);
  cluster_->Baton({"cancel", std::to_string(a), std::to_string(b)});
}

// `baton requeue` (issue 49): the owner stops a training gang as a drain would and it is
// back in line at once; it resumes from its checkpoint with no step lost, and nothing is
// counted against it.
TEST_F(DrainOnNamespaces, ARequeuedGangResumesWithNothingLostOrCounted) {
  const std::string ckpt = dir_->Sub("ckpt-requeue");
  const std::vector<std::string> flags = TrainFlags();
  uint64_t train = SubmitTraining(ckpt);
  const std::string id = std::to_string(train);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_RUNNING")) << cluster_->Describe(train);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", id}).out.find("step 12 ") != std::string::npos;
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(cluster_->Baton({"requeue", id}, kBob).exit_code, 4) << "another tenant's job";
  CommandResult requeued = cluster_->Baton({"requeue", id, "--reason", "new data"});
  ASSERT_EQ(requeued.exit_code, 0) << requeued.err;
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
      << cluster_->Describe(train);
  std::optional<v1::Job> job = cluster_->GetJob(train);
  ASSERT_TRUE(job);
  ASSERT_EQ(job->attempts_size(), 2) << cluster_->Describe(train);
  EXPECT_EQ(job->attempts(0).requeued_by(), kAlice);
  EXPECT_EQ(job->evictions(), 0u);
  EXPECT_EQ(job->failures(), 0u);
  std::string log2 = cluster_->Baton({"logs", id}).out;
  EXPECT_NE(log2.find("restored step"), std::string::npos) << log2;
  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags)) << "no step lost";
  EXPECT_EQ(cluster_->Baton({"requeue", id}).exit_code, 6) << "a finished job";
}

// A test process killed outright (a ctest timeout's SIGKILL, a Ctrl-C) leaves no namespace
// cluster running: its agents, coordinator and jobs would otherwise go on using the CPUs of
// every later test and benchmark. The test runs itself as the process to kill.
TEST(Operations, AKilledTestProcessLeavesNoClusterBehind) {
  if (const char* out = getenv("BATON_GUARDIAN_CHILD")) {  // the process to kill
    NetnsCluster cluster(/*nodes=*/1, /*gpus=*/0, "", "gd");
    if (!cluster.ok()) GTEST_SKIP() << cluster.why();
    std::ofstream(out) << cluster.name();
    raise(SIGKILL);
  }
  if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces)";
  TempDir dir("baton-guardian");
  const std::string out = dir.path() + "/name";
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  Subprocess child({self, "--gtest_filter=Operations.AKilledTestProcessLeavesNoClusterBehind"},
                   {{"BATON_GUARDIAN_CHILD", out}}, dir.path() + "/child");
  ASSERT_EQ(child.Wait(std::chrono::seconds(90)), 128 + SIGKILL) << "it did not kill itself";
  std::ifstream in(out);
  std::string name;
  in >> name;
  if (name.empty()) GTEST_SKIP() << "the child could not make a cluster";
  // What is left of it: its namespaces and the processes started for it.
  auto left = [&] {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/run/netns", ec)) {
      if (e.path().filename().string().rfind(name + "-", 0) == 0) found.push_back(e.path());
    }
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::string line;
      try {  // a process that exits between the open and the read fails it with ESRCH
        std::ifstream cmd(e.path() / "cmdline");
        line.assign(std::istreambuf_iterator<char>(cmd), std::istreambuf_iterator<char>());
      } catch (const std::exception&) {
        continue;
      }
      if (line.find("/tmp/" + name + "-netns") != std::string::npos) found.push_back(line);
    }
    return found;
  };
  std::vector<std::string> found = left();
  for (int i = 0; i < 600 && !found.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    found = left();
  }
  EXPECT_TRUE(found.empty()) << "left behind, first: " << found.front();
  if (!found.empty()) {  // clean up for the tests after this one
    RunProcess({std::string(BATON_SOURCE_DIR) + "/scripts/netns-cluster.sh", "down"},
               {{"BATON_NETNS_NAME", name}});
  }
}

}  // namespace
}  // namespace baton::testing
