// baton-bench-isolation: does baton's isolation keep a training job from pushing an
// inference service's tail latency up, without starving the training job?
//   1. A CPU latency probe (a 0.5 ms CPU burst every 2 ms; p50/p99/p999 from each
//      request's arrival) as an inference job alone; next to a training job whose threads
//      want twice every core, both launched by baton (coordinator, agent, CLI) under its
//      isolation; next to the same hog pinned by hand to the cores the probe does not use
//      (the floor this hardware allows); and next to the hog with no isolation. The
//      scenarios alternate for --rounds rounds; the machine is shared and outside load
//      only adds latency, so each scenario's key figure is its least disturbed round
//      (every round is in the JSON). The training job's CPU time while the probe runs ÷
//      what its narrowed quota allows (median of rounds).
//   2. Between the root namespace and another (veth, HTB at 1 Gbit/s), the RTT of a TCP
//      ping-pong probe (an inference job) idle and while a training job floods the link
//      with iperf3 under its cap; the capped flow ÷ its cap.
// Needs root, cgroups and tc/nft (as CI has); ends with one JSON line (keys in docs/benchmarks.md).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench/isolation_workloads.h"
#include "tests/util/security.h"
#include "tests/util/subprocess.h"

namespace {

using baton::testing::ReadFile;
using baton::testing::Subprocess;
using nlohmann::json;
namespace fs = std::filesystem;

std::string Self() { return fs::read_symlink("/proc/self/exe").string(); }
std::string Bin(const std::string& name) { return fs::path(Self()).parent_path() / name; }

// A number from a JSON object (proto3 JSON writes 64-bit integers as strings); `def`
// when the object or the field is missing.
double Num(const json& j, const std::string& key, double def = -1) {
  if (!j.is_object() || !j.contains(key)) return def;
  const json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return std::atof(v.get<std::string>().c_str());
  return def;
}
std::string Str(const json& j, const std::string& key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

int Sh(const std::string& cmd) {
  return baton::testing::RunProcess({"/bin/sh", "-c", cmd}, {}).exit_code;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The least disturbed round: the machine is shared, and outside load only ever adds
// latency, so the best round of each scenario is its truest figure.
double Best(const std::vector<double>& v) {
  double best = -1;
  for (double x : v) {
    if (x > 0 && (best < 0 || x < best)) best = x;
  }
  return best;
}

// A coordinator and one agent with isolation on, a NIC toward namespace `peer_ns`.
class Cluster {
 public:
  Cluster(const std::string& dir, const std::string& nic) : dir_(dir), security_(dir) {
    fs::create_directories(dir);
    if (!security_.ok()) std::fprintf(stderr, "security: %s\n", security_.why().c_str());
    std::ofstream(dir + "/policy.yaml") << baton::testing::BenchPolicy();
    std::string ready = dir + "/coordinator.addr";
    std::vector<std::string> coordinator = {
        Bin("baton-coordinator"), "--listen", "127.0.0.1:0", "--data-dir", dir + "/coordinator",
        "--ready-file",           ready,      "--log-level", "warn",       "--policy",
        dir + "/policy.yaml"};
    for (auto& f : security_.CoordinatorFlags()) coordinator.push_back(f);
    procs_.push_back(std::make_unique<Subprocess>(coordinator, std::map<std::string, std::string>{},
                                                  dir + "/coordinator"));
    baton::testing::WaitFor([&] { return !ReadFile(ready).empty(); }, std::chrono::seconds(20));
    address_ = ReadFile(ready).substr(0, ReadFile(ready).find('\n'));
    node_ = "bench" + std::to_string(getpid());
    std::vector<std::string> tls = security_.AgentFlags(node_, {"IP:127.0.0.1"});
    procs_.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{Bin("baton-agent"),
                                 tls[0],
                                 tls[1],
                                 tls[2],
                                 tls[3],
                                 tls[4],
                                 tls[5],
                                 "--name",
                                 node_,
                                 "--coordinator",
                                 address_,
                                 "--data-dir",
                                 dir + "/agent",
                                 "--isolation",
                                 "auto",
                                 "--cgroup-parent",
                                 "baton-bench-" + std::to_string(getpid()),
                                 "--nic",
                                 nic,
                                 "--nic-rate",
                                 "1gbit",
                                 "--nvml",
                                 "",
                                 "--stats-interval",
                                 "500ms",
                                 "--log-level",
                                 "warn"},
        std::map<std::string, std::string>{}, dir + "/agent"));
    baton::testing::WaitFor([&] { return Baton({"nodes"}).find(node_) != std::string::npos; },
                            std::chrono::seconds(20));
  }
  ~Cluster() {
    for (auto it = procs_.rbegin(); it != procs_.rend(); ++it) {
      (*it)->Signal(SIGTERM);
      (*it)->Wait(std::chrono::seconds(15));
    }
    Sh("nft delete table inet baton_" + node_ + " 2>/dev/null");
    std::string parent = "baton-bench-" + std::to_string(getpid());
    Sh("for d in /sys/fs/cgroup/*/" + parent + "; do rmdir \"$d\"; done 2>/dev/null");
  }
  std::string Baton(std::vector<std::string> args) {
    args.insert(args.begin(), Bin("baton"));
    auto env = security_.ClientEnv();  // as root: the admin, member of tenant bench
    env["BATON_COORDINATOR"] = address_;
    auto r = baton::testing::RunProcess(args, env);
    return r.exit_code == 0 ? r.out : "";
  }
  // Submits a one-node job; returns its id (0 on failure).
  uint64_t Submit(const std::string& cls, const std::string& name,
                  const std::vector<std::string>& command) {
    std::vector<std::string> args = {"submit", "-q",    "-p",    cls,         "--cpus",
                                     "1",      "--mem", "512Mi", "--restart", "never",
                                     "--name", name,    "--"};
    args.insert(args.end(), command.begin(), command.end());
    std::string out = Baton(args);
    return out.empty() ? 0 : std::stoull(out);
  }
  json Status(uint64_t job) {
    std::string out = Baton({"status", std::to_string(job), "--json"});
    return out.empty() ? json() : json::parse(out, nullptr, false);
  }
  // Polls `baton status` (each a process) after `quiet_ms` without any, so the polling
  // does not land on a probe's core while it measures.
  bool WaitState(uint64_t job, const std::string& state, int seconds = 60, int quiet_ms = 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(quiet_ms));
    return baton::testing::WaitFor([&] { return Str(Status(job), "state") == state; },
                                   std::chrono::seconds(seconds));
  }
  json Limits(uint64_t job) {
    json s = Status(job);
    if (!s.is_object() || !s.contains("attempts") || s["attempts"].empty()) return json();
    json a = s["attempts"].back();
    if (!a.contains("isolation") || a["isolation"].empty()) return json();
    return a["isolation"][0]["limits"];
  }
  // The job's output as one JSON document (iperf3 -J), or its last line.
  json Output(uint64_t job) {
    // The agent prefixes every line with its rank ("[rank 0] "): take the text back out.
    std::string raw = ReadFile(dir_ + "/agent/jobs/" + std::to_string(job) + "/1/output.log");
    std::string log;
    std::istringstream lines(raw);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("[rank ", 0) == 0 && line.find("] ") != std::string::npos) {
        line = line.substr(line.find("] ") + 2);
      }
      log += line + "\n";
    }
    json whole = json::parse(log, nullptr, false);
    if (!whole.is_discarded()) return whole;
    size_t end = log.find_last_not_of('\n');
    if (end == std::string::npos) return json();
    size_t start = log.rfind('\n', end);
    return json::parse(log.substr(start == std::string::npos ? 0 : start + 1, end + 1), nullptr,
                       false);
  }

 private:
  std::string dir_;
  baton::testing::TestSecurity security_;
  std::string address_, node_;
  std::vector<std::unique_ptr<Subprocess>> procs_;
};

