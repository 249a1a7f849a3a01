// Fixed-size gangs across nodes: a cluster of network namespaces on one machine, Open MPI
// daemons started through the agents, direct-mode rank variables and signals, eviction
// and resume of train_mlp, and failures that take the whole gang down.
#include <dirent.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"

namespace baton::testing {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// The steps of "[rank 0] step N loss X" lines, in order.
std::vector<int> Steps(const std::string& log) {
  std::vector<int> steps;
  for (const auto& l : Lines(log)) {
    if (l.rfind("[rank 0] step ", 0) == 0) steps.push_back(std::stoi(l.substr(14)));
  }
  return steps;
}

// No process whose command line contains `marker` is left anywhere.
bool NoProcessWith(const std::string& marker) {
  DIR* d = opendir("/proc");
  bool none = true;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(marker) != std::string::npos && cmd.find("gtest") == std::string::npos)
      none = false;
  }
  closedir(d);
  return none;
}

class MultiNode : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new NetnsCluster(/*nodes=*/2, /*gpus=*/2); }
  static void TearDownTestSuite() { delete cluster_; }
  void SetUp() override {
    if (!cluster_->ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster_->why();
  }
  static NetnsCluster* cluster_;
};
NetnsCluster* MultiNode::cluster_ = nullptr;

// `baton submit <how>` of a 2-node x 2-rank mpi train_mlp (1 CPU per rank, no restarts)
// checkpointing to `dir`, with train_mlp's `flags`.
std::vector<std::string> MpiTrainMlp(const std::string& how, const std::string& dir,
                                     const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"submit",
                                   how,
                                   "--mode",
                                   "mpi",
                                   "--nodes",
                                   "2",
                                   "--ranks-per-node",
                                   "2",
                                   "--cpus",
                                   "1",
                                   "--restart",
                                   "never",
                                   "--checkpoint-dir",
                                   dir,
                                   "--",
                                   StagedBin("train_mlp")};
  args.insert(args.end(), flags.begin(), flags.end());
  return args;
}

TEST_F(MultiNode, MpiGangRunsTrainMlpToTheUninterruptedResult) {
  std::string dir = cluster_->shared_dir() + "/ckpt-full";
  std::vector<std::string> flags = {"--steps", "30", "--save-every", "10"};
  std::vector<std::string> args = MpiTrainMlp("--wait", dir, flags);
  CommandResult r = cluster_->Baton(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t id = ClusterClient::SubmittedId(r.out);
  std::string log = cluster_->Baton({"logs", std::to_string(id)}).out;
  std::vector<int> expected(30);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(Steps(log), expected);
  EXPECT_EQ(TrainMlpFinalHash(log), UninterruptedTrainMlpHash(flags)) << log;
  std::string witness = ReadFile(dir + "/WITNESS");
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(witness.find("end attempt 1 rank " + std::to_string(r)), std::string::npos)
        << "rank " << r << " ran to its end:\n"
        << witness;
  }
}

