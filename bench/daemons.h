// The benchmarks' production-like daemons: a coordinator and agents under a directory of
// the run's own, secured as in production (TLS under the run's CA, a private munged, a
// policy where root is the admin and the member of tenant bench), and an API client that
// authenticates with a service token. Header-only, for the benchmark binaries.
#pragma once

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/api.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"
#include "tests/util/security.h"
#include "tests/util/subprocess.h"

namespace baton::bench {

using baton::testing::Subprocess;

inline std::string BinDir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path();
}

// A coordinator (and agents) secured as in production, under `dir`: TLS, a private
// munged, BenchPolicy() (root is the admin and the member of tenant bench).
class Daemons {
 public:
  explicit Daemons(const std::string& dir,
                   const std::string& policy = baton::testing::BenchPolicy())
      : dir_(dir), security_(dir) {
    if (!security_.ok()) std::fprintf(stderr, "security: %s\n", security_.why().c_str());
    std::ofstream(dir_ + "/policy.yaml") << policy;
    Guard();
  }
  ~Daemons() {
    for (auto it = procs_.rbegin(); it != procs_.rend(); ++it) (*it)->Signal(SIGTERM);
    for (auto& p : procs_) p->Wait(std::chrono::seconds(10));
  }
  // `extra`: more flags (--heartbeat 100ms …). `name`: its data dir and log under the
  // run's directory (several, for HA replicas). Returns its address, which becomes the
  // target (SetTarget for a replica list).
  std::string StartCoordinator(const std::vector<std::string>& extra = {},
                               const std::string& name = "coordinator") {
    std::string ready = dir_ + "/" + name + ".addr";
    std::vector<std::string> argv = {BinDir() + "/baton-coordinator",
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--data-dir",
                                     dir_ + "/" + name,
                                     "--ready-file",
                                     ready,
                                     "--log-level",
                                     "warn",
                                     "--policy",
                                     dir_ + "/policy.yaml"};
    for (auto& f : security_.CoordinatorFlags()) argv.push_back(f);
    argv.insert(argv.end(), extra.begin(), extra.end());
    procs_.push_back(std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{},
                                                  dir_ + "/" + name));
    coordinator_pid_ = procs_.back()->pid();
    Guard();
    baton::testing::WaitFor([&] { return !baton::testing::ReadFile(ready).empty(); },
                            std::chrono::seconds(20));
    std::string addr = baton::testing::ReadFile(ready);
    target_ = addr.substr(0, addr.find('\n'));
    return target_;
  }
  void StartAgent(const std::string& coordinator, const std::string& name,
                  const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {BinDir() + "/baton-agent", "--name",      name,
                                     "--coordinator",           coordinator,   "--data-dir",
                                     dir_ + "/" + name,         "--log-level", "warn"};
    for (auto& f : security_.AgentFlags(name, {"IP:127.0.0.1"})) argv.push_back(f);
    argv.insert(argv.end(), extra.begin(), extra.end());
    procs_.push_back(std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{},
                                                  dir_ + "/" + name));
    Guard();
  }
  // The last coordinator started (its resident memory, for one).
  pid_t coordinator_pid() const { return coordinator_pid_; }
  // Where clients go: one address, or HA replicas' "ip:port,ip:port,…".
  void SetTarget(const std::string& target) { target_ = target; }
  // What the CLI and the floor need: the coordinator, the CA, munged's socket.
  std::map<std::string, std::string> ClientEnv() const {
    auto env = security_.ClientEnv();
    env["BATON_COORDINATOR"] = target_;
    return env;
  }
  // A service token for root in `tenant`, made with the CLI (root is the admin; a token
  // bound to a tenant is not an admin's, "" makes an unbound one that is).
  std::string Token(const std::string& tenant = "bench") const {
    std::vector<std::string> argv = {
        BinDir() + "/baton", "admin", "token", "create", "--user", "root", "--ttl", "1d"};
    if (!tenant.empty()) argv.insert(argv.end(), {"--tenant", tenant});
    auto r = baton::testing::RunProcess(argv, ClientEnv());
    if (r.exit_code != 0) std::fprintf(stderr, "token create: %s\n", r.err.c_str());
    return r.out.substr(0, r.out.find('\n'));
  }
  // TLS to the coordinator, verified against the run's CA.
  std::shared_ptr<grpc::ChannelCredentials> Tls() const {
    baton::TlsOptions o;
    o.ca_file = security_.ca();
    auto tls = baton::LoadTls(o, /*need_cert=*/false);
    auto creds = tls.ok() ? baton::ChannelCredentials(*tls, target_) : tls.status();
    if (!creds.ok()) std::fprintf(stderr, "tls: %s\n", creds.status().ToString().c_str());
    return creds.ok() ? *creds : nullptr;
  }

 private:
  // Should this process die before the destructor (a SIGKILL, a Ctrl-C), the daemons
  // started so far (each in a process group of its own) and munged go with it: a guard
  // covering them all replaces the one before (TeardownGuard, tests/util/subprocess.h).
  void Guard() {
    std::string groups;
    for (const auto& p : procs_) {
      if (p->pid() > 0) groups += " -" + std::to_string(p->pid());
    }
    // Groups as negative ids; dash's kill takes no "--" before them.
    std::vector<std::string> argv = {"/bin/sh", "-c",
                                     "[ -z \"$GROUPS_\" ] || { kill -TERM $GROUPS_; sleep 2; "
                                     "kill -KILL $GROUPS_; } 2>/dev/null; exec \"$@\"",
                                     "sh"};
    for (const auto& word : security_.StopMungedCommand()) argv.push_back(word);
    guard_ = std::make_unique<baton::testing::TeardownGuard>(
        argv, std::map<std::string, std::string>{{"GROUPS_", groups}});
  }

  std::string dir_;
  baton::testing::TestSecurity security_;
  std::string target_;
  std::vector<std::unique_ptr<Subprocess>> procs_;
  pid_t coordinator_pid_ = -1;
  std::unique_ptr<baton::testing::TeardownGuard> guard_;  // last: gone before the daemons
};

