#include "coordinator/spec_validation.h"

#include <cctype>
#include <string>

#include "common/ids.h"
#include "common/resources.h"
#include "common/status.h"
#include "coordinator/dependencies.h"
#include "coordinator/sched_adapter.h"

namespace baton {
namespace {

constexpr uint32_t kMaxNodes = 10'000;
constexpr uint32_t kMaxRanksPerNode = 1'024;
constexpr uint32_t kMaxGpusPerNode = 64;
constexpr size_t kMaxPathBytes = 4095;  // PATH_MAX less its terminator

// What an error shows of a value the caller sent: its head only.
std::string Shown(const std::string& text) {
  return text.size() > 80 ? text.substr(0, 80) + "…" : text;
}

absl::Status Invalid(std::string_view field, const std::string& why) {
  return absl::InvalidArgumentError("spec." + std::string(field) + ": " + why);
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// "1g.18gb", "3g.71gb", "7g.141gb": NVIDIA's MIG profile names.
bool IsMigProfile(const std::string& p) {
  size_t g = p.find("g.");
  if (g == 0 || g == std::string::npos || p.size() < g + 5 || p.substr(p.size() - 2) != "gb") {
    return false;
  }
  for (size_t i = 0; i < g; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(p[i]))) return false;
  }
  for (size_t i = g + 2; i + 2 < p.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(p[i]))) return false;
  }
  return p.size() > g + 4;
}

std::string DefaultName(const std::string& argv0) {
  std::string base = argv0.substr(argv0.find_last_of('/') + 1);
  std::string out;
  for (char c : base) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (out.size() < 63) out.push_back(ok ? c : '-');
  }
  if (out.empty() || !std::isalnum(static_cast<unsigned char>(out[0]))) out = "job" + out;
  return out.substr(0, 63);
}

// A label-like string: a selector or toleration key or value, a pool, a GPU model.
absl::Status CheckName(std::string_view field, const std::string& text) {
  if (text.size() > Policy::kMaxNameBytes) {
    return Invalid(field, FormatBytes(text.size()) + " long; names are at most " +
                              std::to_string(Policy::kMaxNameBytes) + " bytes");
  }
  if (text.find('\0') != std::string::npos) return Invalid(field, "contains a NUL byte");
  return absl::OkStatus();
}

absl::Status CheckArgString(std::string_view field, const std::string& text) {
  if (text.size() >= Policy::kMaxArgStringBytes) {
    return Invalid(field, "one entry is " + FormatBytes(text.size()) +
                              "; the kernel takes at most 128 KiB per argument or variable");
  }
  if (text.find('\0') != std::string::npos) return Invalid(field, "contains a NUL byte");
  return absl::OkStatus();
}

