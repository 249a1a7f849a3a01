#include "tests/integration/local_cluster.h"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/munge.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/api.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"

namespace baton::testing {

std::string Bin(const std::string& name) { return std::string(BATON_BIN_DIR) + "/" + name; }

LocalCluster::LocalCluster(int agents, int gpus, const std::string& policy_yaml) {
  security_ = std::make_unique<TestSecurity>(dir());
  EXPECT_TRUE(security_->ok()) << security_->why();
  client_env_ = security_->ClientEnv();
  mkdir(shared_dir().c_str(), 0755);
  MakeShared(shared_dir());
  std::ofstream(dir() + "/policy.yaml") << (policy_yaml.empty() ? TestPolicyYaml() : policy_yaml);
  StartCoordinator();
  for (int i = 0; i < agents; ++i) StartAgent(i, gpus);
  EXPECT_TRUE(WaitForReadyNodes(agents, std::chrono::seconds(20)))
      << "agents did not register; see " << dir();
}

LocalCluster::~LocalCluster() {
  for (auto& a : agents_) a->Signal(SIGTERM);
  for (auto& a : agents_) a->Wait(std::chrono::seconds(10));
  if (coordinator_) {
    coordinator_->Signal(SIGTERM);
    coordinator_->Wait(std::chrono::seconds(10));
  }
}

void LocalCluster::StartCoordinator() {
  std::string ready = dir() + "/coordinator.addr";
  std::string web_ready = dir() + "/web.addr";
  std::string listen = address_.empty() ? "127.0.0.1:0" : address_;
  unlink(ready.c_str());
  unlink(web_ready.c_str());
  std::vector<std::string> argv = {Bin("baton-coordinator"),
                                   "--listen",
                                   listen,
                                   "--data-dir",
                                   dir() + "/coordinator",
                                   "--ready-file",
                                   ready,
                                   "--policy",
                                   dir() + "/policy.yaml",
                                   "--web-listen",
                                   web_address_.empty() ? "127.0.0.1:0" : web_address_,
                                   "--web-ready-file",
                                   web_ready};
  for (auto& f : TestCoordinatorTimings()) argv.push_back(f);
  for (auto& f : security_->CoordinatorFlags()) argv.push_back(f);
  coordinator_ =
      std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{},
                                   dir() + "/coordinator." + std::to_string(coordinator_starts_++));
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(ready).empty(); }, std::chrono::seconds(20)))
      << "coordinator did not start: " << ReadFile(dir() + "/coordinator.0.err");
  std::string addr = ReadFile(ready);
  address_ = addr.substr(0, addr.find('\n'));
  std::string web = ReadFile(web_ready);
  web_address_ = web.substr(0, web.find('\n'));
}

bool LocalCluster::AddAgent(int gpus, const std::vector<std::string>& flags) {
  const int i = static_cast<int>(agents_.size());
  StartAgent(i, gpus, flags);
  return WaitForReadyNodes(i + 1, std::chrono::seconds(20));
}

void LocalCluster::StartAgent(int i, int gpus, const std::vector<std::string>& flags) {
  std::string name = "n" + std::to_string(i + 1);
  std::vector<std::string> argv = {
      Bin("baton-agent"), "--name", name, "--coordinator", address_, "--data-dir",
      dir() + "/" + name, "--fake-gpus", std::to_string(gpus),
      // What the fake GPUs report as busy (GpuUtilizationFile),
      // sampled every second.
      "--fake-gpu-utilization", GpuUtilizationFile(i), "--stats-interval", "1s",
      // Node names repeat across concurrent test runs on one
      // host: isolation is tested with unique names of its own.
      "--isolation", "none"};
  for (auto& f : security_->AgentFlags(name, {"IP:127.0.0.1"})) argv.push_back(f);
  argv.insert(argv.end(), flags.begin(), flags.end());
  agents_.push_back(
      std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{}, dir() + "/" + name));
}

