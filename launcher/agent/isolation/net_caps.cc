#include "launcher/agent/isolation/net_caps.h"

#include <algorithm>

#include "common/status.h"

namespace baton {
namespace {

// 0 (no class) for a malformed id: a rule whose class cannot be named has none to delete.
uint32_t MinorOf(const std::string& class_id) {
  uint32_t major = 0, minor = 0;
  return ParseClassId(class_id, &major, &minor) ? minor : 0;
}

}  // namespace

NetCaps::NetCaps(NetCapsOptions options, std::shared_ptr<CommandRunner> runner)
    : options_(std::move(options)),
      runner_(std::move(runner)),
      htb_(runner_.get(), options_.nic),
      redirect_(runner_.get(), options_.nic,
                options_.ifb.empty() ? IfbNameFor(options_.nic) : options_.ifb, options_.mark),
      capped_(runner_.get(), redirect_.ifb()),
      nft_(runner_.get(), options_.table) {}

absl::StatusOr<std::unique_ptr<NetCaps>> NetCaps::Create(NetCapsOptions options,
                                                         std::shared_ptr<CommandRunner> runner) {
  if (options.nic.empty() || options.nic_mbps == 0) {
    return absl::InvalidArgumentError("network caps need a NIC and its rate");
  }
  if (options.mark == 0) return absl::InvalidArgumentError("network caps need a nonzero mark");
  std::unique_ptr<NetCaps> caps(new NetCaps(std::move(options), std::move(runner)));
  auto root = caps->htb_.EnsureRoot(caps->options_.nic_mbps, kDefaultMinor);
  if (!root.ok()) return root.status();
  auto inference = caps->htb_.EnsureClass(kInferenceMinor, caps->GuaranteedMbps(),
                                          caps->options_.nic_mbps, kInferencePrio);
  if (!inference.ok()) return inference.status();
  auto def = caps->htb_.EnsureClass(kDefaultMinor, caps->GuaranteedMbps(), caps->options_.nic_mbps,
                                    kDefaultPrio);
  if (!def.ok()) return def.status();
  auto back =
      caps->htb_.EnsureClass(kCappedMinor, std::max<uint64_t>(1, caps->options_.nic_mbps / 10),
                             caps->options_.nic_mbps, kTrainingPrio);
  if (!back.ok()) return back.status();
  auto redirect = caps->redirect_.Ensure(kCappedMinor);
  if (!redirect.ok()) return redirect.status();
  // Until the IFB's tree is there, its packets leave through its default qdisc, uncapped
  // but not lost.
  auto capped_root = caps->capped_.EnsureRoot(caps->options_.nic_mbps, kDefaultMinor);
  if (!capped_root.ok()) return capped_root.status();
  auto capped_def = caps->capped_.EnsureClass(kDefaultMinor, caps->GuaranteedMbps(),
                                              caps->options_.nic_mbps, kDefaultPrio);
  if (!capped_def.ok()) return capped_def.status();
  auto chain = caps->nft_.EnsureChain();
  if (!chain.ok()) return chain.status();
  return caps;
}

uint64_t NetCaps::DefaultCeilMbps() const {
  return std::max<uint64_t>(1, options_.nic_mbps * options_.default_ceil_percent / 100);
}

uint64_t NetCaps::GuaranteedMbps() const {
  return std::max<uint64_t>(1, options_.nic_mbps * options_.guaranteed_percent / 100);
}

uint32_t NetCaps::FreeMinorLocked(const std::map<uint32_t, HtbClassStats>& classes) const {
  std::set<uint32_t> used;
  for (const auto& [minor, st] : classes) used.insert(minor);
  for (const auto& [name, minor] : minors_) used.insert(minor);
  uint32_t m = kFirstJobMinor;
  while (used.count(m)) ++m;
  return m;
}

absl::StatusOr<NetClass> NetCaps::Add(const std::string& attempt, const std::string& cgroup_path,
                                      int level, uint64_t ceil_mbps, bool inference) {
  std::lock_guard<std::mutex> lock(mu_);
  if (inference && ceil_mbps == 0) {
    auto rule = nft_.EnsureRule(attempt, cgroup_path, level, HtbClassId(kInferenceMinor));
    if (!rule.ok()) return rule.status();
    minors_[attempt] = kInferenceMinor;
    return NetClass{HtbClassId(kInferenceMinor), options_.nic_mbps};
  }
  uint64_t ceil = std::min(ceil_mbps == 0 ? DefaultCeilMbps() : ceil_mbps, options_.nic_mbps);
  auto classes = capped_.Classes();
  if (!classes.ok()) return classes.status();
  auto known = minors_.find(attempt);
  uint32_t minor = known != minors_.end() ? known->second : FreeMinorLocked(*classes);
  // A job's own guarantee is a tenth of its ceiling: it borrows the rest while the link
  // has room, and traffic outside capped jobs keeps its guaranteed class.
  auto made = capped_.EnsureClass(minor, std::max<uint64_t>(1, ceil / 10), ceil,
                                  inference ? kInferencePrio : kTrainingPrio);
  if (!made.ok()) return made.status();
  auto rule = nft_.EnsureRule(attempt, cgroup_path, level, HtbClassId(minor), options_.mark);
  if (!rule.ok()) {
    if (*made == Ensured::kCreated) (void)capped_.DeleteClass(minor);
    return rule.status();
  }
  minors_[attempt] = minor;
  return NetClass{HtbClassId(minor), ceil};
}

absl::Status NetCaps::Remove(const std::string& attempt) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rules = nft_.Rules();
  if (!rules.ok()) return rules.status();
  uint32_t minor = 0;
  if (auto it = rules->find(attempt); it != rules->end()) minor = MinorOf(it->second.class_id);
  if (auto it = minors_.find(attempt); it != minors_.end()) minor = it->second;
  BATON_RETURN_IF_ERROR(nft_.DeleteRule(attempt));
  // The inference class is shared: it stays.
  if (minor != 0 && minor != kInferenceMinor) BATON_RETURN_IF_ERROR(capped_.DeleteClass(minor));
  minors_.erase(attempt);
  return absl::OkStatus();
}