constexpr int kProbeMs = 3000;  // 1500 requests every 2 ms

std::vector<std::string> ProbeCmd(int warmup_ms) {
  return {Self(), "--probe",    "--requests", "1500",        "--period-us",
          "2000", "--burst-us", "500",        "--warmup-ms", std::to_string(warmup_ms)};
}

// Two spinning threads per CPU: a training job's trainer plus data-loader workers want
// more than every core.
std::vector<std::string> HogCmd(int seconds) {
  return {Self(),      "--hog",
          "--seconds", std::to_string(seconds),
          "--threads", std::to_string(2 * std::thread::hardware_concurrency())};
}

// One probe run as a baton inference job; returns its p99 (µs) and records the JSON.
double ProbeJob(Cluster& c, json* out, int warmup_ms) {
  uint64_t id = c.Submit("inference", "probe", ProbeCmd(warmup_ms));
  if (!id || !c.WaitState(id, "JOB_STATE_SUCCEEDED", 60, kProbeMs + warmup_ms)) return -1;
  *out = c.Output(id);
  return Num(*out, "p99_us");
}

// cpuacct usage (µs) and quota (cores) of a job's cgroup.
double UsageUs(const std::string& cgroup) {
  std::string t = ReadFile("/sys/fs/cgroup/cpuacct/" + cgroup + "/cpuacct.usage");
  return t.empty() ? -1 : std::stod(t) / 1000.0;
}
double QuotaCores(const std::string& cgroup) {
  std::string t = ReadFile("/sys/fs/cgroup/cpu/" + cgroup + "/cpu.cfs_quota_us");
  return t.empty() ? -1 : std::stod(t) / 100000.0;
}