// The resident memory of process `pid` (VmRSS), in bytes; 0 when unreadable.
inline uint64_t RssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) << 10;
  }
  return 0;
}

// A stub authenticating every call with `token` (a service token) over TLS.
struct Api {
  std::unique_ptr<v1::Coordinator::Stub> stub;
  std::string token;
  void Prepare(grpc::ClientContext* ctx) const {
    ctx->AddMetadata(baton::kAuthorizationKey, "Bearer " + token);
  }
};

// `target`: one address, or replicas' (calls go to the leader, as the CLI's do).
inline Api Stub(const Daemons& d, const std::string& target, const std::string& token) {
  grpc::ChannelArguments args;
  // One connection per stub: several stubs spread the load over several HTTP/2 streams.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  baton::SetClientMessageLimits(&args);
  auto parsed = baton::ParseCoordinatorTarget(target);
  if (!parsed.ok()) std::fprintf(stderr, "target: %s\n", parsed.status().ToString().c_str());
  baton::CoordinatorTarget t = parsed.value_or(baton::CoordinatorTarget{target, target, false});
  baton::SetCoordinatorChannelArgs(t, &args);
  return Api{v1::Coordinator::NewStub(grpc::CreateCustomChannel(t.uri, d.Tls(), args)), token};
}

inline grpc::Status Call(const Api& api, const v1::JobSpec& spec, uint64_t* id) {
  grpc::ClientContext ctx;
  api.Prepare(&ctx);
  v1::SubmitRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitResponse resp;
  grpc::Status s = api.stub->Submit(&ctx, req, &resp);
  *id = resp.job_id();
  return s;
}

// The smallest job: `true`, 100m CPU, 64 MiB, never restarted.
inline v1::JobSpec TrivialSpec() {
  v1::JobSpec spec;
  spec.add_command("true");
  spec.set_cpu_millis_per_node(100);
  spec.set_memory_bytes_per_node(64 << 20);
  spec.set_restart_policy(v1::RESTART_POLICY_NEVER);
  return spec;
}

// CPU time (user + system) that process `pid` has used, in seconds; 0 when unreadable.
inline double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state … cmajflt (fields 3–13)
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// This process's CPU time (user + system, all threads), in seconds.
inline double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// What an API phase measured.
struct ApiRun {
  double per_s = 0;          // acknowledged (durable) submits per second
  double server_cpu_us = 0;  // the coordinator's CPU per submit (when its pid is known)
  double client_cpu_us = 0;  // this process's CPU per submit (the clients, gRPC's threads)
  uint64_t failed = 0;
};

