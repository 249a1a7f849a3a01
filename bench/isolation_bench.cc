// baton-bench-isolation: does baton's isolation keep a training job from pushing an
// inference service's tail latency up, without starving the training job? Every figure
// counts from a probe's first request (no warm-up), and each round compares baton with
// the same workloads set up by hand while no baton daemon runs: the floor and the tc
// baseline run first, then a coordinator and an agent start, the same workloads run as
// jobs, and the daemons stop before the next round.
//   1. CPU: a latency probe (a 0.5 ms CPU burst every 2 ms for 3 s; p50/p99/p999 from
//      each request's scheduled arrival) next to a hog whose threads want twice every
//      core, in both arrival orders: inference first (the hog arrives while the probe
//      runs) and training first (the hog has been spinning on every core for 0.5 s when
//      the probe arrives). The floor: both as plain processes in cgroups made by hand as
//      baton's agent makes them (cpuset, quota, weight; see FloorCgroups for why not
//      none), the probe pinned to the top CPU (where baton's scheduler puts a 1-CPU
//      inference job) and the hog to the others. Under baton: the probe an inference job,
//      the hog a training job. Also the probe as a job alone, and probe and hog unpinned
//      with no daemons (once); the training job's CPU time while the probe runs ÷ its
//      narrowed quota.
//   2. Network, between the root namespace and another (veth): the RTT of a TCP
//      ping-pong probe (64 bytes every 1 ms, 2,000 round trips) idle and while iperf3
//      floods the link in a capped class. The baseline builds baton's HTB tree by hand
//      (the same rates, ceilings and priorities, docs/isolation.md) and classifies by port
//      with nft; under baton both are jobs (probe inference, flood training). Its capped
//      flow ÷ its cap.
// Keys are medians over rounds (--rounds, default 5) beside the best round, and every
// round is in the JSON. The bench itself (and the CLI and the coordinator it starts) runs
// on the CPUs the probe does not use, as the coordinator's deployment is documented
// (docs/isolation.md, "The node's own work"). Needs root, cgroups, tc, nft and netns;
// ends with one JSON line (keys in docs/benchmarks.md).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/bench_flags.h"
#include "bench/isolation_cluster.h"
#include "bench/isolation_net.h"
#include "bench/isolation_workloads.h"

namespace baton::bench {
namespace {

using nlohmann::json;
using testing::ReadFile;
using testing::Subprocess;
namespace fs = std::filesystem;

constexpr int kHogHeadStartMs = 500;  // training first: the hog spins this long before
constexpr const char* kOrders[] = {"inference_first", "training_first"};

// 1500 requests every 2 ms: 3 s.
std::vector<std::string> ProbeCmd() {
  return {Bin("baton-bench-isolation"),
          "--probe",
          "--requests",
          "1500",
          "--period-us",
          "2000",
          "--burst-us",
          "500"};
}

// Two spinning threads per CPU: a training job's trainer plus data-loader workers want
// more than every core.
std::vector<std::string> HogCmd(int seconds) {
  return {Bin("baton-bench-isolation"),
          "--hog",
          "--seconds",
          std::to_string(seconds),
          "--threads",
          std::to_string(2 * std::thread::hardware_concurrency())};
}

json ProbeOutput(const std::string& prefix) {
  json j = json::parse(ReadFile(prefix + ".out"), nullptr, false);
  return j.is_discarded() ? json() : j;
}

// cgroups as baton's agent makes them for the two jobs (1 CPU requested each: weight
// 100, i.e. 1024 shares on v1): the probe's holds its CPU with a quota of one core, the
// hog's the others with a quota of as many cores. Made by hand, no daemon involved.
// Without cgroups both would share the bench's autogroup, whose weight the kernel splits
// by load per CPU: on a machine with other work, a probe next to a 4-thread hog pinned
// elsewhere got a p50 of 120-270 ms (measured), a floor no one would run.
class FloorCgroups {
 public:
  explicit FloorCgroups(const Cpus& cpus)
      : parent_("baton-bench-floor-" + std::to_string(getpid())) {
    v2_ = fs::exists("/sys/fs/cgroup/cgroup.controllers");
    Make("", cpus.all, 0);
    Make("/probe", cpus.probe, 1);
    Make("/hog", cpus.others, std::count(cpus.others.begin(), cpus.others.end(), ',') + 1);
  }
  ~FloorCgroups() {
    for (const char* leaf : {"/probe", "/hog", ""}) {
      for (const auto& d : Dirs(leaf)) fs::remove(d);
    }
  }
  // `cmd` joining cgroup `leaf` ("/probe", "/hog") before it execs.
  std::vector<std::string> In(const std::string& leaf, const std::vector<std::string>& cmd) const {
    std::string join;
    for (const auto& d : Dirs(leaf)) join += "echo $$ > " + d + "/cgroup.procs && ";
    std::vector<std::string> out = {"/bin/sh", "-c", join + "exec \"$@\"", "sh"};
    out.insert(out.end(), cmd.begin(), cmd.end());
    return out;
  }