struct CpuFigures {
  std::vector<double> alone, baton, floor, unconfined, training_ratio;
  json last_alone, last_baton, last_floor, last_unconfined;
};

void CpuRound(Cluster& c, CpuFigures* f) {
  f->alone.push_back(ProbeJob(c, &f->last_alone, 300));
  // Training hog under baton, then the probe arrives (narrowing the hog live).
  uint64_t hog = c.Submit("training", "hog", HogCmd(9));
  c.WaitState(hog, "JOB_STATE_RUNNING");
  std::string cgroup = Str(c.Limits(hog), "cgroup");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  uint64_t probe = c.Submit("inference", "probe", ProbeCmd(600));
  c.WaitState(probe, "JOB_STATE_RUNNING");
  auto started = std::chrono::steady_clock::now();
  // The training job's CPU time while the probe measures, against its narrowed quota.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  double u0 = UsageUs(cgroup), quota = QuotaCores(cgroup);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_until(started + std::chrono::milliseconds(600 + kProbeMs));
  double u1 = UsageUs(cgroup);
  double wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (quota > 0 && u0 >= 0) f->training_ratio.push_back((u1 - u0) / (quota * wall_us));
  c.WaitState(probe, "JOB_STATE_SUCCEEDED", 60, 200);
  f->last_baton = c.Output(probe);
  f->baton.push_back(Num(f->last_baton, "p99_us"));
  c.Baton({"cancel", std::to_string(hog)});
  c.WaitState(hog, "JOB_STATE_CANCELLED", 30);
  // The floor: the probe under baton, the hog pinned by hand to the other cores.
  probe = c.Submit("inference", "probe", ProbeCmd(600));
  c.WaitState(probe, "JOB_STATE_RUNNING");
  std::string mine = Str(c.Limits(probe), "cpus");
  unsigned n = std::thread::hardware_concurrency();
  std::string others;
  for (unsigned cpu = 0; cpu < n; ++cpu) {
    if (mine.find(std::to_string(cpu)) == std::string::npos) {
      others += (others.empty() ? "" : ",") + std::to_string(cpu);
    }
  }
  {
    std::vector<std::string> pinned = {"/usr/bin/taskset", "-c", others};
    for (const auto& a : HogCmd(5)) pinned.push_back(a);
    Subprocess h(pinned, {}, "");
    c.WaitState(probe, "JOB_STATE_SUCCEEDED", 60, kProbeMs + 600);
    h.Signal(SIGKILL);
  }
  f->last_floor = c.Output(probe);
  f->floor.push_back(Num(f->last_floor, "p99_us"));
}

void Unconfined(const std::string& dir, CpuFigures* f) {
  Subprocess hog(HogCmd(6), {}, "");
  Subprocess probe(ProbeCmd(300), {}, dir + "/unconfined");
  probe.Wait(std::chrono::seconds(60));
  hog.Signal(SIGKILL);
  f->last_unconfined = json::parse(ReadFile(dir + "/unconfined.out"), nullptr, false);
  f->unconfined.push_back(Num(f->last_unconfined, "p99_us"));
}

struct NetFigures {
  json idle, loaded, iperf;
  double cap_mbps = 0;
};

