#include "bench/isolation_net.h"

#include <algorithm>
#include <thread>

#include "bench/isolation_workloads.h"
#include "tests/util/softirqs.h"

namespace baton::bench {

using nlohmann::json;
using testing::ReadFile;
using testing::Subprocess;

namespace {

constexpr int kFloodSeconds = 5;
constexpr int kFloodLeadMs = 1000;  // the flood runs this long before the probe starts
constexpr uint64_t kHandCapMbps = 700;

std::vector<std::string> RttCmd(const NetSetup& net) {
  return {Bin("baton-bench-isolation"),
          "--rtt-probe",
          "--host",
          net.peer_ip,
          "--port",
          "7777",
          "--requests",
          "2000",
          "--interval-us",
          "1000"};
}

std::vector<std::string> FloodCmd(const NetSetup& net) {
  return {"iperf3", "-c", net.peer_ip, "-p", "5201", "-t", std::to_string(kFloodSeconds), "-J"};
}

json ParseOr(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json() : j;
}

double ReceivedMbps(const json& iperf) {
  if (!iperf.is_object() || !iperf.contains("end")) return -1;
  return Num(iperf["end"]["sum_received"], "bits_per_second", -1) / 1e6;
}

// Packets sent through HTB class `classid` of the NIC so far (-1 when it is not there).
double ClassPackets(const NetSetup& net, const std::string& classid) {
  auto r =
      testing::RunProcess({"tc", "-s", "class", "show", "dev", net.nic, "classid", classid}, {});
  size_t sent = r.out.find("Sent ");
  if (sent == std::string::npos) return -1;
  size_t bytes = r.out.find(" bytes ", sent);
  return bytes == std::string::npos ? -1 : std::atof(r.out.c_str() + bytes + 7);
}

// What BuildHandTc (or an agent of an earlier round) made on the NIC, but the nft table.
std::string RemoveHandTc(const NetSetup& net) {
  return "tc qdisc del dev " + net.nic + " root 2>/dev/null; tc qdisc del dev " + net.nic +
         " clsact 2>/dev/null; ip link del " + net.ifb + " 2>/dev/null";
}

// baton's tree (launcher/agent/isolation/net_caps.cc) at 1 Gbit/s. On the NIC: the root
// class, the inference class (prio 0), the default class (prio 1) and the class of capped
// traffic back from the IFB (prio 2); a clsact egress filter redirecting packets with the
// cap mark to the IFB, and a root filter putting them in that class when they return. On
// the IFB: the root class, its default class and one training class (prio 2, ceiling 70%,
// a tenth of it guaranteed). nft sends the probe's port to the inference class and marks
// iperf3's for the training class, as baton's cgroup rules do for jobs.
// HandLayout::kRoot builds the layout before the IFB (e9abfe4): the training class on the
// NIC's root, beside the inference class, chosen by priority alone.
bool BuildHandTc(const NetSetup& net, const std::string& table, HandLayout layout) {
  const std::string mark = "8388608",
                    code = "'4,32 0 0 4294963220,69 0 1 " + mark + ",6 0 0 4294967295,6 0 0 0'";
  auto tree = [](const std::string& dev) {
    std::string tc = "tc class add dev " + dev + " parent ";
    return "tc qdisc replace dev " + dev + " root handle 1: htb default 20 r2q 1000 && " + tc +
           "1: classid 1:1 htb rate 1000mbit ceil 1000mbit && " + tc +
           "1:1 classid 1:20 htb rate 300mbit ceil 1000mbit prio 1 && ";
  };
  const std::string tc = "tc class add dev " + net.nic + " parent ";
  const std::string training = "1:1 classid 1:100 htb rate 70mbit ceil 700mbit prio 2";
  const std::string nft = "nft add table inet " + table + " && nft add chain inet " + table +
                          " out '{ type filter hook output priority 0; }' && nft add rule inet " +
                          table +
                          " out tcp dport 7777 meta priority set 1:10 && nft add rule inet " +
                          table + " out tcp dport 5201 ";
  std::string cmd = RemoveHandTc(net) + "; " + tree(net.nic) + tc +
                    "1:1 classid 1:10 htb rate 300mbit ceil 1000mbit prio 0 && ";
  if (layout == HandLayout::kRoot) {
    cmd += tc + training + " && " + nft + "meta priority set 1:100";
  } else {
    cmd += tc + "1:1 classid 1:30 htb rate 100mbit ceil 1000mbit prio 2 && ip link add " + net.ifb +
           " type ifb && ip link set dev " + net.ifb + " up && " + tree(net.ifb) +
           "tc class add dev " + net.ifb + " parent " + training + " && tc qdisc add dev " +
           net.nic + " clsact && tc filter add dev " + net.nic + " egress pref 2983 bpf bytecode " +
           code + " action mirred egress redirect dev " + net.ifb + " && tc filter add dev " +
           net.nic + " parent 1: pref 2983 bpf bytecode " + code + " classid 1:30 && " + nft +
           "meta mark set meta mark '|' " + mark + " meta priority set 1:100";
  }
  return Sh(cmd) == 0;
}

// NET_TX softirqs on the probe's CPU while `run` runs, recorded as "probe_cpu_net_tx_<tag>"
// (-1 when unreadable).
template <typename F>
void RecordProbeCpuNetTx(const NetSetup& net, const std::string& tag, Series* s, json* round,
                         F&& run) {
  int cpu = std::atoi(net.cpus.probe.c_str());
  int64_t before = testing::NetTxSoftirqs(cpu);
  run();
  int64_t after = testing::NetTxSoftirqs(cpu);
  double n = before < 0 || after < 0 ? -1 : static_cast<double>(after - before);
  (*s)["probe_cpu_net_tx_" + tag].push_back(n);
  (*round)["probe_cpu_net_tx_" + tag] = n;
}

}  // namespace

void Record(Series* s, json* round, const std::string& scenario, const json& probe) {
  (*s)[scenario].push_back(Num(probe, "p99_us"));
  json kept = probe;
  if (kept.is_object() && kept.contains("samples_us")) {
    auto& pooled = s->pooled[scenario];
    for (const auto& v : kept["samples_us"]) {
      if (v.is_number()) pooled.push_back(v.get<double>());
    }
    kept.erase("samples_us");
  }
  (*round)[scenario] = kept;
}

double PooledP99(const Series& s, const std::string& scenario) {
  auto it = s.pooled.find(scenario);
  if (it == s.pooled.end() || it->second.empty()) return -1;
  std::vector<double> v = it->second;
  std::sort(v.begin(), v.end());
  return Percentile(v, 0.99);
}

std::unique_ptr<NetSetup> NetSetup::Create(const std::string& tag) {
  auto cpus = Cpus::OfThisMachine();
  if (!cpus) return nullptr;
  std::unique_ptr<NetSetup> n(new NetSetup());
  n->cpus = *cpus;
  n->ns = NamespaceOf(tag);
  n->nic = n->ns + "a";
  n->ifb = IfbOf(tag);
  std::string peer = n->ns + "b";
  std::string subnet = std::to_string(100 + std::atoi(tag.c_str()) % 100);
  std::string ip_a = "10." + subnet + ".0.1";
  n->peer_ip = "10." + subnet + ".0.2";
  if (Sh("ip netns add " + n->ns + " && ip link add " + n->nic + " type veth peer name " + peer +
         " && ip link set " + peer + " netns " + n->ns + " && ip addr add " + ip_a + "/24 dev " +
         n->nic + " && ip link set " + n->nic + " up && ip netns exec " + n->ns +
         " sh -c 'ip addr add " + n->peer_ip + "/24 dev " + peer + " && ip link set " + peer +
         " up && ip link set lo up'") != 0) {
    return nullptr;  // the destructor removes what was made
  }
  return n;
}

NetSetup::~NetSetup() {
  servers_.clear();
  Sh("ip netns del " + ns + " 2>/dev/null; ip link del " + nic + " 2>/dev/null; ip link del " +
     ifb + " 2>/dev/null");
}

void NetSetup::StartServers(const std::string& dir) {
  std::vector<std::string> in_peer = {"ip", "netns", "exec", ns};
  auto echo = in_peer;
  for (const auto& a :
       Pinned(cpus.probe, {Bin("baton-bench-isolation"), "--echo-server", "--port", "7777"})) {
    echo.push_back(a);
  }
  auto iperf = in_peer;
  for (const auto& a : Pinned(cpus.others, {"iperf3", "-s", "-p", "5201"})) iperf.push_back(a);
  servers_.push_back(
      std::make_unique<Subprocess>(echo, std::map<std::string, std::string>{}, dir + "/echo"));
  servers_.push_back(std::make_unique<Subprocess>(iperf, std::map<std::string, std::string>{},
                                                  dir + "/iperf3-server"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

void HandNetRound(const NetSetup& net, const std::string& prefix, HandLayout layout, Series* s,
                  json* round) {
  const std::string tag = layout == HandLayout::kRoot ? "hand_tc_root" : "hand_tc";
  std::string table = "bbhand_" + net.ns;
  if (!BuildHandTc(net, table, layout)) {
    std::fprintf(stderr, "cannot build the HTB tree by hand (%s)\n", tag.c_str());
  }
  Subprocess idle(Pinned(net.cpus.probe, RttCmd(net)), {}, prefix + "-idle");
  idle.Wait(std::chrono::seconds(60));
  Record(s, round, "rtt_idle_" + tag, ParseOr(ReadFile(prefix + "-idle.out")));
  Subprocess flood(Pinned(net.cpus.others, FloodCmd(net)), {}, prefix + "-flood");
  std::this_thread::sleep_for(std::chrono::milliseconds(kFloodLeadMs));
  double packets = ClassPackets(net, "1:10");
  Subprocess loaded(Pinned(net.cpus.probe, RttCmd(net)), {}, prefix + "-loaded");
  RecordProbeCpuNetTx(net, tag, s, round, [&] { loaded.Wait(std::chrono::seconds(60)); });
  Record(s, round, "rtt_flood_" + tag, ParseOr(ReadFile(prefix + "-loaded.out")));
  (*round)["inference_class_packets_" + tag] = ClassPackets(net, "1:10") - packets;
  flood.Wait(std::chrono::seconds(kFloodSeconds + 30));
  double ratio = ReceivedMbps(ParseOr(ReadFile(prefix + "-flood.out"))) / kHandCapMbps;
  (*s)["capped_flow_vs_cap_" + tag].push_back(ratio);
  (*round)["capped_flow_vs_cap_" + tag] = ratio;
  Sh("nft delete table inet " + table + "; " + RemoveHandTc(net));
}

void BatonNetRound(Cluster& c, const NetSetup& net, Series* s, json* round) {
  uint64_t idle = c.Submit("inference", "rtt", RttCmd(net));
  Record(s, round, "rtt_idle_baton", idle ? c.WaitOutput(idle, "p99_us") : json());
  uint64_t flood = c.Submit("training", "flood", FloodCmd(net));
  c.WaitState(flood, "JOB_STATE_RUNNING");
  double cap = Num(c.Limits(flood), "netCeilMbps", -1);
  std::this_thread::sleep_for(std::chrono::milliseconds(kFloodLeadMs));
  double packets = ClassPackets(net, "1:10");
  // Over the probe job's whole life, its submission and start included.
  RecordProbeCpuNetTx(net, "baton", s, round, [&] {
    uint64_t loaded = c.Submit("inference", "rtt", RttCmd(net));
    Record(s, round, "rtt_flood_baton", loaded ? c.WaitOutput(loaded, "p99_us") : json());
  });
  (*round)["inference_class_packets_baton"] = ClassPackets(net, "1:10") - packets;
  c.WaitState(flood, "JOB_STATE_SUCCEEDED", kFloodSeconds + 30);
  double mbps = ReceivedMbps(c.Output(flood));
  double ratio = mbps > 0 && cap > 0 ? mbps / cap : -1;
  (*s)["capped_flow_vs_cap"].push_back(ratio);
  (*round)["capped_flow_vs_cap"] = ratio;
}

}  // namespace baton::bench