 private:
  std::vector<std::string> Dirs(const std::string& leaf) const {
    if (v2_) return {"/sys/fs/cgroup/" + parent_ + leaf};
    std::vector<std::string> dirs;
    for (const char* c : {"cpu", "cpuacct", "cpuset"}) {
      dirs.push_back(std::string("/sys/fs/cgroup/") + c + "/" + parent_ + leaf);
    }
    return dirs;
  }
  void Write(const std::string& path, const std::string& value) { std::ofstream(path) << value; }
  void Make(const std::string& leaf, const std::string& cpu_list, long cores) {
    for (const auto& d : Dirs(leaf)) fs::create_directories(d);
    std::string cpu = Dirs(leaf)[0], cpuset = Dirs(leaf).back();
    Write(cpuset + "/cpuset.cpus", cpu_list);
    if (!v2_) Write(cpuset + "/cpuset.mems", ReadFile("/sys/fs/cgroup/cpuset/cpuset.mems"));
    if (v2_ && leaf.empty()) Write(cpu + "/cgroup.subtree_control", "+cpu +cpuset");
    if (cores == 0) return;
    if (v2_) {
      Write(cpu + "/cpu.max", std::to_string(cores * 100000) + " 100000");
      Write(cpu + "/cpu.weight", "100");
    } else {
      Write(cpu + "/cpu.cfs_period_us", "100000");
      Write(cpu + "/cpu.cfs_quota_us", std::to_string(cores * 100000));
      Write(cpu + "/cpu.shares", "1024");
    }
  }

  std::string parent_;
  bool v2_ = false;
};

// The floor of one arrival order: probe and hog as plain processes in the cgroups above,
// each also pinned by hand as baton binds its ranks.
json FloorRun(const Cpus& cpus, bool training_first, const std::string& prefix) {
  FloorCgroups cg(cpus);
  std::unique_ptr<Subprocess> hog;
  auto start_hog = [&] {
    hog = std::make_unique<Subprocess>(cg.In("/hog", Pinned(cpus.others, HogCmd(6))),
                                       std::map<std::string, std::string>{}, "");
  };
  if (training_first) {
    start_hog();
    std::this_thread::sleep_for(std::chrono::milliseconds(kHogHeadStartMs));
  }
  Subprocess probe(cg.In("/probe", Pinned(cpus.probe, ProbeCmd())), {}, prefix);
  if (!training_first) start_hog();
  probe.Wait(std::chrono::seconds(60));
  hog->Signal(SIGKILL);
  hog->Wait(std::chrono::seconds(10));
  return ProbeOutput(prefix);
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

// The training job's CPU time over 1.5 s while the probe runs ÷ what its quota allows.
double TrainingRatio(Cluster& c, uint64_t hog) {
  std::string cgroup = Str(c.Limits(hog), "cgroup");
  double u0 = UsageUs(cgroup), quota = QuotaCores(cgroup);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  double u1 = UsageUs(cgroup);
  double wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return quota > 0 && u0 >= 0 && u1 >= u0 ? (u1 - u0) / (quota * wall_us) : -1;
}

// One arrival order under baton: probe an inference job, hog a training job.
json BatonRun(Cluster& c, bool training_first, double* training_ratio) {
  uint64_t hog = 0;
  auto submit_hog = [&] {
    hog = c.Submit("training", "hog", HogCmd(10));
    c.WaitState(hog, "JOB_STATE_RUNNING");
  };
  if (training_first) {
    submit_hog();
    std::this_thread::sleep_for(std::chrono::milliseconds(kHogHeadStartMs));
  }
  uint64_t probe = c.Submit("inference", "probe", ProbeCmd());
  if (!training_first) {
    c.WaitState(probe, "JOB_STATE_RUNNING");
    submit_hog();
  }
  *training_ratio = TrainingRatio(c, hog);
  json out = probe ? c.WaitOutput(probe, "p99_us") : json();
  c.Baton({"cancel", std::to_string(hog)});
  c.WaitState(hog, "JOB_STATE_CANCELLED", 30);
  return out;
}

// The probe as a job alone; notes where baton put it (the floor assumes cpus.probe).
json AloneRun(Cluster& c, json* round) {
  uint64_t probe = c.Submit("inference", "probe", ProbeCmd());
  json out = probe ? c.WaitOutput(probe, "p99_us") : json();
  (*round)["baton_probe_cpus"] = Str(c.Limits(probe), "cpus");
  return out;
}

// Probe and hog with no isolation and no pinning (the bench's own affinity undone).
json UnconfinedRun(const Cpus& cpus, const std::string& prefix) {
  Subprocess hog(Pinned(cpus.all, HogCmd(6)), {}, "");
  Subprocess probe(Pinned(cpus.all, ProbeCmd()), {}, prefix);
  probe.Wait(std::chrono::seconds(60));
  hog.Signal(SIGKILL);
  return ProbeOutput(prefix);
}

// The median of the measured values (-1 marks one that was not; zero is a measurement: a
// count of softirqs).
double Median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return x < 0; }), v.end());
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// The least disturbed round: the machine is shared and outside load only adds latency.
double Best(const std::vector<double>& v) {
  double best = -1;
  for (double x : v) {
    if (x > 0 && (best < 0 || x < best)) best = x;
  }
  return best;
}

