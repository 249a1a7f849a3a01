#include "coordinator/node_registry.h"

namespace baton {

NodeRegistry::Entry* NodeRegistry::Find(const std::string& name) {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

const NodeRegistry::Entry* NodeRegistry::Find(const std::string& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

NodeRegistry::Entry& NodeRegistry::Load(v1::Node node, absl::Time now) {
  Entry& e = nodes_[node.name()];
  e.node = std::move(node);
  if (e.node.state() != v1::NODE_STATE_LOST) e.node.set_state(v1::NODE_STATE_DISCONNECTED);
  e.last_seen = now;
  return e;
}

NodeRegistry::Entry& NodeRegistry::Connect(const std::string& name, std::shared_ptr<AgentLink> link,
                                           absl::Time now) {
  Entry& e = nodes_[name];
  e.node.set_name(name);  // the key, which Cut finds the link by
  e.link = link;
  e.last_seen = now;
  SetLink(name, std::move(link));
  return e;
}

bool NodeRegistry::Disconnect(const std::string& name, const AgentLink* link) {
  Entry* e = Find(name);
  if (e == nullptr || e->link.get() != link) return false;
  Cut(*e);
  return true;
}

void NodeRegistry::Cut(Entry& entry) {
  entry.link.reset();
  SetLink(entry.node.name(), nullptr);
}

void NodeRegistry::Seen(const std::string& name, absl::Time now) {
  if (Entry* e = Find(name)) e->last_seen = now;
}

void NodeRegistry::Send(
    const std::vector<std::pair<std::string, v1::CoordinatorCommand>>& commands) {
  if (commands.empty()) return;
  std::lock_guard<std::mutex> lock(links_mu_);
  for (const auto& [node, cmd] : commands) {
    auto it = links_.find(node);
    if (it != links_.end()) it->second->Send(cmd);
  }
}

void NodeRegistry::SetLink(const std::string& name, std::shared_ptr<AgentLink> link) {
  std::lock_guard<std::mutex> lock(links_mu_);
  if (link) {
    links_[name] = std::move(link);
  } else {
    links_.erase(name);
  }
}

}  // namespace baton