TEST_F(MultiNode, MpiRanksOnEveryNodeSitInTheirAttemptsCgroups) {
  CommandResult r = cluster_->Baton(
      {"submit", "--wait", "--mode", "mpi", "--nodes", "2", "--ranks-per-node", "2", "--cpus", "1",
       "--restart", "never", "--", "sh", "-c",
       "echo cgroup $(grep -E '^[0-9]+:(cpu,cpuacct|cpu|cpuacct,cpu):' /proc/self/cgroup)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t id = ClusterClient::SubmittedId(r.out);
  std::string log = cluster_->Baton({"logs", std::to_string(id)}).out;
  // Agents put attempts under <cgroup parent>/<node>/job-J-aA; without cgroups the ranks
  // stay in the agent's own group.
  if (log.find("/job-" + std::to_string(id) + "-a1") == std::string::npos) {
    GTEST_SKIP() << "the agents run without cgroup isolation here: " << log;
  }
  std::string attempt = "/job-" + std::to_string(id) + "-a1";
  for (int rank = 0; rank < 4; ++rank) {
    std::string node = rank < 2 ? "n1" : "n2";
    std::regex line("\\[rank " + std::to_string(rank) + "\\] cgroup .*/" + node + "/.*job-" +
                    std::to_string(id) + "-a1");
    EXPECT_TRUE(std::regex_search(log, line))
        << "rank " << rank << " is not in " << node << "'s cgroup for" << attempt << ":\n"
        << log;
  }
}

TEST_F(MultiNode, EvictionBetweenSavesResumesAtTheCommittedStep) {
  std::string dir = cluster_->shared_dir() + "/ckpt-evict";
  std::vector<std::string> flags = {"--steps", "60", "--save-every", "10"};
  auto submit = [&](bool slow) {
    std::vector<std::string> args = MpiTrainMlp("-q", dir, flags);
    if (slow) args.insert(args.end(), {"--step-ms", "100"});
    return ClusterClient::SubmittedId(cluster_->Baton(args).out);
  };
  uint64_t first = submit(/*slow=*/true);
  ASSERT_GT(first, 0u);
  // Signal between two periodic saves: when the last step printed ends in 2..5, which
  // leaves 400 ms for the signal to reach the ranks before the next periodic save.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto steps = Steps(cluster_->Baton({"logs", std::to_string(first)}).out);
        return !steps.empty() && steps.back() > 10 && steps.back() % 10 >= 2 &&
               steps.back() % 10 <= 5;
      },
      std::chrono::seconds(60)));
  CommandResult sig = cluster_->Baton({"signal", std::to_string(first)});
  ASSERT_EQ(sig.exit_code, 0) << sig.err;
  ASSERT_TRUE(cluster_->WaitForState(first, "JOB_STATE_SUCCEEDED"))
      << "saved and exited 0" << cluster_->Describe(first);
  std::string log1 = cluster_->Baton({"logs", std::to_string(first)}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log1, m, std::regex("evicted: saved step (\\d+)"))) << log1;
  int saved = std::stoi(m[1]);
  EXPECT_NE(saved % 10, 0) << "saved between two periodic saves";

  uint64_t second = submit(/*slow=*/false);
  ASSERT_TRUE(cluster_->WaitForState(second, "JOB_STATE_SUCCEEDED")) << cluster_->Describe(second);
  std::string log2 = cluster_->Baton({"logs", std::to_string(second)}).out;
  EXPECT_NE(log2.find("restored step " + std::to_string(saved)), std::string::npos) << log2;
  std::vector<int> steps = Steps(log1);
  std::vector<int> more = Steps(log2);
  ASSERT_FALSE(more.empty());
  EXPECT_EQ(more.front(), saved + 1) << "the relaunch starts right after the committed step";
  steps.insert(steps.end(), more.begin(), more.end());
  std::vector<int> expected(60);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(steps, expected) << "no loss line missing or repeated";
  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags));
}