std::string LocalCluster::GpuUtilizationFile(int i) const {
  return dir() + "/n" + std::to_string(i + 1) + ".gpu-utilization";
}

void LocalCluster::KillCoordinator(int sig) {
  coordinator_->Signal(sig);
  coordinator_->Wait(std::chrono::seconds(10));
}

std::map<std::string, std::string> ClusterClient::ClientEnv() const {
  std::map<std::string, std::string> env = client_env_;
  env["BATON_COORDINATOR"] = address_;
  return env;
}

CommandResult ClusterClient::Baton(std::vector<std::string> args, const std::string& user,
                                   std::map<std::string, std::string> env) {
  std::vector<std::string> argv = AsUser(user);
  argv.push_back(user == kRoot ? Bin("baton") : StagedBin("baton"));
  argv.insert(argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : ClientEnv()) env.emplace(k, v);
  return RunProcess(argv, env);
}

std::optional<v1::Job> ClusterClient::GetJob(uint64_t job) {
  CommandResult r = Baton({"status", std::to_string(job), "--json"}, kRoot);
  if (r.exit_code != 0) return std::nullopt;
  v1::Job parsed;
  if (!google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok()) return std::nullopt;
  return parsed;
}

std::string ClusterClient::StateOf(uint64_t job) {
  std::optional<v1::Job> parsed = GetJob(job);
  return parsed ? v1::JobState_Name(parsed->state()) : "";
}

bool ClusterClient::WaitForState(uint64_t job, const std::string& state,
                                 std::chrono::milliseconds timeout) {
  static const std::set<std::string> kFinal = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED",
                                               "JOB_STATE_CANCELLED"};
  std::string seen;
  bool reached = WaitFor(
      [&] {
        seen = StateOf(job);
        return seen == state || (kFinal.count(seen) > 0 && kFinal.count(state) > 0);
      },
      timeout);
  return reached && seen == state;
}

std::string ClusterClient::Describe(uint64_t job) {
  std::string id = std::to_string(job);
  CommandResult status = Baton({"status", id}, kRoot);
  CommandResult logs = Baton({"logs", id}, kRoot);
  std::string tail = logs.out;
  size_t pos = tail.size();
  for (int lines = 0; lines <= 40 && pos != std::string::npos && pos > 0; ++lines) {
    pos = tail.rfind('\n', pos - 1);
  }
  if (pos != std::string::npos && pos > 0) tail = "…\n" + tail.substr(pos + 1);
  return "\n--- baton status " + id + "\n" + status.out + status.err + "--- baton logs " + id +
         " (last lines)\n" + tail + logs.err;
}

bool ClusterClient::WaitForReadyNodes(int n, std::chrono::milliseconds timeout) {
  return WaitFor(
      [&] {
        CommandResult r = Baton({"nodes", "--json"}, kRoot);
        int ready = 0;
        std::istringstream in(r.out);
        std::string line;
        while (std::getline(in, line)) ready += line.find("NODE_STATE_READY") != std::string::npos;
        return ready >= n;
      },
      timeout);
}

std::string TrainMlpFinalHash(const std::string& log) {
  size_t pos = log.find("final weights hash ");
  if (pos == std::string::npos) return "";
  pos += 19;
  return log.substr(pos, log.find('\n', pos) - pos);
}

