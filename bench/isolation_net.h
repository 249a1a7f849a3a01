// The network half of baton-bench-isolation: a namespace joined to the root one by a veth
// (the agent's NIC), with an echo server and an iperf3 server in it; one round's RTTs,
// idle and under a capped iperf3 flood, through baton's HTB tree built by hand (no baton
// daemon) and through baton's jobs. Single-threaded (the bench's main thread).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/isolation_cluster.h"

namespace baton::bench {

// p99s and other per-round figures, by scenario name; `pooled` holds the RTT probes'
// every sample, by scenario, over all rounds.
struct Series : std::map<std::string, std::vector<double>> {
  std::map<std::string, std::vector<double>> pooled;
};
// Adds a probe's p99 to `scenario`, its samples to the pooled ones, and the rest of its
// document to the round's.
void Record(Series* s, nlohmann::json* round, const std::string& scenario,
            const nlohmann::json& probe);
// The p99 of `scenario`'s pooled samples (as LatencyJson takes it); -1 when it has none.
double PooledP99(const Series& s, const std::string& scenario);

class NetSetup {
 public:
  // Namespace, veth pair and addresses named after `tag`; nullptr when `ip` fails or the
  // machine has fewer than 2 CPUs.
  static std::unique_ptr<NetSetup> Create(const std::string& tag);
  // The namespace Create(tag) makes (its veth is this name + "a").
  static std::string NamespaceOf(const std::string& tag) { return "bbn" + tag; }
  // The IFB the agent makes for that veth (launcher/agent/isolation/ifb_redirect.h).
  static std::string IfbOf(const std::string& tag) { return "ifb-" + NamespaceOf(tag) + "a"; }
  ~NetSetup();  // the servers, then the namespace, the veth and the IFB
  NetSetup(const NetSetup&) = delete;
  NetSetup& operator=(const NetSetup&) = delete;

  // The echo server (on the probe's CPU) and iperf3 (on the others) in the namespace.
  void StartServers(const std::string& dir);

  std::string ns, nic, ifb, peer_ip;
  Cpus cpus;

 private:
  NetSetup() = default;
  std::vector<std::unique_ptr<testing::Subprocess>> servers_;
};

// The tc layout HandNetRound builds: baton's (the capped class on an IFB) or the one before
// it (the capped class on the NIC's root, beside the inference class).
enum class HandLayout { kIfb, kRoot };
// Idle and flooded RTT with baton's HTB tree built by hand on the NIC (the probe's port in
// the inference class, iperf3's in a training class, by nft) and the processes pinned as
// baton pins its jobs: "rtt_idle_hand_tc", "rtt_flood_hand_tc", "capped_flow_vs_cap_hand_tc"
// and "probe_cpu_net_tx_hand_tc" (NET_TX softirqs on the probe's CPU while it runs under the
// flood); with kRoot the same names end in "_hand_tc_root".
void HandNetRound(const NetSetup& net, const std::string& prefix, HandLayout layout, Series* s,
                  nlohmann::json* round);
// The same as baton jobs: "rtt_idle_baton", "rtt_flood_baton", "capped_flow_vs_cap",
// "probe_cpu_net_tx_baton" (over the flooded probe job's life).
void BatonNetRound(Cluster& c, const NetSetup& net, Series* s, nlohmann::json* round);

}  // namespace baton::bench
