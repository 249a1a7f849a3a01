// The coordinator's nodes: each node's record as shown and stored (v1::Node), the link to
// its agent's command stream, and when it was last heard from. The table is the
// JobManager's, read and changed under its lock; the links are also read by the effects
// of its commits (commands sent once a change is durable), outside that lock, under the
// registry's own. So: every method but Send needs the owner's lock; Send runs anywhere.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/agent_link.h"
#include "proto/api.pb.h"

namespace baton {

class NodeRegistry {
 public:
  struct Entry {
    v1::Node node;                    // as `baton nodes` shows it and the store keeps it
    std::shared_ptr<AgentLink> link;  // its agent's current stream; null while cut off
    absl::Time last_seen;             // when it was last heard from (the monotonic clock)
    // Its GPUs' use as its agent last sampled it (heartbeats; memory only), and when.
    std::vector<v1::GpuUtilization> gpu_usage;
    int64_t gpu_usage_ms = 0;
  };
  using Table = std::map<std::string, Entry>;  // by node name

  Entry* Find(const std::string& name);
  const Entry* Find(const std::string& name) const;
  // A node read from the store at start: disconnected (a lost one stays lost), with a
  // fresh lease from `now` to come back in.
  Entry& Load(v1::Node node, absl::Time now);
  // A (re)registration on `link`: the node's entry (new, or as it was), heard from `now`;
  // commands go to `link` from now on.
  Entry& Connect(const std::string& name, std::shared_ptr<AgentLink> link, absl::Time now);
  // The stream `link` ended: false, changing nothing, unless it is still the node's
  // current one (a newer stream replaced it); else the node has no link any more.
  bool Disconnect(const std::string& name, const AgentLink* link);
  // Commands no longer go to the node (lost); it gets a link again when it registers.
  void Cut(Entry& entry);
  // Heard from the node (a heartbeat, a report); unknown nodes are ignored.
  void Seen(const std::string& name, absl::Time now);
  // Each command to its node's current link; a node without one misses it (it registers
  // again with its attempts' state, and reconciliation resends what still matters).
  // Without the owner's lock.
  void Send(const std::vector<std::pair<std::string, v1::CoordinatorCommand>>& commands);

  Table& all() { return nodes_; }
  const Table& all() const { return nodes_; }

 private:
  void SetLink(const std::string& name, std::shared_ptr<AgentLink> link);

  Table nodes_;
  std::mutex links_mu_;  // links_, which Send reads without the owner's lock
  std::map<std::string, std::shared_ptr<AgentLink>> links_;
};

}  // namespace baton