struct Run {
  std::string dir, node;
  testing::TestSecurity* security = nullptr;
  std::vector<std::string> agent_flags;  // after `--` on the command line
};

void OneRound(int r, const Run& run, const NetSetup& net, Series* s, json* rounds) {
  json round = {{"round", r}};
  std::string base = run.dir + "/r" + std::to_string(r);
  for (int o = 0; o < 2; ++o) {
    Record(s, &round, std::string("floor_") + kOrders[o],
           FloorRun(net.cpus, o == 1, base + "-floor-" + std::to_string(o)));
  }
  // Both hand-built layouts, their order alternating by round.
  for (HandLayout layout : r % 2 == 0 ? std::vector{HandLayout::kIfb, HandLayout::kRoot}
                                      : std::vector{HandLayout::kRoot, HandLayout::kIfb}) {
    HandNetRound(net, base + (layout == HandLayout::kRoot ? "-hand-root" : "-hand"), layout, s,
                 &round);
  }
  {
    Cluster c(base, run.node, net.nic, run.security, run.agent_flags);
    if (!c.ok()) std::fprintf(stderr, "round %d: the agent did not register\n", r);
    Record(s, &round, "alone", AloneRun(c, &round));
    for (int o = 0; o < 2; ++o) {
      double ratio = -1;
      Record(s, &round, std::string("baton_") + kOrders[o], BatonRun(c, o == 1, &ratio));
      (*s)["training_cpu_vs_quota"].push_back(ratio);
      round["training_cpu_vs_quota_" + std::string(kOrders[o])] = ratio;
    }
    BatonNetRound(c, net, s, &round);
  }
  std::fprintf(stderr, "round %d: %s\n", r, round.dump().c_str());
  rounds->push_back(round);
}

}  // namespace

// What this run leaves should it be killed before its end (a SIGKILL, a Ctrl-C): every
// process in its cgroups (the jobs, the floor's probe and hog) and every process naming
// its directory (coordinator, agent, keepers, munged), the servers in its namespace, the
// namespace, its veth and the agent's IFB for it, its nft tables, its cgroups, its directory. The
// names come in the environment, so that this shell's own command line matches none of them; each
// is matched whole ("baton-bench-12" never reaches "baton-bench-123").
constexpr const char* kTeardown = R"sh(
for group in "baton-bench-$PID" "baton-bench-floor-$PID"; do
  for procs in $(find /sys/fs/cgroup -path "*/$group/*" -name cgroup.procs 2>/dev/null); do
    xargs -r kill -KILL <"$procs"
  done
