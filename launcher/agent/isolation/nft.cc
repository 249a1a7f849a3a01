#include "launcher/agent/isolation/nft.h"

#include <cstdio>
#include <sstream>

#include "launcher/agent/isolation/ifb_redirect.h"
#include "nlohmann/json.hpp"

namespace baton {

absl::StatusOr<std::map<std::string, NftRule>> ParseNftRules(const std::string& json) {
  auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("nft -j: not a JSON object: '" + json + "'");
  }
  if (!doc.contains("nftables") || !doc["nftables"].is_array()) {
    return absl::InvalidArgumentError("nft -j: no 'nftables' array in " + doc.dump());
  }
  std::map<std::string, NftRule> out;
  for (const auto& item : doc["nftables"]) {
    if (!item.is_object() || !item.contains("rule")) continue;  // metainfo, the chain
    const auto& rule = item["rule"];
    if (!rule.is_object() || !rule.contains("handle") || !rule["handle"].is_number_integer()) {
      return absl::InvalidArgumentError("nft -j: a rule without an integer 'handle': " +
                                        item.dump());
    }
    if (!rule.contains("comment")) continue;  // not the agent's
    if (!rule["comment"].is_string()) {
      return absl::InvalidArgumentError("nft -j: a rule whose 'comment' is not a string: " +
                                        item.dump());
    }
    std::istringstream comment(rule["comment"].get<std::string>());
    NftRule r;
    if (!(comment >> r.tag >> r.class_id)) continue;  // someone else's comment
    if (std::string mark; comment >> mark && mark.rfind("0x", 0) == 0) {
      r.mark = ParseCapMark(mark).value_or(0);
    }
    r.handle = rule["handle"].get<int>();
    out[r.tag] = r;
  }
  return out;
}

absl::StatusOr<CommandOutput> NftCgroupRules::Nft(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"nft"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runner_->Run(argv);
}

absl::StatusOr<Ensured> NftCgroupRules::EnsureChain() {
  auto listed = Nft({"list", "chain", "inet", table_, "out"});
  if (!listed.ok()) return listed.status();
  if (listed->exit_code == 0) return Ensured::kAlreadyThere;
  // `add` is idempotent for tables and chains.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"add", "table", "inet", table_},
           {"add", "chain", "inet", table_, "out",
            "{ type filter hook output priority 0; policy accept; }"}}) {
    auto r = Nft(args);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) return absl::InternalError("nft " + JoinArgs(args) + ": " + r->err);
  }
  return Ensured::kCreated;
}

absl::StatusOr<Ensured> NftCgroupRules::EnsureRule(const std::string& tag,
                                                   const std::string& cgroup_path, int level,
                                                   const std::string& class_id, uint32_t mark) {
  auto rules = Rules();
  if (!rules.ok()) return rules.status();
  auto it = rules->find(tag);
  if (it != rules->end()) {
    if (it->second.class_id == class_id && it->second.mark == mark) return Ensured::kAlreadyThere;
    if (auto s = DeleteRule(tag); !s.ok()) return s;
  }
  std::vector<std::string> args = {"add",
                                   "rule",
                                   "inet",
                                   table_,
                                   "out",
                                   "socket",
                                   "cgroupv2",
                                   "level",
                                   std::to_string(level),
                                   "\"" + cgroup_path + "\""};
  std::string comment = tag + " " + class_id;
  if (mark != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", mark);
    args.insert(args.end(), {"meta", "mark", "set", "meta", "mark", "|", hex});
    comment += std::string(" ") + hex;
  }
  args.insert(args.end(), {"meta", "priority", "set", class_id, "comment", "\"" + comment + "\""});
  auto r = Nft(args);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    std::string msg = "nft " + JoinArgs(args) + ": " + r->err;
    if (r->err.find("No such file") != std::string::npos) {
      return absl::FailedPreconditionError(msg);
    }
    return absl::InternalError(msg);
  }
  return Ensured::kCreated;
}

absl::Status NftCgroupRules::DeleteRule(const std::string& tag) {
  auto rules = Rules();
  if (!rules.ok()) return rules.status();
  auto it = rules->find(tag);
  if (it == rules->end()) return absl::OkStatus();
  auto r =
      Nft({"delete", "rule", "inet", table_, "out", "handle", std::to_string(it->second.handle)});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError("nft delete rule " + tag + ": " + r->err);
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, NftRule>> NftCgroupRules::Rules() {
  auto r = Nft({"-j", "list", "chain", "inet", table_, "out"});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return std::map<std::string, NftRule>{};  // no chain: no rules
  auto rules = ParseNftRules(r->out);
  if (!rules.ok()) {
    return absl::InternalError("nft list chain inet " + table_ +
                               " out: " + std::string(rules.status().message()));
  }
  return rules;
}

absl::Status NftCgroupRules::DeleteTable() {
  auto listed = Nft({"list", "table", "inet", table_});
  if (!listed.ok()) return listed.status();
  if (listed->exit_code != 0) return absl::OkStatus();
  auto r = Nft({"delete", "table", "inet", table_});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError("nft delete table " + table_ + ": " + r->err);
  return absl::OkStatus();
}

}  // namespace baton
