// Builds the node's Isolator from the agent's flags: detects the cgroup layout (or takes
// the one named), creates the parent cgroups, and sets up network caps when a NIC is
// configured. Called once by baton-agent's main; thread-safe (no shared state).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/isolator.h"

namespace baton {

struct IsolationOptions {
  std::string mode = "auto";  // auto | v1 | v2 | none
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string cgroup_parent;  // relative to each hierarchy; "" : baton/<node>
  std::string mounts_file = "/proc/self/mounts";
  std::string self_cgroup_file = "/proc/self/cgroup";  // where the agent lives (v2)
  ClassOptions classes;
  NetCapsOptions net;  // net.nic "" : no network caps
};

// InvalidArgument for an unknown mode; FailedPrecondition when the named mode cannot
// work here. `auto` falls back to mode none (logged) on a host without cgroup rights.
absl::StatusOr<std::unique_ptr<Isolator>> CreateIsolator(const IsolationOptions& options,
                                                         const std::string& node_name,
                                                         const v1::Inventory& inventory);

}  // namespace baton