done
pkill -KILL -f "$DIR/"
ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL
ip netns del "$NS"; ip link del "${NS}a"; ip link del "$IFB"
nft delete table inet "baton_$NODE"; nft delete table inet "bbhand_$NS"
sleep 1  # the killed processes leave their cgroups
for group in "baton-bench-$PID" "baton-bench-floor-$PID"; do
  find /sys/fs/cgroup -depth -type d \( -path "*/$group" -o -path "*/$group/*" \) \
    -exec rmdir {} \;
done
rm -rf "$DIR"
)sh";

int Main(const std::vector<std::string>& args) {
  // [--rounds=N] [-- AGENT_FLAGS…] (e.g. `-- --stats-interval 500ms` to see the polls)
  auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<const char*> own;
  for (auto a = args.begin(); a != dashes; ++a) own.push_back(a->c_str());
  cxxopts::Options opts("baton-bench-isolation",
                        "inference's tail next to training, under baton vs by hand");
  opts.custom_help("[--rounds=N] [-- AGENT_FLAGS...]");
  opts.add_options()("rounds", "rounds (each order, each setup)",
                     cxxopts::value<int>()->default_value("5"));
  const cxxopts::ParseResult flags = ParseFlags(opts, static_cast<int>(own.size()), own.data());
  const int rounds = FlagAtLeast(opts, flags, "rounds", 1);
  if (geteuid() != 0) {
    std::fprintf(stderr, "baton-bench-isolation: needs root (cgroups, tc, nft, netns)\n");
    return 2;
  }
  Run run;
  run.dir =
      (fs::temp_directory_path() / ("baton-bench-isolation-" + std::to_string(getpid()))).string();
  run.node = "bench" + std::to_string(getpid());
  if (dashes != args.end()) run.agent_flags.assign(dashes + 1, args.end());
  const std::string tag = std::to_string(getpid() % 100000);
  testing::TeardownGuard guard({"/bin/sh", "-c", kTeardown}, {{"PID", std::to_string(getpid())},
                                                              {"DIR", run.dir},
                                                              {"NS", NetSetup::NamespaceOf(tag)},
                                                              {"IFB", NetSetup::IfbOf(tag)},
                                                              {"NODE", run.node}});
  auto net = NetSetup::Create(tag);
  if (!net) {
    std::fprintf(stderr, "cannot create the network namespace, or fewer than 2 CPUs\n");
    return 1;
  }
  // The bench, the CLI, the coordinator and munged on the CPUs the probe does not use.
  if (!PinSelf(net->cpus.others))
    std::fprintf(stderr, "cannot pin the bench to %s\n", net->cpus.others.c_str());
  Series s;
  json per_round = json::array();
  try {  // the cluster, its jobs and the servers go before the namespace, even on errors
    fs::create_directories(run.dir);
    testing::TestSecurity security(run.dir + "/security");
    if (!security.ok()) std::fprintf(stderr, "security: %s\n", security.why().c_str());
    run.security = &security;
    net->StartServers(run.dir);
    for (int r = 0; r < rounds; ++r) OneRound(r, run, *net, &s, &per_round);
    json unconfined = UnconfinedRun(net->cpus, run.dir + "/unconfined");
    s["unconfined"].push_back(Num(unconfined, "p99_us"));
    per_round.push_back({{"unconfined", unconfined}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baton-bench-isolation: %s\n", e.what());
  }
  Cpus cpus = net->cpus;
  net.reset();
  fs::remove_all(run.dir);

  // A figure that could not be measured is null (and the run fails), never a made-up 1.0.
  bool complete = true;
  auto ratio = [&](double a, double b) -> json {
    if (a > 0 && b > 0) return a / b;
    complete = false;
    return nullptr;
  };
  auto worse = [](const json& a, const json& b) -> json {
    if (a.is_null() || b.is_null()) return nullptr;
    return std::max(a.get<double>(), b.get<double>());
  };
  json out;
  json median[2], best[2];
  for (int o = 0; o < 2; ++o) {
    std::string order = kOrders[o];
    median[o] = ratio(Median(s["baton_" + order]), Median(s["floor_" + order]));
    best[o] = ratio(Best(s["baton_" + order]), Best(s["floor_" + order]));
    out["p99_with_baton_vs_floor_median_" + order] = median[o];
    out["p99_with_baton_vs_floor_" + order] = best[o];
  }
  out["p99_with_baton_vs_floor_median"] = worse(median[0], median[1]);
  out["p99_with_baton_vs_floor"] = worse(best[0], best[1]);
  out["p99_with_baton_vs_alone"] =
      ratio(std::max(Median(s["baton_inference_first"]), Median(s["baton_training_first"])),
            Median(s["alone"]));
  out["p99_unconfined_vs_alone"] = ratio(Median(s["unconfined"]), Median(s["alone"]));
  out["training_cpu_vs_quota"] = ratio(Median(s["training_cpu_vs_quota"]), 1);
  // Network: baton's probe under the flood ÷ idle, the same for the tree built by hand,
  // and baton's flooded p99 ÷ the hand-built one's (how much of the tail is baton's).
  out["net_p99_vs_idle_median"] = ratio(Median(s["rtt_flood_baton"]), Median(s["rtt_idle_baton"]));
  out["net_p99_vs_idle"] = ratio(Best(s["rtt_flood_baton"]), Best(s["rtt_idle_baton"]));
  out["net_p99_vs_idle_hand_tc_median"] =
      ratio(Median(s["rtt_flood_hand_tc"]), Median(s["rtt_idle_hand_tc"]));
  out["net_p99_vs_idle_hand_tc"] = ratio(Best(s["rtt_flood_hand_tc"]), Best(s["rtt_idle_hand_tc"]));
  out["net_p99_baton_vs_hand_tc_median"] =
      ratio(Median(s["rtt_flood_baton"]), Median(s["rtt_flood_hand_tc"]));
  // baton's idle p99 ÷ the hand-built tree's: what baton adds to the idle tail, which
  // net_p99_vs_idle divides by; and baton's flooded p99 ÷ the hand-built tree's idle one.
  out["net_idle_p99_baton_vs_hand_tc_median"] =
      ratio(Median(s["rtt_idle_baton"]), Median(s["rtt_idle_hand_tc"]));
  out["net_p99_vs_hand_tc_idle_median"] =
      ratio(Median(s["rtt_flood_baton"]), Median(s["rtt_idle_hand_tc"]));
  // The same from every sample of all rounds pooled: one round's p99 of 2000 samples
  // swings 2-3x on these machines, idle or flooded, and so does a ratio of two of them.
  out["net_p99_vs_idle_pooled"] =
      ratio(PooledP99(s, "rtt_flood_baton"), PooledP99(s, "rtt_idle_baton"));
  out["net_p99_vs_idle_hand_tc_pooled"] =
      ratio(PooledP99(s, "rtt_flood_hand_tc"), PooledP99(s, "rtt_idle_hand_tc"));
  // The layout before the IFB, built by hand: what the IFB changes, in the same run.
  out["net_p99_vs_idle_hand_tc_root_median"] =
      ratio(Median(s["rtt_flood_hand_tc_root"]), Median(s["rtt_idle_hand_tc_root"]));
  out["net_p99_hand_tc_vs_root_median"] =
      ratio(Median(s["rtt_flood_hand_tc"]), Median(s["rtt_flood_hand_tc_root"]));
  for (const char* tag : {"baton", "hand_tc", "hand_tc_root"}) {
    double n = Median(s[std::string("probe_cpu_net_tx_") + tag]);
    if (n < 0) complete = false;
    out[std::string("probe_cpu_net_tx_") + tag] = n < 0 ? json(nullptr) : json(n);
  }
  out["capped_flow_vs_cap"] = ratio(Median(s["capped_flow_vs_cap"]), 1);
  out["capped_flow_vs_cap_hand_tc"] = ratio(Median(s["capped_flow_vs_cap_hand_tc"]), 1);
  json p99_median;
  for (const auto& [scenario, v] : s) p99_median[scenario] = Median(v);
  out["medians"] = p99_median;
  out["cpus"] = {{"probe", cpus.probe}, {"others", cpus.others}};
  out["rounds"] = per_round;
  std::printf("%s\n", out.dump().c_str());
  if (!complete) std::fprintf(stderr, "baton-bench-isolation: some figures were not measured\n");
  return complete ? 0 : 1;
}

}  // namespace baton::bench

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (int code = baton::bench::RunWorkload(args); code >= 0) return code;
  return baton::bench::Main(args);
}