std::string UninterruptedTrainMlpHash(const std::vector<std::string>& flags, int ranks) {
  TempDir dir;
  std::vector<std::string> argv = {"mpirun",
                                   "--allow-run-as-root",
                                   "--oversubscribe",
                                   "--mca",
                                   "btl",
                                   "self,tcp",
                                   "--mca",
                                   "btl_tcp_if_include",
                                   "lo",
                                   "-np",
                                   std::to_string(ranks),
                                   Bin("train_mlp"),
                                   "--checkpoint-dir",
                                   dir.path()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  CommandResult r = RunProcess(argv, {}, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return TrainMlpFinalHash(r.out);
}

uint64_t ClusterClient::SubmittedId(const std::string& out) {
  std::string line = out.substr(0, out.find('\n'));
  if (line.rfind("Submitted array ", 0) == 0) {  // "Submitted array 17 (64 tasks: …)"
    line = line.substr(0, line.find(" ("));
  }
  size_t pos = line.find_last_of(' ');
  std::string num = pos == std::string::npos ? line : line.substr(pos + 1);
  return num.empty() || num.find_first_not_of("0123456789") != std::string::npos ? 0
                                                                                 : std::stoull(num);
}

NetnsCluster::NetnsCluster(int nodes, int gpus, std::string coordinator_args,
                           std::string name_suffix, int ha_replicas,
                           std::map<std::string, std::string> env)
    : coordinator_args_(std::move(coordinator_args)),
      ha_replicas_(ha_replicas),
      extra_env_(std::move(env)) {
  if (geteuid() != 0) {
    why_ = "needs root to create network namespaces";
    return;
  }
  if (std::string missing = MissingTestUsers(); !missing.empty()) {
    why_ = missing;
    return;
  }
  // A subnet (and names) no other cluster on this machine uses: tag T is ours while we
  // hold the lock on /tmp/baton-netns-T.lock (released when this process ends, however).
  int salt = 0;
  for (char c : name_suffix) salt = (salt * 31 + static_cast<unsigned char>(c)) % 1000;
  int tag = -1;
  for (int i = 0; i < 200 && tag < 0; ++i) {
    int t = (getpid() + salt * 37 + i) % 200 + 20;
    int fd = open(("/tmp/baton-netns-" + std::to_string(t) + ".lock").c_str(),
                  O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
      tag = t;
      lock_fd_ = fd;
    } else if (fd >= 0) {
      close(fd);
    }
  }
  if (tag < 0) {
    why_ = "no free namespace cluster subnet (all 200 locks taken)";
    return;
  }
  name_ = "bt" + std::to_string(tag) + name_suffix;
  subnet_ = "10.78." + std::to_string(tag);
  state_ = "/tmp/" + name_ + "-netns";
  if (coordinator_args_.find("--policy") == std::string::npos) {
    policy_file_ = "/tmp/" + name_ + "-policy.yaml";
    std::ofstream(policy_file_) << TestPolicyYaml();
    coordinator_args_ += " --policy " + policy_file_;
  }
  RunProcess({std::string(BATON_SOURCE_DIR) + "/scripts/netns-cluster.sh", "down"}, ScriptEnv());
  guard_ = std::make_unique<TeardownGuard>(
      std::vector<std::string>{std::string(BATON_SOURCE_DIR) + "/scripts/netns-cluster.sh", "down"},
      ScriptEnv(), lock_fd_);
  CommandResult up = RunProcess({std::string(BATON_SOURCE_DIR) + "/scripts/netns-cluster.sh", "up",
                                 std::to_string(nodes), std::to_string(gpus)},
                                ScriptEnv(), std::chrono::seconds(60));
  if (up.exit_code != 0) {
    why_ = "netns-cluster.sh up failed: " + up.err;
    return;
  }
  std::string addr = ReadFile(state_ + "/coordinator.addr");
  address_ = addr.substr(0, addr.find('\n'));
  client_env_ = {{"BATON_CA", state_ + "/tls/ca.crt"},
                 {"BATON_MUNGE_SOCKET", state_ + "/munge/munge.socket"}};
  ok_ = !address_.empty();
}

NetnsCluster::~NetnsCluster() {
  if (!name_.empty()) {
    RunProcess({std::string(BATON_SOURCE_DIR) + "/scripts/netns-cluster.sh", "down"}, ScriptEnv());
  }
  guard_.reset();  // torn down already: the guard just ends
  if (!policy_file_.empty()) unlink(policy_file_.c_str());
  if (lock_fd_ >= 0) close(lock_fd_);
}

bool NetnsCluster::Script(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {std::string(BATON_SOURCE_DIR) + "/scripts/netns-cluster.sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunProcess(argv, ScriptEnv(), std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 0) << "netns-cluster.sh " << args[0] << ": " << r.err;
  return r.exit_code == 0;
}

bool NetnsCluster::RestartCoordinator(const std::string& signal) {
  return Script({"restart-coordinator", signal});
}
bool NetnsCluster::StopCoordinator(const std::string& signal) {
  return Script({"stop-coordinator", signal});
}
bool NetnsCluster::StartCoordinator() { return Script({"start-coordinator"}); }
bool NetnsCluster::RestartAgent(int i, const std::string& signal) {
  return Script({"restart-agent", std::to_string(i), signal});
}
bool NetnsCluster::KillAgent(int i, const std::string& signal) {
  return Script({"kill-agent", std::to_string(i), signal});
}
bool NetnsCluster::Partition(int i) { return Script({"partition", std::to_string(i)}); }
bool NetnsCluster::StopReplica(int k, const std::string& signal) {
  return Script({"stop-replica", std::to_string(k), signal});
}
bool NetnsCluster::StartReplica(int k) { return Script({"start-replica", std::to_string(k)}); }

int NetnsCluster::HaLeader(std::chrono::milliseconds timeout) {
  int leader = 0;
  WaitFor(
      [&] {
        CommandResult r = Baton({"admin", "ha", "status", "--json", "--timeout", "3s"}, kRoot);
        auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
        if (r.exit_code != 0 || j.is_discarded()) return false;
        std::string name = j.value("leader", "");
        if (name.size() < 2 || name[0] != 'c') return false;
        leader = std::atoi(name.c_str() + 1);
        return leader > 0;
      },
      timeout);
  return leader;
}
bool NetnsCluster::Heal(int i) { return Script({"heal", std::to_string(i)}); }

std::string NetnsCluster::NodeAddress(int i) const {
  return subnet_ + "." + std::to_string(10 + i);
}

std::map<std::string, std::string> NetnsCluster::ScriptEnv() const {
  std::map<std::string, std::string> env = {{"BATON_NETNS_NAME", name_},
                                            {"BATON_NETNS_SUBNET", subnet_},
                                            {"BATON_BIN", BATON_BIN_DIR},
                                            {"BATON_COORDINATOR_ARGS", coordinator_args_},
                                            {"BATON_NETNS_HA", std::to_string(ha_replicas_)}};
  env.insert(extra_env_.begin(), extra_env_.end());
  // Set BATON_NETNS_KEEP_LOGS=DIR when running a test to keep the daemons' logs.
  if (const char* keep = getenv("BATON_NETNS_KEEP_LOGS")) {
    env["BATON_NETNS_KEEP_LOGS"] = std::string(keep) + "/" + name_;
  }
  return env;
}

std::vector<std::string> TestCoordinatorTimings() {
  return {"--lease", "4000ms", "--heartbeat", "500ms", "--lost-margin", "2000ms"};
}

int64_t UnixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<v1::Coordinator::Stub> LocalCluster::ApiStub() {
  // Never plaintext: without the CA this throws and the test fails.
  auto creds = ChannelCredentials(LoadTls({security_->ca(), "", ""}, false).value(), coordinator());
  grpc::ChannelArguments args;
  SetClientMessageLimits(&args);
  return v1::Coordinator::NewStub(grpc::CreateCustomChannel(coordinator(), creds.value(), args));
}

std::string LocalCluster::MungeCredential(std::string_view payload, int ttl) {
  auto cred = MungeEncode(security_->munge_socket(), payload, ttl);
  EXPECT_TRUE(cred.ok()) << cred.status();
  return cred.ok() ? *cred : "";
}

std::string LocalCluster::MungeCredential() { return MungeCredential(kMungeAudience); }

}  // namespace baton::testing
