#include "tests/integration/ha_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/ids.h"
#include "nlohmann/json.hpp"
#include "proto/api.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"

namespace baton::testing {

namespace {

// True when nothing listens on loopback port `port`.
bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool free = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0;
  close(fd);
  return free;
}

}  // namespace

// Every job the cluster lists now (any state): id -> name.
std::map<uint64_t, std::string> ListedJobs(ClusterClient& c) {
  std::map<uint64_t, std::string> out;
  CommandResult r = c.Baton({"queue", "--all", "--json", "--timeout", "60s"}, kRoot);
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("id")) continue;
    out[std::stoull(j["id"].get<std::string>())] =
        j.contains("spec") ? j["spec"].value("name", "") : "";
  }
  return out;
}

HaCluster::HaCluster(HaClusterOptions o)
    : ttl_(o.ttl), replica_flags_(o.replica_flags), proxied_(o.proxied) {
  const int replicas = o.replicas, agents = o.agents;
  etcd_ = std::make_unique<EtcdCluster>(o.etcd_members);
  if (!etcd_->ok()) {
    why_ = etcd_->why();
    return;
  }
  if (proxied_ >= 0) {
    if (access("/usr/bin/socat", X_OK) != 0) {
      why_ = "socat is not installed (scripts/setup.sh installs it)";
      return;
    }
    for (int m = 0; m < etcd_->size(); ++m) {
      std::string url = etcd_->endpoint(m);
      proxy_ports_.emplace_back(FreePort(), std::stoi(url.substr(url.rfind(':') + 1)));
    }
    HealEtcd();
  }
  security_ = std::make_unique<TestSecurity>(dir());
  if (!security_->ok()) {
    why_ = security_->why();
    return;
  }
  client_env_ = security_->ClientEnv();
  mkdir(shared_dir().c_str(), 0755);
  MakeShared(shared_dir());
  std::ofstream(dir() + "/policy.yaml") << TestPolicyYaml();
  for (int i = 0; i < replicas; ++i) {
    ports_.push_back(FreePort());
    address_ += (i ? "," : "") + ReplicaAddress(i);
  }
  replicas_.resize(replicas);
  starts_.resize(replicas);
  if (o.seed_jobs > 0) {
    if (!SeedFromASingleCoordinator(o.seed_jobs)) return;
    StartReplica(0);  // it creates the cluster from its data dir before anyone else joins
    if (Leader() != 0) {
      why_ = "the seeded replica did not come to lead; see " + dir();
      return;
    }
  }
  for (int i = o.seed_jobs > 0 ? 1 : 0; i < replicas; ++i) StartReplica(i);
  if (Leader() < 0) {
    why_ = "no replica came to lead; see " + dir();
    return;
  }
  for (int i = 0; i < agents; ++i) StartAgent(i);
  if (agents > 0 && !WaitForReadyNodes(agents, std::chrono::seconds(30))) {
    why_ = "agents did not register; see " + dir();
  }
}

HaCluster::~HaCluster() {
  agents_.clear();
  replicas_.clear();
  CutOffFromEtcd();
}

void HaCluster::HealEtcd() {
  proxies_.clear();
  for (auto [listen, target] : proxy_ports_) {
    proxies_.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{
            "/usr/bin/socat",
            "TCP-LISTEN:" + std::to_string(listen) + ",bind=127.0.0.1,fork,reuseaddr",
            "TCP:127.0.0.1:" + std::to_string(target)},
        std::map<std::string, std::string>{}, ""));
  }
  for (auto [listen, target] : proxy_ports_) {
    WaitFor([&, port = listen] { return FreePort() != 0 && !PortFree(port); },
            std::chrono::seconds(5));
  }
}