TEST_F(MultiNode, DirectGangSeesConsistentRanksAndGetsSignals) {
  CommandResult sub = cluster_->Baton(
      {"submit", "-q", "--nodes", "2", "--ranks-per-node", "2", "--cpus", "1", "--", "sh", "-c",
       "echo vars $RANK $LOCAL_RANK $WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT; "
       "trap 'echo got USR1; exit 0' USR1; while :; do sleep 0.05; done"});
  uint64_t id = ClusterClient::SubmittedId(sub.out);
  ASSERT_TRUE(cluster_->WaitForState(id, "JOB_STATE_RUNNING"));
  auto vars = [&] {
    std::string all = cluster_->Baton({"logs", std::to_string(id)}).out +
                      cluster_->Baton({"logs", std::to_string(id), "--node", "n2"}).out;
    std::vector<std::string> out;
    for (const auto& l : Lines(all)) {
      if (l.find("vars ") != std::string::npos) out.push_back(l);
    }
    return out;
  };
  ASSERT_TRUE(WaitFor([&] { return vars().size() == 4; }, std::chrono::seconds(20)));
  std::set<int> ranks;
  std::string port;
  for (const auto& l : vars()) {
    std::istringstream in(l.substr(l.find("vars ") + 5));
    int rank, local, world, group;
    std::string addr, p;
    in >> rank >> local >> world >> group >> addr >> p;
    ranks.insert(rank);
    EXPECT_EQ(l.rfind("[rank " + std::to_string(rank) + "]", 0), 0u) << l;
    EXPECT_EQ(local, rank % 2) << l;
    EXPECT_EQ(group, rank / 2) << l;
    EXPECT_EQ(world, 4) << l;
    EXPECT_EQ(addr, cluster_->NodeAddress(1)) << "MASTER_ADDR is the first node";
    if (port.empty()) port = p;
    EXPECT_EQ(p, port);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  ASSERT_EQ(cluster_->Baton({"signal", std::to_string(id)}).exit_code, 0);
  ASSERT_TRUE(cluster_->WaitForState(id, "JOB_STATE_SUCCEEDED")) << "every rank caught USR1";
  std::string got = cluster_->Baton({"logs", std::to_string(id)}).out +
                    cluster_->Baton({"logs", std::to_string(id), "--node", "n2"}).out;
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(got.find("[rank " + std::to_string(r) + "] got USR1"), std::string::npos) << got;
  }
}

// Every process of a gang, in both modes and on every node, is its submitter's: uid,
// gid and groups, no_new_privs — the ranks and, in mpi mode, their parents (mpirun on the
// first node, Open MPI's daemons started through Exec on the others). (A direct rank's
// parent is its keeper, the agent's, which runs no job code.)
TEST_F(MultiNode, EveryProcessOfAGangRunsAsItsOwnerWithNoNewPrivs) {
  passwd* alice = getpwnam(kAlice);
  ASSERT_NE(alice, nullptr);
  auto probe = [](const std::string& procs) {
    return "for p in " + procs +
           "; do printf 'who %s %s %s %s\n' \"$(hostname -I | cut -d' ' -f1)\" "
           "\"$(awk '/^Uid:/{print $2\"/\"$3\"/\"$4\"/\"$5}' /proc/$p/status)\" "
           "\"$(awk '/^Gid:/{print $2}' /proc/$p/status)\" "
           "\"$(awk '/^NoNewPrivs:/{print $2}' /proc/$p/status)\"; done";
  };
  for (const std::string mode : {"direct", "mpi"}) {
    CommandResult r = cluster_->Baton({"submit", "--wait", "--mode", mode, "--nodes", "2", "--cpus",
                                       "1", "--restart", "never", "--", "sh", "-c",
                                       probe(mode == "mpi" ? "self $PPID" : "self")});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    uint64_t id = ClusterClient::SubmittedId(r.out);
    std::string logs =
        cluster_->Baton({"logs", std::to_string(id)}).out +
        (mode == "direct" ? cluster_->Baton({"logs", std::to_string(id), "--node", "n2"}).out : "");
    std::set<std::string> hosts;
    int lines = 0;
    std::string uid = std::to_string(alice->pw_uid);
    for (const auto& l : Lines(logs)) {
      size_t at = l.find("who ");
      if (at == std::string::npos) continue;
      std::istringstream in(l.substr(at + 4));
      std::string host, uids, gid, nnp;
      in >> host >> uids >> gid >> nnp;
      hosts.insert(host);
      ++lines;
      EXPECT_EQ(uids, uid + "/" + uid + "/" + uid + "/" + uid) << mode << ": " << l;
      EXPECT_EQ(gid, std::to_string(alice->pw_gid)) << mode << ": " << l;
      EXPECT_EQ(nnp, "1") << mode << ": " << l;
    }
    EXPECT_EQ(lines, mode == "mpi" ? 4 : 2) << mode << ": " << logs;
    EXPECT_EQ(hosts, (std::set<std::string>{cluster_->NodeAddress(1), cluster_->NodeAddress(2)}))
        << mode;
  }
}

