// Idempotent wrapper over `nft` for the agent's table: `table inet <name>` with one
// output chain whose rules match a socket's cgroup v2 path and set the skb priority to an
// HTB class ("socket cgroupv2 level L PATH meta priority set 1:N"), and for a capped class
// a bit of the skb mark too ("meta mark set meta mark | M", the IFB's redirect: see
// ifb_redirect.h). Each rule carries a
// comment "<tag> <classid>" so the agent finds its rules again after a restart. Used by
// NetCaps; thread-compatible (NetCaps serialises).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/command.h"
#include "launcher/agent/isolation/tc.h"

namespace baton {

struct NftRule {
  int handle = 0;
  std::string tag;       // the attempt's name
  std::string class_id;  // "1:100"
  uint32_t mark = 0;     // the mark bits it sets (0: none)
};

class NftCgroupRules {
 public:
  NftCgroupRules(CommandRunner* runner, std::string table)
      : runner_(runner), table_(std::move(table)) {}

  absl::StatusOr<Ensured> EnsureChain();
  // A rule for `tag` already there is kept when it names the same class and mark, else
  // replaced (so a restart with another --net-cap-mark, or after an agent that set none,
  // rewrites the rules of live attempts). `mark` (0: none) is or'ed into the skb mark.
  // FailedPrecondition when the cgroup path does not exist (nft resolves it at once).
  absl::StatusOr<Ensured> EnsureRule(const std::string& tag, const std::string& cgroup_path,
                                     int level, const std::string& class_id, uint32_t mark = 0);
  absl::Status DeleteRule(const std::string& tag);         // OK when it is not there
  absl::StatusOr<std::map<std::string, NftRule>> Rules();  // by tag
  absl::Status DeleteTable();                              // OK when it is not there
  const std::string& table() const { return table_; }

 private:
  absl::StatusOr<CommandOutput> Nft(const std::vector<std::string>& args);

  CommandRunner* const runner_;
  const std::string table_;
};

// `nft -j list chain` JSON -> rules with a "<tag> <classid>[ <mark>]" comment (the mark in
// hex), by tag (rules without such a comment are not the agent's; a mark that does not
// parse reads as 0). InvalidArgument naming the problem when
// the JSON is malformed, has no "nftables" array, or a rule has no integer handle.
absl::StatusOr<std::map<std::string, NftRule>> ParseNftRules(const std::string& json);

}  // namespace baton