void NetworkRun(Cluster& c, const std::string& peer_ns, const std::string& peer_ip, NetFigures* f) {
  std::string in_peer = "nsenter --net=/var/run/netns/" + peer_ns + " ";
  Subprocess echo(
      {"/bin/sh", "-c",
       "exec " + in_peer + "taskset -c " + std::to_string(std::thread::hardware_concurrency() - 1) +
           " " + Self() + " --echo-server --port 7777"},
      {}, "");
  Subprocess iperf({"/bin/sh", "-c", "exec " + in_peer + "taskset -c 0 iperf3 -s -p 5201"}, {}, "");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::vector<std::string> rtt = {Self(),          "--rtt-probe", "--host",      peer_ip,
                                  "--port",        "7777",        "--requests",  "2000",
                                  "--interval-us", "1000",        "--warmup-ms", "500"};
  uint64_t idle = c.Submit("inference", "rtt", rtt);
  c.WaitState(idle, "JOB_STATE_SUCCEEDED", 60, 2500);
  f->idle = c.Output(idle);
  uint64_t flood =
      c.Submit("training", "flood", {"iperf3", "-c", peer_ip, "-p", "5201", "-t", "8", "-J"});
  c.WaitState(flood, "JOB_STATE_RUNNING");
  f->cap_mbps = Num(c.Limits(flood), "netCeilMbps", 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  uint64_t loaded = c.Submit("inference", "rtt", rtt);
  c.WaitState(loaded, "JOB_STATE_SUCCEEDED", 60, 2500);
  f->loaded = c.Output(loaded);
  c.WaitState(flood, "JOB_STATE_SUCCEEDED", 30);
  f->iperf = c.Output(flood);
  echo.Signal(SIGKILL);
  iperf.Signal(SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (int code = baton::bench::RunWorkload(args); code >= 0) return code;
  if (geteuid() != 0) {
    std::fprintf(stderr, "baton-bench-isolation: needs root (cgroups, tc, nft, netns)\n");
    return 2;
  }
  int rounds = argc > 2 && args[1] == "--rounds" ? std::atoi(argv[2]) : 5;
  std::string dir =
      (fs::temp_directory_path() / ("baton-bench-isolation-" + std::to_string(getpid()))).string();
  std::string tag = std::to_string(getpid() % 100000);
  std::string ns = "bbn" + tag, nic = "bbn" + tag + "a", peer = "bbn" + tag + "b";
  std::string subnet = std::to_string(100 + getpid() % 100);
  std::string ip_a = "10." + subnet + ".0.1", ip_b = "10." + subnet + ".0.2";
  if (Sh("ip netns add " + ns + " && ip link add " + nic + " type veth peer name " + peer +
         " && ip link set " + peer + " netns " + ns + " && ip addr add " + ip_a + "/24 dev " + nic +
         " && ip link set " + nic + " up && ip netns exec " + ns + " sh -c 'ip addr add " + ip_b +
         "/24 dev " + peer + " && ip link set " + peer + " up && ip link set lo up'") != 0) {
    std::fprintf(stderr, "cannot create the network namespace\n");
    return 1;
  }
  CpuFigures cpu;
  NetFigures net;
  try {  // the cluster, its jobs and the servers go before the namespace, even on errors
    Cluster c(dir, nic);
    for (int r = 0; r < rounds; ++r) {
      CpuRound(c, &cpu);
      std::fprintf(stderr, "round %d: p99 alone %.0f us, baton %.0f us, floor %.0f us\n", r,
                   cpu.alone.back(), cpu.baton.back(), cpu.floor.back());
    }
    Unconfined(dir, &cpu);
    NetworkRun(c, ns, ip_b, &net);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baton-bench-isolation: %s\n", e.what());
  }
  Sh("ip netns del " + ns + " 2>/dev/null; ip link del " + nic + " 2>/dev/null");
  fs::remove_all(dir);

  double alone = Best(cpu.alone), with_baton = Best(cpu.baton), floor = Best(cpu.floor);
  double capped_mbps = net.iperf.is_object() && net.iperf.contains("end")
                           ? Num(net.iperf["end"]["sum_received"], "bits_per_second", 0) / 1e6
                           : 0;
  // A figure that could not be measured is null (and the run fails), never a made-up 1.0.
  bool complete = true;
  auto ratio = [&](double a, double b) -> json {
    if (a > 0 && b > 0) return a / b;
    complete = false;
    return nullptr;
  };
  auto doc = [](const json& j) { return j.is_discarded() ? json() : j; };
  json out = {
      {"p99_with_baton_vs_floor", ratio(with_baton, floor)},
      {"p99_with_baton_vs_alone", ratio(with_baton, alone)},
      {"p99_unconfined_vs_alone", ratio(Best(cpu.unconfined), alone)},
      {"training_cpu_vs_quota", ratio(Median(cpu.training_ratio), 1)},
      {"net_p99_vs_idle",
       ratio(Num(doc(net.loaded), "p99_us", -1), Num(doc(net.idle), "p99_us", -1))},
      {"capped_flow_vs_cap", ratio(capped_mbps, net.cap_mbps)},
      {"probe_alone", doc(cpu.last_alone)},
      {"probe_with_baton", doc(cpu.last_baton)},
      {"probe_floor", doc(cpu.last_floor)},
      {"probe_unconfined", doc(cpu.last_unconfined)},
      {"p99_us_rounds", {{"alone", cpu.alone}, {"baton", cpu.baton}, {"floor", cpu.floor}}},
      {"p99_with_baton_vs_floor_median", ratio(Median(cpu.baton), Median(cpu.floor))},
      {"training_cpu_vs_quota_rounds", cpu.training_ratio},
      {"rtt_idle", doc(net.idle)},
      {"rtt_loaded", doc(net.loaded)},
      {"capped_mbps", capped_mbps},
      {"cap_mbps", net.cap_mbps},
  };
  std::printf("%s\n", out.dump().c_str());
  if (!complete) std::fprintf(stderr, "baton-bench-isolation: some figures were not measured\n");
  return complete ? 0 : 1;
}