// Durable submits of TrivialSpec() through the API for `seconds`, with `in_flight` calls
// outstanding at all times (the concurrent clients) over four connections: gRPC's
// callback API, each reply starting the next call, so that the clients cost what the
// calls cost and no thread per call waits on the CPUs the coordinator needs. Each
// connection is made (and, for replicas, has found the leader) before the clock starts.
// `ping`: the API's empty authenticated RPC (Ping) instead, the RPC layer's own rate under
// the same clients (a submit's peer).
inline ApiRun ApiSubmitRun(const Daemons& d, const std::string& target, int in_flight,
                           double seconds, pid_t server = -1, bool ping = false) {
  using Clock = std::chrono::steady_clock;
  std::string token = d.Token();
  std::vector<Api> stubs;
  for (int i = 0; i < 4; ++i) {
    stubs.push_back(Stub(d, target, token));
    grpc::ClientContext ctx;
    stubs.back().Prepare(&ctx);
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::ListNodesResponse nodes;
    grpc::Status s = stubs.back().stub->ListNodes(&ctx, v1::ListNodesRequest(), &nodes);
    if (!s.ok())
      std::fprintf(stderr, "api: no coordinator answers: %s\n", s.error_message().c_str());
  }
  struct Flight {
    std::mutex mu;
    std::condition_variable cv;
    int outstanding = 0;
    std::atomic<uint64_t> done{0}, failed{0};
    Clock::time_point end;
    v1::SubmitRequest req;
  } f;
  *f.req.mutable_spec() = TrivialSpec();
  // One call; its reply starts the next until the time is up.
  struct Call {
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    v1::PingResponse pong;
  };
  const v1::PingRequest ping_req;
  std::function<void(const Api*)> start = [&](const Api* api) {
    auto* call = new Call;
    api->Prepare(&call->ctx);
    auto then = [&, call, api](grpc::Status s) {
      delete call;
      (s.ok() ? f.done : f.failed)++;
      if (Clock::now() < f.end) return start(api);
      std::lock_guard<std::mutex> lock(f.mu);
      if (--f.outstanding == 0) f.cv.notify_all();
    };
    if (ping) {
      api->stub->async()->Ping(&call->ctx, &ping_req, &call->pong, then);
    } else {
      api->stub->async()->Submit(&call->ctx, &f.req, &call->resp, then);
    }
  };
  const double cpu0 = SelfCpuSeconds(), server0 = server > 0 ? ProcessCpuSeconds(server) : 0;
  auto begin = Clock::now();
  f.end =
      begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  f.outstanding = in_flight;
  for (int i = 0; i < in_flight; ++i) start(&stubs[i % stubs.size()]);
  {
    std::unique_lock<std::mutex> lock(f.mu);
    f.cv.wait(lock, [&] { return f.outstanding == 0; });
  }
  ApiRun run;
  const double secs = std::chrono::duration<double>(Clock::now() - begin).count();
  run.failed = f.failed;
  run.per_s = f.done / secs;
  if (f.done > 0) {
    run.client_cpu_us = (SelfCpuSeconds() - cpu0) * 1e6 / f.done;
    if (server > 0) run.server_cpu_us = (ProcessCpuSeconds(server) - server0) * 1e6 / f.done;
  }
  if (f.failed) std::fprintf(stderr, "api: %llu submits failed\n", (unsigned long long)run.failed);
  return run;
}

inline double ApiSubmits(const Daemons& d, const std::string& target, int in_flight,
                         double seconds) {
  return ApiSubmitRun(d, target, in_flight, seconds).per_s;
}

// Whether no job is left unfinished: one job's worth of listing (unfinished jobs come
// first, at most one asked for) however many have finished, so that polling it loads the
// coordinator no more as the run goes on. nullopt when the call failed.
inline std::optional<bool> NoneUnfinished(const Api& api) {
  grpc::ClientContext ctx;
  api.Prepare(&ctx);
  v1::ListRequest req;  // without `all`: unfinished jobs only
  req.set_limit(1);
  v1::ListResponse resp;
  if (!api.stub->List(&ctx, req, &resp).ok()) return std::nullopt;
  return resp.jobs_size() == 0;
}

// Every job of the caller's that succeeded (lists them all: once, at the end of a run).
inline size_t CountSucceeded(const Api& api) {
  v1::ListRequest req;
  req.add_states(v1::JOB_STATE_SUCCEEDED);
  size_t count = 0;
  do {
    grpc::ClientContext ctx;
    api.Prepare(&ctx);
    v1::ListResponse resp;
    if (!api.stub->List(&ctx, req, &resp).ok()) return count;
    count += resp.jobs_size();
    req.set_page_token(resp.next_page_token());
  } while (!req.page_token().empty());
  return count;
}

}  // namespace baton::bench
