// Scheduling policy as the coordinator knows it: the scheduler's policy (classes,
// tenants, quotas, pools, limits, fair share; coordinator/scheduler/policy.h) plus the
// defaults admission gives a spec. Default() is the policy without a file;
// policy_config.h reads one. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/scheduler/policy.h"

namespace baton {

using PriorityClass = sched::PriorityClass;
using TenantPolicy = sched::TenantPolicy;

// Who may do what; coordinator/access.h applies it. Entries name a user, "@group" (a
// unix group, through NSS) or "*" (everyone).
struct AccessPolicy {
  std::vector<std::string> admins = {"root"};  // act on every job, change policy and tokens
  // tenant -> its members (tenants[].members). When no tenant lists members, every user
  // is a member of the tenant `default` (the built-in policy: a fresh install works).
  std::map<std::string, std::vector<std::string>> members;
  // class -> the tenants that may submit into it (classes[].tenants; "*": every tenant).
  // A class not listed is open to every tenant, unless it is a service class: those are
  // open to no tenant until listed (inference-critical from anyone is a takeover).
  std::map<std::string, std::vector<std::string>> class_tenants;
  // Tenants whose jobs may run as root (tenants[].allow_root). Everywhere else a job of
  // root is refused at submit: it would run as root on the nodes.
  std::set<std::string> root_tenants;
};

// The tenant every user is in when the policy lists no members.
inline constexpr char kBuiltinTenant[] = "default";

struct Policy : sched::Policy {
  std::string default_class = "training";
  uint32_t default_grace_seconds = 30;  // eviction/cancel grace when the spec says 0
  uint32_t max_grace_seconds = 3600;
  uint32_t default_max_restarts = 3;  // failure retries when the policy is unspecified
  uint64_t default_cpu_millis_per_rank = 1000;
  uint64_t default_memory_bytes_per_rank = 1ull << 30;
  AccessPolicy access;
  // Most processes (and threads) one attempt may have on a node: defaults.pids_limit,
  // per class classes[].pids_limit; 0 is no limit. A fork bomb stops there.
  uint32_t default_pids_limit = 16384;
  std::map<std::string, uint32_t> class_pids_limits;
  uint32_t PidsLimit(const std::string& priority_class) const {
    auto it = class_pids_limits.find(priority_class);
    return it == class_pids_limits.end() ? default_pids_limit : it->second;
  }

  // Outages (Nomad's disconnect model). How long an agent cut off from the coordinator
  // keeps a class's attempts before it stops them gracefully (SIGUSR1, checkpoint,
  // grace): classes[].stop_after_disconnect, else defaults.stop_after_disconnect (5 min)
  // for batch classes and never (kNever) for services. The coordinator replaces such an
  // attempt only after that bound + its grace + the lost margin; a service (never
  // stopped) is replaced after the lease + margin: it prefers availability.
  static constexpr int64_t kNever = -1;
  int64_t default_stop_after_disconnect_s = 300;
  std::map<std::string, int64_t> class_stop_after_disconnect_s;
  int64_t StopAfterDisconnectS(const std::string& priority_class) const {
    auto it = class_stop_after_disconnect_s.find(priority_class);
    if (it != class_stop_after_disconnect_s.end()) return it->second;
    const PriorityClass* c = Find(priority_class);
    return c && c->service ? kNever : default_stop_after_disconnect_s;
  }

  // Services that exit are restarted (exit 0 too, which is no failure) after a backoff
  // that doubles from restart_backoff up to restart_backoff_cap with each crash in a row
  // and starts over after a run of healthy_after; their GPUs stay held for them meanwhile.
  // defaults.{restart_backoff,restart_backoff_cap,healthy_after}, each overridable per
  // class (classes[].same keys).
  struct ServiceRestart {
    int64_t backoff_s = 1;
    int64_t backoff_cap_s = 60;
    int64_t healthy_after_s = 600;
    // The wait before the `streak`-th restart in a row (1: the first): DoublingBackoff of
    // backoff_s up to backoff_cap_s.
    absl::Duration Backoff(uint32_t streak) const;
  };
  struct ServiceRestartOverride {
    std::optional<int64_t> backoff_s, backoff_cap_s, healthy_after_s;
  };
  ServiceRestart service_restart;
  std::map<std::string, ServiceRestartOverride> class_service_restart;
  ServiceRestart ServiceRestartFor(const std::string& priority_class) const {
    ServiceRestart r = service_restart;
    auto it = class_service_restart.find(priority_class);
    if (it == class_service_restart.end()) return r;
    r.backoff_s = it->second.backoff_s.value_or(r.backoff_s);
    r.backoff_cap_s = it->second.backoff_cap_s.value_or(r.backoff_cap_s);
    r.healthy_after_s = it->second.healthy_after_s.value_or(r.healthy_after_s);
    return r;
  }

  // Network (`network.*`). tc caps only what passes through the kernel's stack, not RDMA:
  // with steering on (the default), a capped attempt's NCCL is set to sockets on the
  // capped NIC (NCCL_IB_DISABLE=1, NCCL_SOCKET_IFNAME) unless the job set those itself;
  // off, NCCL keeps InfiniBand/RoCE, faster but outside the cap.
  bool steer_capped_training_to_sockets = true;

  // Admission: what one spec may carry (checked by the coordinator, the field named), so
  // that anything admitted can be launched and delivered; and fair use of the submit
  // path per tenant. `admission.*` in the policy file.
  // Hard ceilings the policy cannot raise: env + command together (exec takes 2 MiB with
  // the agent's own variables), any one argument or VAR=value (the kernel's 128 KiB), and
  // names (labels, selector and toleration keys and values, pool, GPU model).
  static constexpr uint64_t kMaxSpecArgBytes = 1 << 20;
  static constexpr uint64_t kMaxArgStringBytes = 128 << 10;
  static constexpr size_t kMaxNameBytes = 253;
  struct Admission {
    uint32_t max_env_entries = 256;
    uint64_t max_env_bytes = 64 << 10;  // names + values, all entries together
    uint32_t max_selectors = 64;
    uint32_t max_tolerations = 64;
    uint64_t max_command_bytes = 64 << 10;     // argv, with one terminator per argument
    uint32_t max_pending_per_tenant = 10'000;  // jobs waiting in the queue
    double submit_rate = 200;                  // submits per second per tenant (0: no limit)
    uint32_t submit_burst = 1000;              // the token bucket's depth
    // Arrays: tasks in one array; tasks not yet ended across a tenant's arrays. An array
    // counts once towards max_pending_per_tenant and the submit rate.
    uint32_t max_array_tasks = 10'000;
    uint32_t max_array_tasks_per_tenant = 100'000;
  };
  Admission admission;

  // inference-critical > inference > labeling > training > experiment; the inference
  // classes are non-preemptible services. No tenants: nobody has a quota; root is the
  // admin and every user a member of `default`, which may not use the service classes.
  static Policy Default();
};

}  // namespace baton
