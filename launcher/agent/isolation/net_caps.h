// Network caps on the cluster NIC (docs/isolation.md; docs/recipes.md "Network caps"): an
// HTB tree on the NIC with the inference class and a guaranteed class for traffic outside
// capped jobs (the default class), neither below the link's rate; and one class per capped
// attempt on the NIC's IFB (ifb_redirect.h), so no class that is held at a ceiling shares
// a qdisc with inference traffic. An nftables rule on the attempt's cgroup v2 path selects
// its class (and marks a capped attempt's packets for the IFB). Created at launch, removed
// at the attempt's end, rebuilt or cleaned after an agent restart. Called by the Isolator;
// thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/ifb_redirect.h"
#include "launcher/agent/isolation/nft.h"
#include "launcher/agent/isolation/tc.h"

namespace baton {

struct NetCapsOptions {
  std::string nic;                     // the cluster interface
  uint64_t nic_mbps = 0;               // its rate (from config: a veth has none)
  uint32_t guaranteed_percent = 30;    // rate of the inference class, and of the default one
  uint32_t default_ceil_percent = 70;  // a job's ceiling when its spec names none
  std::string table = "baton";         // nftables table (one per agent)
  std::string ifb;                     // the capped classes' device; "": IfbNameFor(nic)
  // Or'ed into the skb mark of capped attempts' packets, which the NIC's filter sends to
  // the IFB: bits no other user of the mark on the node (CNI, kube-proxy) uses.
  uint32_t mark = 0x00800000;
};

struct NetClass {
  std::string class_id;  // "1:100"
  uint64_t ceil_mbps = 0;
};

class NetCaps {
 public:
  // Inference attempts' traffic, unless a spec caps it: guaranteed rate, the whole link,
  // HTB priority 0 (offered spare bandwidth and dequeued before every other class).
  static constexpr uint32_t kInferenceMinor = 0x10;
  static constexpr uint32_t kDefaultMinor = 0x20;  // traffic outside jobs: priority 1
  // On the NIC: capped attempts' traffic back from the IFB, past its caps (priority 2).
  static constexpr uint32_t kCappedMinor = 0x30;
  static constexpr uint32_t kFirstJobMinor = 0x100;
  static constexpr uint32_t kInferencePrio = 0, kDefaultPrio = 1, kTrainingPrio = 2;

  // Builds (or finds) the root qdisc, the default class and the nft chain.
  static absl::StatusOr<std::unique_ptr<NetCaps>> Create(NetCapsOptions options,
                                                         std::shared_ptr<CommandRunner> runner);

  // The rule sending the attempt's cgroup's traffic to its class: training gets a class of
  // its own (ceiling `ceil_mbps`, 0: the default share of the NIC; priority 2); inference
  // the shared inference class, or with `ceil_mbps` a class of its own at priority 0.
  // Idempotent; a failed rule removes the class it added.
  absl::StatusOr<NetClass> Add(const std::string& attempt, const std::string& cgroup_path,
                               int level, uint64_t ceil_mbps, bool inference);
  // Rule first, then class; OK when neither is there.
  absl::Status Remove(const std::string& attempt);
  absl::StatusOr<HtbClassStats> Stats(const std::string& attempt);
  // After a restart: learns the classes of `live` attempts from the rules' comments and
  // removes every rule and class that belongs to no live attempt.
  absl::Status Recover(const std::set<std::string>& live);
  // Removes the rules, the classes, the table, the redirect and the IFB (the agent's clean
  // shutdown in tests).
  absl::Status TearDown();

  uint64_t DefaultCeilMbps() const;
  uint64_t GuaranteedMbps() const;
  const NetCapsOptions& options() const { return options_; }
  const std::string& ifb() const { return redirect_.ifb(); }

 private:
  NetCaps(NetCapsOptions options, std::shared_ptr<CommandRunner> runner);
  uint32_t FreeMinorLocked(const std::map<uint32_t, HtbClassStats>& classes) const;
  // The tree that holds class `minor`: the NIC's for the inference class, else the IFB's.
  Htb& TreeOf(uint32_t minor) { return minor == kInferenceMinor ? htb_ : capped_; }

  const NetCapsOptions options_;
  const std::shared_ptr<CommandRunner> runner_;
  Htb htb_;               // on the NIC: 1:1, the inference and default classes
  IfbRedirect redirect_;  // the NIC's capped traffic to the IFB
  Htb capped_;            // on the IFB: 1:1, a default class and the capped classes
  NftCgroupRules nft_;
  std::mutex mu_;
  std::map<std::string, uint32_t> minors_;  // attempt -> class minor
};

}  // namespace baton