// Per-rank binding on this machine's real topology, both modes: every rank of a 2x2 gang
// runs where `baton status` says its binding is (the agents' report): Cpus_allowed_list,
// Mems_allowed_list, and its memory bound (numa_maps) exactly when it has a NUMA node. In
// mpi mode the ranks bind themselves from their own node's plan (BATON_NODE shows the
// per-node environment reached them).
TEST_F(MultiNode, EveryRankRunsWhereStatusSaysItsBindingIs) {
  const std::string probe =
      "printf 'bound %s %s %s %s %s\\n' \"$BATON_NODE\" "
      "\"${LOCAL_RANK:-$OMPI_COMM_WORLD_LOCAL_RANK}\" "
      "\"$(grep Cpus_allowed_list: /proc/self/status | cut -f2)\" "
      "\"$(grep Mems_allowed_list: /proc/self/status | cut -f2)\" "
      "\"$(grep -c ' bind:' /proc/self/numa_maps)\"";
  for (const std::string mode : {"direct", "mpi"}) {
    CommandResult r = cluster_->Baton({"submit", "--wait", "--mode", mode, "--nodes", "2",
                                       "--ranks-per-node", "2", "--gpus", "2", "--cpus", "1",
                                       "--restart", "never", "--", "sh", "-c", probe});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    std::string id = std::to_string(ClusterClient::SubmittedId(r.out));
    std::string status = cluster_->Baton({"status", id}).out;
    std::string logs = cluster_->Baton({"logs", id}).out +
                       (mode == "direct" ? cluster_->Baton({"logs", id, "--node", "n2"}).out : "");
    if (status.find(" mems ") == std::string::npos) {
      GTEST_SKIP() << "the agents run without cgroup isolation here: " << status;
    }
    EXPECT_NE(cluster_->Baton({"status", id, "--json"}).out.find("\"mems\""), std::string::npos)
        << "the bindings are in status --json";
    for (int rank = 0; rank < 4; ++rank) {
      std::string node = rank < 2 ? "n1" : "n2";
      std::smatch m;
      std::regex said("rank " + std::to_string(rank) +
                      " (numa (\\d+)|spans) cpus (\\S+) mems (\\S+?)[;\n]");
      ASSERT_TRUE(std::regex_search(status, m, said)) << mode << " rank " << rank << ":\n"
                                                      << status;
      bool numa = m[2].matched;
      std::regex ran("\\[rank " + std::to_string(rank) + "\\] bound " + node + " " +
                     std::to_string(rank % 2) + " " + m[3].str() + " " + m[4].str() + " (\\d+)");
      std::smatch got;
      ASSERT_TRUE(std::regex_search(logs, got, ran))
          << mode << " rank " << rank << " does not run where status says:\n"
          << status << logs;
      EXPECT_EQ(got[1].str() != "0", numa) << mode << " rank " << rank << ": its memory policy\n"
                                           << logs;
    }
  }
}

TEST_F(MultiNode, ARootJobIsRefusedByDefault) {
  CommandResult r = cluster_->Baton({"submit", "--tenant", "vision", "--", "true"}, kRoot);
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.err.find("tenants[].allow_root"), std::string::npos) << r.err;
}