absl::Status CheckCommand(const Policy::Admission& limits, v1::JobSpec* spec) {
  if (spec->command_size() == 0 || spec->command(0).empty()) {
    return Invalid("command", "missing: give the program to run (e.g. -- python train.py)");
  }
  uint64_t bytes = 0;
  for (const auto& arg : spec->command()) {
    BATON_RETURN_IF_ERROR(CheckArgString("command", arg));
    bytes += arg.size() + 1;
  }
  if (bytes > limits.max_command_bytes) {
    return Invalid("command", FormatBytes(bytes) + " long, above the " +
                                  FormatBytes(limits.max_command_bytes) +
                                  " allowed (admission.max_command_bytes)");
  }
  if (spec->name().empty()) spec->set_name(DefaultName(spec->command(0)));
  if (!IsValidName(spec->name())) {
    return Invalid("name",
                   "'" + Shown(spec->name()) + "' must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  }
  if (static_cast<uint64_t>(spec->env_size()) > limits.max_env_entries) {
    return Invalid("env", std::to_string(spec->env_size()) + " variables, above the " +
                              std::to_string(limits.max_env_entries) +
                              " allowed (admission.max_env_entries)");
  }
  uint64_t env_bytes = 0;
  for (const auto& [key, value] : spec->env()) {
    if (key.size() > Policy::kMaxNameBytes || !IsEnvName(key)) {
      return Invalid("env", "'" + Shown(key) + "' is not a valid variable name");
    }
    BATON_RETURN_IF_ERROR(CheckArgString("env", key + "=" + value));
    env_bytes += key.size() + value.size() + 2;
  }
  if (env_bytes > limits.max_env_bytes) {
    return Invalid("env", FormatBytes(env_bytes) + " in all, above the " +
                              FormatBytes(limits.max_env_bytes) +
                              " allowed (admission.max_env_bytes)");
  }
  for (const auto* dir : {&spec->working_dir(), &spec->checkpoint_dir()}) {
    const char* field = dir == &spec->working_dir() ? "working_dir" : "checkpoint_dir";
    if (dir->size() > kMaxPathBytes) return Invalid(field, "longer than 4095 bytes");
    if (dir->find('\0') != std::string::npos) return Invalid(field, "contains a NUL byte");
    if (!dir->empty() && (*dir)[0] != '/') {
      return Invalid(field, "'" + Shown(*dir) + "' must be an absolute path");
    }
  }
  return absl::OkStatus();
}

// Where the job may run: selectors, tolerations, pool and GPU model, bounded.
absl::Status CheckPlacementTerms(const Policy::Admission& limits, const v1::JobSpec& spec) {
  if (static_cast<uint64_t>(spec.node_selector_size()) > limits.max_selectors) {
    return Invalid("node_selector",
                   std::to_string(spec.node_selector_size()) + " entries, above the " +
                       std::to_string(limits.max_selectors) + " allowed (admission.max_selectors)");
  }
  for (const auto& [key, value] : spec.node_selector()) {
    BATON_RETURN_IF_ERROR(CheckName("node_selector", key));
    BATON_RETURN_IF_ERROR(CheckName("node_selector", value));
  }
  if (static_cast<uint64_t>(spec.tolerations_size()) > limits.max_tolerations) {
    return Invalid("tolerations", std::to_string(spec.tolerations_size()) + " entries, above the " +
                                      std::to_string(limits.max_tolerations) +
                                      " allowed (admission.max_tolerations)");
  }
  for (const auto& t : spec.tolerations()) {
    for (const std::string* text : {&t.key(), &t.value(), &t.effect()}) {
      BATON_RETURN_IF_ERROR(CheckName("tolerations", *text));
    }
  }
  BATON_RETURN_IF_ERROR(CheckName("pool", spec.pool()));
  BATON_RETURN_IF_ERROR(CheckName("topology.level", spec.topology().level()));
  BATON_RETURN_IF_ERROR(CheckName("gpu_model", spec.gpu_model()));
  return CheckName("mig_profile", spec.mig_profile());
}

absl::Status CheckShape(const Policy& policy, v1::JobSpec* spec) {
  if (spec->nodes() == 0) spec->set_nodes(1);
  if (spec->ranks_per_node() == 0) spec->set_ranks_per_node(1);
  if (spec->nodes() > kMaxNodes) return Invalid("nodes", "at most 10000");
  if (spec->ranks_per_node() > kMaxRanksPerNode) return Invalid("ranks_per_node", "at most 1024");
  if (spec->gpus_per_node() > kMaxGpusPerNode) return Invalid("gpus_per_node", "at most 64");
  if (spec->cpu_millis_per_node() == 0) {
    spec->set_cpu_millis_per_node(policy.default_cpu_millis_per_rank * spec->ranks_per_node());
  }
  if (spec->memory_bytes_per_node() == 0) {
    spec->set_memory_bytes_per_node(policy.default_memory_bytes_per_rank * spec->ranks_per_node());
  }
  if (spec->gpu_share_percent() > 0) {
    // A share is of one GPU, for one process: the GPU is implied when not given.
    if (spec->gpus_per_node() == 0) spec->set_gpus_per_node(1);
    if (spec->gpu_share_percent() > 100) return Invalid("gpu_share_percent", "at most 100%");
    if (spec->nodes() != 1 || spec->ranks_per_node() != 1 || spec->gpus_per_node() != 1) {
      return Invalid("gpu_share_percent",
                     "a share is of one GPU for one rank: nodes, ranks_per_node and "
                     "gpus_per_node must be 1");
    }
    if (!spec->mig_profile().empty()) {
      return Invalid("gpu_share_percent", "a share is of a whole GPU, not of a MIG slice");
    }
    if (spec->gpu_memory_bytes() == 0) {
      return Invalid("gpu_share_percent",
                     "needs gpu_memory beside it: the GPU memory MPS pins for the share");
    }
  }
  if (!spec->mig_profile().empty()) {
    if (!IsMigProfile(spec->mig_profile())) {
      return Invalid("mig_profile",
                     "'" + Shown(spec->mig_profile()) + "' is not a MIG profile like 1g.18gb");
    }
    if (spec->gpus_per_node() == 0) return Invalid("mig_profile", "set, but gpus_per_node is 0");
  }
  if (spec->gpu_memory_bytes() > 0 && spec->gpus_per_node() == 0) {
    return Invalid("gpu_memory_bytes", "set, but gpus_per_node is 0");
  }
  return absl::OkStatus();
}

absl::Status CheckPolicy(const Caller& caller, const Policy& policy, v1::JobSpec* spec) {
  if (!spec->tenant().empty() && !IsValidName(spec->tenant())) {
    return Invalid("tenant", "'" + Shown(spec->tenant()) + "' is invalid");
  }
  absl::StatusOr<std::string> tenant = access::SubmitTenant(policy.access, caller, spec->tenant());
  if (!tenant.ok()) {
    if (tenant.status().code() == absl::StatusCode::kInvalidArgument) {
      return absl::InvalidArgumentError("spec." + std::string(tenant.status().message()));
    }
    return tenant.status();
  }
  spec->set_tenant(*tenant);
  if (caller.uid == 0 && !policy.access.root_tenants.count(spec->tenant())) {
    return absl::PermissionDeniedError(
        caller.user + " may not submit in tenant " + spec->tenant() +
        ": the job would run as root on the nodes, which the policy allows per tenant only "
        "(tenants[].allow_root); submit as the user the job should run as");
  }
  if (spec->priority_class().empty()) spec->set_priority_class(policy.default_class);
  const PriorityClass* cls = policy.Find(spec->priority_class());
  if (cls == nullptr) {
    std::string known;
    for (const auto& c : policy.classes) known += (known.empty() ? "" : ", ") + c.name;
    return Invalid("priority_class",
                   "unknown class '" + Shown(spec->priority_class()) + "' (known: " + known + ")");
  }
  if (absl::Status s = access::CheckClassAllowed(policy, spec->tenant(), cls->name); !s.ok()) {
    return s;
  }
  if (spec->grace_seconds() == 0) spec->set_grace_seconds(policy.default_grace_seconds);
  if (spec->grace_seconds() > policy.max_grace_seconds) {
    return Invalid("grace_seconds", "at most " + std::to_string(policy.max_grace_seconds));
  }
  if (cls->service && spec->max_runtime_seconds() > 0) {
    return Invalid("max_runtime_seconds",
                   "class '" + cls->name + "' runs services, which have no max runtime");
  }
  if (spec->launch_mode() == v1::LAUNCH_MODE_UNSPECIFIED) {
    spec->set_launch_mode(v1::LAUNCH_MODE_DIRECT);
  }
  if (spec->restart_policy() == v1::RESTART_POLICY_UNSPECIFIED) {
    spec->set_restart_policy(cls->service ? v1::RESTART_POLICY_ALWAYS
                                          : v1::RESTART_POLICY_ON_FAILURE);
  }
  // Unset takes the default; 0 set by the user means no retries.
  if (!spec->has_max_restarts()) spec->set_max_restarts(policy.default_max_restarts);
  if (!v1::LaunchMode_IsValid(spec->launch_mode())) return Invalid("launch_mode", "unknown mode");
  if (!v1::RestartPolicy_IsValid(spec->restart_policy())) {
    return Invalid("restart_policy", "unknown policy");
  }
  return absl::OkStatus();
}

absl::Status CheckFits(const ClusterShape& shape, const std::string& default_pool,
                       const v1::JobSpec& spec) {
  if (shape.nodes == 0) return absl::OkStatus();
  if (spec.gpus_per_node() > shape.max_gpus_per_node) {
    return Invalid("gpus_per_node", std::to_string(spec.gpus_per_node()) +
                                        " GPUs per node, but the largest node has " +
                                        std::to_string(shape.max_gpus_per_node));
  }
  uint32_t fitting = shape.nodes_with_at_least_gpus.size() > spec.gpus_per_node()
                         ? shape.nodes_with_at_least_gpus[spec.gpus_per_node()]
                         : 0;
  if (spec.nodes() > fitting) {
    return Invalid("nodes", std::to_string(spec.nodes()) + " nodes with " +
                                std::to_string(spec.gpus_per_node()) +
                                " GPUs each, but the cluster has " + std::to_string(fitting));
  }
  if (spec.cpu_millis_per_node() > shape.max_cpu_millis_per_node) {
    return Invalid("cpu_millis_per_node", FormatCpuMillis(spec.cpu_millis_per_node()) +
                                              " CPUs per node, but the largest node has " +
                                              FormatCpuMillis(shape.max_cpu_millis_per_node));
  }
  if (spec.gpu_share_percent() > 0) {
    // Against the job's node pool's MPS pools where it has any (agents may offer them
    // later: then against the largest GPU of the cluster).
    const std::string& pool = spec.pool().empty() ? default_pool : spec.pool();
    uint64_t most = 0;
    for (const auto& [node_pool, memory] : shape.max_mps_memory_by_pool) {
      if ((node_pool.empty() ? default_pool : node_pool) == pool) most = std::max(most, memory);
    }
    const uint64_t limit = most > 0 ? most : shape.max_gpu_memory_bytes;
    if (limit > 0 && spec.gpu_memory_bytes() > limit) {
      return Invalid("gpu_memory_bytes",
                     FormatBytes(spec.gpu_memory_bytes()) + " for a share, but the largest " +
                         (most > 0 ? "MPS pool of node pool " + pool : std::string("GPU")) +
                         " has " + FormatBytes(limit));
    }
  }
  if (spec.memory_bytes_per_node() > shape.max_memory_bytes_per_node) {
    return Invalid("memory_bytes_per_node", FormatBytes(spec.memory_bytes_per_node()) +
                                                " per node, but the largest node has " +
                                                FormatBytes(shape.max_memory_bytes_per_node));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateAndDefaultSpec(const Caller& caller, const Policy& policy,
                                    const ClusterShape& shape, v1::JobSpec* spec) {
  if (absl::Status s = CheckCommand(policy.admission, spec); !s.ok()) return s;
  if (absl::Status s = CheckPlacementTerms(policy.admission, *spec); !s.ok()) return s;
  if (absl::Status s = CheckShape(policy, spec); !s.ok()) return s;
  if (absl::Status s = deps::CheckSpec(*spec); !s.ok()) return s;
  if (absl::Status s = CheckPolicy(caller, policy, spec); !s.ok()) return s;
  // The scheduler's own rules (per-job limits, pools, MIG, quotas it could never reach).
  absl::Status rules =
      sched::CheckRequest(policy, spec->tenant(), spec->priority_class(), RequestOf(*spec));
  if (!rules.ok()) return absl::InvalidArgumentError("spec: " + std::string(rules.message()));
  return CheckFits(shape, policy.default_pool, *spec);
}

}  // namespace baton