absl::StatusOr<HtbClassStats> NetCaps::Stats(const std::string& attempt) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = minors_.find(attempt);
  if (it == minors_.end()) return absl::NotFoundError("no network class for " + attempt);
  auto classes = TreeOf(it->second).Classes();
  if (!classes.ok()) return classes.status();
  auto c = classes->find(it->second);
  if (c == classes->end()) return absl::NotFoundError("class " + HtbClassId(it->second) + " gone");
  return c->second;
}

absl::Status NetCaps::Recover(const std::set<std::string>& live) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rules = nft_.Rules();
  if (!rules.ok()) return rules.status();
  std::set<uint32_t> keep = {1, kInferenceMinor, kDefaultMinor};
  for (const auto& [tag, rule] : *rules) {
    if (live.count(tag)) {
      minors_[tag] = MinorOf(rule.class_id);
      keep.insert(minors_[tag]);
    } else {
      BATON_RETURN_IF_ERROR(nft_.DeleteRule(tag));
    }
  }
  // Capped classes belong on the IFB: one found on the NIC is an older agent's, removed.
  for (Htb* tree : {&capped_, &htb_}) {
    auto classes = tree->Classes();
    if (!classes.ok()) return classes.status();
    for (const auto& [minor, st] : *classes) {
      bool kept = tree == &capped_ ? keep.count(minor) > 0
                                   : minor == 1 || minor == kInferenceMinor ||
                                         minor == kDefaultMinor || minor == kCappedMinor;
      if (!kept) BATON_RETURN_IF_ERROR(tree->DeleteClass(minor));
    }
  }
  return absl::OkStatus();
}

absl::Status NetCaps::TearDown() {
  std::lock_guard<std::mutex> lock(mu_);
  minors_.clear();
  BATON_RETURN_IF_ERROR(nft_.DeleteTable());
  BATON_RETURN_IF_ERROR(redirect_.Remove());  // the IFB goes, with its tree
  return htb_.DeleteRoot();
}

}  // namespace baton