// GPUs are fenced by device number: a job that unsets CUDA_VISIBLE_DEVICES still opens
// only its own GPU's device node (fake nodes here: an allowed open fails ENXIO for want
// of a driver, a refused one EPERM).
TEST_F(MultiNode, AJobCannotOpenAnotherGpuEvenWithoutCudaVisibleDevices) {
  std::string devs = cluster_->shared_dir() + "/dev" + std::to_string(getpid());
  ASSERT_EQ(mkdir(devs.c_str(), 0755), 0);
  for (int m : {0, 1}) {
    std::string node = devs + "/nvidia" + std::to_string(m);
    ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(195, m)), 0) << node;
    chmod(node.c_str(), 0666);
  }
  CommandResult r = cluster_->Baton(
      {"submit", "--wait", "--gpus", "1", "--cpus", "1", "--restart", "never", "--", "sh", "-c",
       "echo visible=$CUDA_VISIBLE_DEVICES; unset CUDA_VISIBLE_DEVICES; cat " + devs +
           "/nvidia0; cat " + devs + "/nvidia1; true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string log =
      cluster_->Baton({"logs", std::to_string(ClusterClient::SubmittedId(r.out))}).out;
  size_t at = log.find("visible=GPU-fake-");
  ASSERT_NE(at, std::string::npos) << log;
  int mine = log[log.find('\n', at) - 1] - '0';  // GPU-fake-<node>-<index>: index = minor
  ASSERT_TRUE(mine == 0 || mine == 1) << log;
  EXPECT_NE(log.find("nvidia" + std::to_string(mine) + ": No such device or address"),
            std::string::npos)
      << "its own GPU is open to it: " << log;
  EXPECT_NE(log.find("nvidia" + std::to_string(1 - mine) + ": Operation not permitted"),
            std::string::npos)
      << "the other GPU is not: " << log;
}

// A fork bomb stops at its attempt's pids limit (the policy gives class experiment 64);
// the node's other job and its agent carry on.
TEST_F(MultiNode, AForkBombStopsAtItsPidsLimitAndTheNodeCarriesOn) {
  CommandResult neighbour = cluster_->Baton({"submit", "-q", "--nodes", "2", "--cpus", "0.5",
                                             "--restart", "never", "--", "sleep", "600"});
  uint64_t calm = ClusterClient::SubmittedId(neighbour.out);
  ASSERT_TRUE(cluster_->WaitForState(calm, "JOB_STATE_RUNNING")) << cluster_->Describe(calm);
  CommandResult sub = cluster_->Baton({"submit", "-q", "--class", "experiment", "--cpus", "0.5",
                                       "--restart", "never", "--", "sh", "-c",
                                       "(for i in $(seq 500); do sleep 600 & done) 2>/dev/null; "
                                       "echo bomb-stopped; exec sleep 600"});
  uint64_t bomb = ClusterClient::SubmittedId(sub.out);
  ASSERT_TRUE(cluster_->WaitForState(bomb, "JOB_STATE_RUNNING")) << cluster_->Describe(bomb);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", std::to_string(bomb)}).out.find("bomb-stopped") !=
               std::string::npos;
      },
      std::chrono::seconds(30)))
      << cluster_->Describe(bomb);
  std::string node = cluster_->GetJob(bomb)->attempts(0).placement(0).node();
  std::string cg = "/sys/fs/cgroup/pids/" + cluster_->name() + "/" + node + "/job-" +
                   std::to_string(bomb) + "-a1";
  EXPECT_EQ(ReadFile(cg + "/pids.max"), "64\n");
  std::string current = ReadFile(cg + "/pids.current");
  ASSERT_FALSE(current.empty()) << cg;
  EXPECT_LE(std::stoi(current), 64);
  EXPECT_GE(std::stoi(current), 32) << "it did fork until the limit";
  EXPECT_EQ(cluster_->StateOf(calm), "JOB_STATE_RUNNING") << "the neighbour runs on";
  EXPECT_TRUE(cluster_->WaitForReadyNodes(2, std::chrono::seconds(5))) << "the agents too";
  EXPECT_EQ(cluster_->Baton({"cancel", std::to_string(bomb)}).exit_code, 0);
  EXPECT_TRUE(cluster_->WaitForState(bomb, "JOB_STATE_CANCELLED")) << cluster_->Describe(bomb);
  EXPECT_EQ(cluster_->Baton({"cancel", std::to_string(calm)}).exit_code, 0);
}