void HaCluster::CutOffFromEtcd() {
  // socat forks a child per connection: every one of them goes, so established
  // connections are cut too, not only new ones.
  for (auto [listen, target] : proxy_ports_) {
    RunProcess({"/usr/bin/pkill", "-KILL", "-f", "TCP-LISTEN:" + std::to_string(listen) + ","}, {});
  }
  for (auto& p : proxies_) p->Wait(std::chrono::seconds(5));
  proxies_.clear();
}

std::string HaCluster::ReplicaAddress(int i) const {
  return "127.0.0.1:" + std::to_string(ports_[i]);
}

pid_t HaCluster::ReplicaPid(int i) const { return replicas_[i] ? replicas_[i]->pid() : -1; }

std::string HaCluster::ReplicaLog(int i) const {
  return ReadFile(dir() + "/c" + std::to_string(i) + "." + std::to_string(starts_[i] - 1) + ".err");
}

std::string HaCluster::EtcdEndpointsOf(int i) const {
  if (i != proxied_) return etcd_->endpoints();
  std::string out;
  for (auto [listen, target] : proxy_ports_) {
    out += (out.empty() ? "" : ",") + std::string("http://127.0.0.1:") + std::to_string(listen);
  }
  return out;
}

bool HaCluster::SeedFromASingleCoordinator(int jobs) {
  StartReplica(0, /*ha=*/false);
  if (Leader() != 0) {
    why_ = "the single coordinator did not come up; see " + dir();
    return false;
  }
  for (int j = 0; j < jobs; ++j) {
    CommandResult r = Baton(
        {"submit", "-q", "--gpus", "0", "--name", "seed" + std::to_string(j), "--", "sleep", "1"});
    if (r.exit_code != 0) {
      why_ = "seed submit: " + r.err;
      return false;
    }
  }
  replicas_[0]->Signal(SIGTERM);
  replicas_[0]->Wait(std::chrono::seconds(10));
  replicas_[0].reset();
  return true;
}

nlohmann::json HaCluster::ReplicaStatus(int i) {
  CommandResult r = Baton({"admin", "ha", "status", "--json"}, kRoot);
  auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (r.exit_code != 0 || j.is_discarded() || !j.contains("replicas")) return {};
  for (const auto& rep : j["replicas"]) {
    if (rep.value("name", "") == "c" + std::to_string(i)) {
      nlohmann::json out = rep;
      out["log_index"] = j.value("logIndex", "0");
      out["log_first_index"] = j.value("logFirstIndex", "0");
      return out;
    }
  }
  return {};
}

void HaCluster::StartReplica(int i, bool ha) {
  std::string name = "c" + std::to_string(i);
  std::vector<std::string> argv = {
      Bin("baton-coordinator"), "--listen", ReplicaAddress(i),     "--data-dir",
      dir() + "/" + name,       "--policy", dir() + "/policy.yaml"};
  for (auto& f : TestCoordinatorTimings()) argv.push_back(f);
  if (ha) {
    argv.insert(argv.end(), {"--ha-etcd", EtcdEndpointsOf(i), "--ha-name", name, "--ha-ttl", ttl_});
    argv.insert(argv.end(), replica_flags_.begin(), replica_flags_.end());
  }
  for (auto& f : security_->CoordinatorFlags()) argv.push_back(f);
  replicas_[i] =
      std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{},
                                   dir() + "/" + name + "." + std::to_string(starts_[i]++));
}

void HaCluster::SignalReplica(int i, int sig) {
  if (!replicas_[i]) return;
  replicas_[i]->Signal(sig);
  if (sig == SIGKILL) {
    replicas_[i]->Wait(std::chrono::seconds(10));
    replicas_[i].reset();
  }
}

int HaCluster::Leader(std::chrono::milliseconds timeout) {
  int leader = -1;
  WaitFor(
      [&] {
        for (int i = 0; i < replicas(); ++i) {
          if (!replicas_[i]) continue;
          auto r = Baton({"nodes", "--coordinator", ReplicaAddress(i), "--timeout", "2s"}, kRoot);
          if (r.exit_code == 0) {
            leader = i;
            return true;
          }
        }
        return false;
      },
      timeout);
  return leader;
}

