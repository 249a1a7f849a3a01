#include "launcher/agent/isolation/setup.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "launcher/agent/isolation/cgroup_v1.h"
#include "launcher/agent/isolation/cgroup_v2.h"
#include "launcher/agent/isolation/command.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::unique_ptr<CgroupDriver>> MakeDriver(const IsolationOptions& o,
                                                         CgroupLayout layout,
                                                         const std::string& parent) {
  auto fs = std::make_shared<RealCgroupFs>();
  if (layout == CgroupLayout::kV2) {
    auto driver = std::make_unique<CgroupV2Driver>(fs, o.cgroup_root, parent, "",
                                                   std::make_shared<BpfDeviceFilter>());
    auto own = ParseV2CgroupPath(ReadAll(o.self_cgroup_file));
    if (own.ok()) {
      driver->SetAgentCgroup(*own, getpid());
    } else {
      spdlog::warn("cgroup v2: cannot tell the agent's own cgroup ({})", own.status().ToString());
    }
    return std::unique_ptr<CgroupDriver>(std::move(driver));
  }
  auto mounts = ParseV1Mounts(ReadAll(o.mounts_file));
  std::string unified = layout == CgroupLayout::kHybrid ? o.cgroup_root + "/unified" : "";
  return std::unique_ptr<CgroupDriver>(
      std::make_unique<CgroupV1Driver>(fs, std::move(mounts), parent, unified, "unified/"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Isolator>> CreateIsolator(const IsolationOptions& o,
                                                         const std::string& node_name,
                                                         const v1::Inventory& inventory) {
  if (o.mode != "auto" && o.mode != "v1" && o.mode != "v2" && o.mode != "none") {
    return absl::InvalidArgumentError("--isolation '" + o.mode +
                                      "': expected auto, v1, v2 or none");
  }
  auto none = [&] { return std::make_unique<Isolator>(inventory, o.classes, nullptr, nullptr); };
  if (o.mode == "none") return none();
  CgroupLayout layout = DetectCgroupLayout(o.cgroup_root);
  bool v2_host = layout == CgroupLayout::kV2;
  bool v1_host = layout == CgroupLayout::kV1 || layout == CgroupLayout::kHybrid;
  if ((o.mode == "v2" && !v2_host) || (o.mode == "v1" && !v1_host)) {
    return absl::FailedPreconditionError("--isolation " + o.mode + ": " + o.cgroup_root +
                                         " mounts " + CgroupLayoutName(layout));
  }
  if (layout == CgroupLayout::kNone) {
    spdlog::warn("no cgroup filesystem at {}: jobs run without isolation", o.cgroup_root);
    return none();
  }
  std::string parent = o.cgroup_parent.empty() ? "baton/" + node_name : o.cgroup_parent;
  auto driver = MakeDriver(o, layout, parent);
  if (!driver.ok()) return driver.status();
  if (absl::Status s = (*driver)->Init(); !s.ok()) {
    if (o.mode != "auto") return s;
    spdlog::warn("cannot create cgroups under {} ({}): jobs run without isolation", o.cgroup_root,
                 s.ToString());
    return none();
  }
  bool gpus_to_fence = false;
  for (const auto& g : inventory.gpus()) gpus_to_fence |= g.has_minor();
  if (gpus_to_fence) {
    // A job that unsets CUDA_VISIBLE_DEVICES must still not open another job's GPU.
    if (absl::Status s = (*driver)->CanFenceDevices(); !s.ok()) {
      return absl::FailedPreconditionError(
          "this node has GPUs and cannot fence them from each other's jobs: " +
          std::string(s.message()) +
          " (cgroup v1 needs the devices hierarchy, cgroup v2 BPF device programs; only a "
          "node that runs no untrusted jobs may use --isolation none)");
    }
  }
  std::unique_ptr<NetCaps> net;
  if (!o.net.nic.empty()) {
    if ((*driver)->NetPath("x").empty()) {
      return absl::FailedPreconditionError("--nic " + o.net.nic +
                                           ": network caps need a cgroup v2 tree to classify by");
    }
    auto caps = NetCaps::Create(o.net, std::make_shared<RealCommandRunner>());
    if (!caps.ok()) return caps.status();
    net = std::move(*caps);
  }
  spdlog::info("isolation: {} under {}/{}{}", (*driver)->mode(), o.cgroup_root, parent,
               net ? ", network caps on " + o.net.nic : "");
  return std::make_unique<Isolator>(inventory, o.classes, std::move(*driver), std::move(net));
}

}  // namespace baton