TEST_F(MultiNode, ARankThatDiesFailsTheGangAndLeavesNoOrphans) {
  std::string marker = std::to_string(300 + getpid() % 1000) + ".25";
  CommandResult r = cluster_->Baton(
      {"submit", "--wait", "--mode", "mpi", "--nodes", "2", "--ranks-per-node", "2", "--cpus", "1",
       "--restart", "never", "--", "sh", "-c",
       "if [ $OMPI_COMM_WORLD_RANK = 3 ]; then sleep 0.5; exit 5; fi; sleep " + marker});
  EXPECT_NE(r.exit_code, 0) << "the gang failed";
  uint64_t id = ClusterClient::SubmittedId(r.out);
  EXPECT_EQ(cluster_->StateOf(id), "JOB_STATE_FAILED");
  EXPECT_TRUE(WaitFor([&] { return NoProcessWith("sleep " + marker); }, std::chrono::seconds(10)))
      << "a rank of the failed gang is still running";
}

TEST_F(MultiNode, ExecRefusesAWrongSecretAndAnEndedAttempt) {
  CommandResult sub = cluster_->Baton(
      {"submit", "-q", "--mode", "mpi", "--cpus", "1", "--grace", "1s", "--", "sleep", "60"});
  uint64_t id = ClusterClient::SubmittedId(sub.out);
  ASSERT_TRUE(cluster_->WaitForState(id, "JOB_STATE_RUNNING"));
  std::string host = cluster_->NodeAddress(1);
  auto exec = [&](const std::string& secret) {
    return testing::RunProcess({Bin("baton-agent"), "exec", host, "true"},
                               {{"BATON_JOB_ID", std::to_string(id)},
                                {"BATON_ATTEMPT", "1"},
                                {"BATON_EXEC_SECRET", secret},
                                {"BATON_EXEC_HOSTS", host + "=n1@" + host + ":7071"},
                                {"BATON_EXEC_CA", cluster_->state_dir() + "/tls/ca.crt"}});
  };
  CommandResult wrong = exec("not-the-secret");
  EXPECT_EQ(wrong.exit_code, 255);
  EXPECT_NE(wrong.err.find("wrong exec secret"), std::string::npos) << wrong.err;
  ASSERT_EQ(cluster_->Baton({"cancel", std::to_string(id)}).exit_code, 0);
  ASSERT_TRUE(cluster_->WaitForState(id, "JOB_STATE_CANCELLED"));
  CommandResult ended = exec("not-the-secret");
  EXPECT_EQ(ended.exit_code, 255);
  EXPECT_NE(ended.err.find("does not run"), std::string::npos) << ended.err;
}

TEST(NcclBootstrap, EveryRankGetsRankZerosUniqueIdWithoutAGpu) {
  if (access(Bin("nccl_bootstrap").c_str(), X_OK) != 0) {
    GTEST_SKIP() << "built without NCCL (no CUDA toolkit found)";
  }
  CommandResult r = testing::RunProcess(
      {"mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp", "--mca",
       "btl_tcp_if_include", "lo", "-np", "2", Bin("nccl_bootstrap")},
      {}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch a, b;
  std::string out = r.out;
  ASSERT_TRUE(std::regex_search(out, a, std::regex("rank 0 id ([0-9a-f]+)"))) << out;
  ASSERT_TRUE(std::regex_search(out, b, std::regex("rank 1 id ([0-9a-f]+)"))) << out;
  EXPECT_EQ(a[1], b[1]);
}

TEST(NcclAllReduce, OneRankTrainsOnTheGpuWithNccl) {
  if (access("/dev/nvidiactl", F_OK) != 0) {
    GTEST_SKIP() << "no NVIDIA device here (/dev/nvidiactl missing); the MPI path of the same "
                    "reducer is covered by the train_mlp tests";
  }
  if (access(Bin("nccl_bootstrap").c_str(), X_OK) != 0) GTEST_SKIP() << "built without NCCL";
  TempDir dir;
  CommandResult r =
      testing::RunProcess({"mpirun", "--allow-run-as-root", "-np", "1", Bin("train_mlp"), "--steps",
                           "5", "--checkpoint-dir", dir.path()},
                          {}, std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gradients all-reduced with nccl"), std::string::npos) << r.out;
  EXPECT_FALSE(TrainMlpFinalHash(r.out).empty());
}

}  // namespace
}  // namespace baton::testing