bool HaCluster::StartRunningJobs(int n, std::string* detail) {
  for (int i = 0; i < n; ++i) {
    RunningJob job;
    job.pid_file = shared_dir() + "/pid" + std::to_string(running_.size());
    CommandResult r =
        Baton({"submit", "-q", "--gpus", "1", "--name", "keep" + std::to_string(i), "--", "sh",
               "-c", "echo $$ > " + job.pid_file + "; exec sleep 100000"});
    if (r.exit_code != 0) {
      *detail = "submit: " + r.err;
      return false;
    }
    job.id = SubmittedId(r.out);
    if (!WaitForState(job.id, "JOB_STATE_RUNNING") ||
        !WaitFor([&] { return !ReadFile(job.pid_file).empty(); }, std::chrono::seconds(20))) {
      *detail = Describe(job.id);
      return false;
    }
    job.pid = ReadFile(job.pid_file);
    running_.push_back(job);
  }
  return true;
}

uint64_t HaCluster::ApiSubmit(const std::string& name) {
  static std::mutex token_mu;
  {
    std::lock_guard<std::mutex> lock(token_mu);
    if (api_token_.empty()) {
      CommandResult t = Baton({"admin", "token", "create", "--user", kAlice, "--tenant", "vision",
                               "--ttl", "1d", "--timeout", "30s"},
                              kRoot);
      if (t.exit_code != 0) return 0;
      api_token_ = t.out.substr(0, t.out.find('\n'));
    }
  }
  auto target = ParseCoordinatorTarget(address_);
  TlsOptions o;
  o.ca_file = security_->ca();
  auto tls = LoadTls(o, /*need_cert=*/false);
  if (!target.ok() || !tls.ok()) return 0;
  auto creds = ChannelCredentials(*tls, target->first);
  if (!creds.ok()) return 0;
  grpc::ChannelArguments args;
  SetCoordinatorChannelArgs(*target, &args);
  auto stub = v1::Coordinator::NewStub(grpc::CreateCustomChannel(target->uri, *creds, args));
  v1::SubmitRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_name(name);
  spec->set_nodes(1);
  spec->set_gpus_per_node(2);  // never placed beside the running jobs: it only queues
  spec->set_cpu_millis_per_node(100);
  spec->set_memory_bytes_per_node(64 << 20);
  spec->add_command("sleep");
  spec->add_command("1000");
  req.set_idempotency_key(RandomHex128());
  const auto give_up = std::chrono::system_clock::now() + std::chrono::seconds(30);
  for (;;) {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kAuthorizationKey, "Bearer " + api_token_);
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(give_up);
    v1::SubmitResponse resp;
    grpc::Status s = stub->Submit(&ctx, req, &resp);
    if (s.ok()) return resp.job_id();
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE ||
        std::chrono::system_clock::now() >= give_up) {
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

FailoverResult HaCluster::KillLeaderUnderSubmits(int threads, std::chrono::milliseconds before_kill,
                                                 size_t after, int api_threads) {
  FailoverResult out;
  out.old_leader = Leader();
  if (out.old_leader < 0) {
    out.detail = "no leader to kill";
    return out;
  }
  using Clock = std::chrono::steady_clock;
  const int round = rounds_++;
  std::mutex mu;
  std::vector<std::pair<uint64_t, std::string>> acked;
  // When each acknowledged submit started and when its answer came.
  std::vector<std::pair<Clock::time_point, Clock::time_point>> acked_at;
  std::atomic<bool> stop{false};
  std::atomic<size_t> failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads + api_threads; ++t) {
    const bool api = t >= threads;
    pool.emplace_back([&, t, api] {
      for (int n = 0; !stop; ++n) {
        // Unique across this cluster's calls: r<round>-s<thread>-<n> (a<thread>: the API).
        std::string name = "r" + std::to_string(round) + (api ? "-a" : "-s") + std::to_string(t) +
                           "-" + std::to_string(n);
        Clock::time_point started = Clock::now();
        uint64_t id = 0;
        if (api) {
          id = ApiSubmit(name);
        } else {
          // Two GPUs: never placed beside the running jobs, so the stream only queues.
          CommandResult r = Baton({"submit", "-q", "--gpus", "2", "--name", name, "--timeout",
                                   "30s", "--", "sleep", "1000"});
          if (r.exit_code == 0) id = SubmittedId(r.out);
        }
        if (id == 0) {
          ++failed;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        acked.emplace_back(id, name);
        acked_at.emplace_back(started, Clock::now());
      }
    });
  }
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return acked.size();
  };
  std::this_thread::sleep_for(before_kill);
  out.acked_before_kill = count();
  Clock::time_point killed = Clock::now();
  SignalReplica(out.old_leader, SIGKILL);
  WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        for (auto [started, done] : acked_at) {
          if (started > killed) return true;
        }
        return false;
      },
      std::chrono::seconds(60));
  size_t at_takeover = count();
  WaitFor([&] { return count() >= at_takeover + after; }, std::chrono::seconds(60));
  StartReplica(out.old_leader);  // the old leader's host comes back: a standby now
  stop = true;
  for (auto& th : pool) th.join();
  for (auto [started, done] : acked_at) {
    if (started > killed) {
      double s = std::chrono::duration<double>(done - killed).count();
      if (out.failover_s < 0 || s < out.failover_s) out.failover_s = s;
    }
  }
  out.new_leader = Leader();
  out.acked = acked.size();
  for (const auto& [id, name] : acked) out.acked_api += name.find("-a") != std::string::npos;
  out.failed = failed.load();

  std::set<uint64_t> ids;
  for (const auto& [id, name] : acked) {
    if (!ids.insert(id).second) {
      ++out.duplicates;
      out.detail += "id " + std::to_string(id) + " acknowledged twice; ";
    }
  }
  std::map<uint64_t, std::string> listed = ListedJobs(*this);
  std::map<std::string, int> per_name;
  for (const auto& [id, name] : listed) ++per_name[name];
  for (const auto& [id, name] : acked) {
    auto it = listed.find(id);
    if (it == listed.end() || it->second != name) {
      ++out.lost;
      out.detail += "acknowledged job " + std::to_string(id) + " (" + name + ") " +
                    (it == listed.end() ? "missing" : "holds " + it->second) + "; ";
    } else if (per_name[name] > 1) {
      ++out.duplicates;
      out.detail += name + " stored " + std::to_string(per_name[name]) + " times; ";
    }
  }
  std::string changed = RunningJobsChanged();
  out.restarted = std::count(changed.begin(), changed.end(), ';');
  out.detail += changed;
  return out;
}

std::string HaCluster::RunningJobsChanged(bool ask) {
  std::string out;
  for (const RunningJob& job : running_) {
    pid_t pid = static_cast<pid_t>(std::stol(job.pid));
    bool same = ReadFile(job.pid_file) == job.pid && kill(pid, 0) == 0;
    if (same && ask) {
      auto j = GetJob(job.id);
      same = j && j->state() == v1::JOB_STATE_RUNNING && j->attempts_size() == 1;
    }
    if (!same) out += "job " + std::to_string(job.id) + " restarted or stopped; ";
  }
  return out;
}

void HaCluster::StartAgent(int i) {
  std::string name = "n" + std::to_string(i + 1);
  std::vector<std::string> argv = {
      Bin("baton-agent"), "--name",      name, "--coordinator", address_, "--data-dir",
      dir() + "/" + name, "--fake-gpus", "2",  "--isolation",   "none"};
  for (auto& f : security_->AgentFlags(name, {"IP:127.0.0.1"})) argv.push_back(f);
  agents_.push_back(
      std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{}, dir() + "/" + name));
}

}  // namespace baton::testing
