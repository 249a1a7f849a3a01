#include "launcher/agent/gpu_modes.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace baton {
namespace {

bool InMig(const v1::Gpu& g) { return !g.mig_profile().empty(); }

}  // namespace

absl::Status MarkMpsPools(const std::string& selector, v1::Inventory* inv) {
  if (selector.empty()) return absl::OkStatus();
  if (selector == "all") {
    for (v1::Gpu& g : *inv->mutable_gpus()) g.set_mps_pool(!InMig(g));
    return absl::OkStatus();
  }
  std::set<int> pools;  // positions in inv->gpus()
  for (absl::string_view entry : absl::StrSplit(selector, ',')) {
    const std::string name(entry);
    uint32_t index = 0;
    const bool by_index = absl::SimpleAtoi(name, &index) && !name.empty() &&
                          name.find_first_not_of("0123456789") == std::string::npos;
    if (!by_index && name.rfind("GPU-", 0) != 0) {
      return absl::InvalidArgumentError("--mps-gpus: \"" + name +
                                        "\" is neither a GPU index nor a GPU-… UUID "
                                        "(give \"all\" or a list such as \"0,2\")");
    }
    bool found = false;
    for (int i = 0; i < inv->gpus_size(); ++i) {
      const v1::Gpu& g = inv->gpus(i);
      const bool named =
          by_index ? g.index() == index : (g.uuid() == name || g.parent_uuid() == name);
      if (!named) continue;
      if (InMig(g)) {
        return absl::InvalidArgumentError(
            "--mps-gpus: GPU " + name +
            " is in MIG mode; a MIG GPU is never an MPS pool (its slices are the isolation)");
      }
      pools.insert(i);
      found = true;
    }
    if (!found) {
      return absl::InvalidArgumentError("--mps-gpus: this node has no GPU " + name);
    }
  }
  for (int i : pools) inv->mutable_gpus(i)->set_mps_pool(true);
  return absl::OkStatus();
}

}  // namespace baton
