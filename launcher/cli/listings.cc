#include "launcher/cli/listings.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "absl/time/time.h"
#include "common/resources.h"
#include "coordinator/arrays.h"
#include "coordinator/usage/rollup.h"
#include "launcher/cli/format.h"
#include "proto/rpc_util.h"

namespace baton::cli {
namespace {

std::string Fixed(double v, int precision) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(precision);
  out << v;
  return out.str();
}

std::string Pct(double f) { return Fixed(f * 100, 1) + "%"; }

// "a, b" of `items`, "-" when there are none.
std::string JoinOrDash(const std::vector<std::string>& items, const char* sep = ",") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out.empty() ? "-" : out;
}

// The nodes of the job's last attempt while it runs, or after the job ended: where it
// runs or ran. A requeued job's old nodes would mislead, so "-" then.
std::string PlacementNodes(const v1::Job& job) {
  if (job.attempts_size() == 0) return "-";
  const v1::Attempt& a = job.attempts(job.attempts_size() - 1);
  if (a.ended_ms() != 0 && !IsTerminal(job.state())) return "-";
  std::vector<std::string> nodes;
  for (const auto& p : a.placement()) nodes.push_back(p.node());
  return JoinOrDash(nodes);
}

// How long the last attempt has run (or ran), "-" before it started.
std::string Runtime(const v1::Job& job, int64_t now_ms) {
  if (job.attempts_size() == 0) return "-";
  const v1::Attempt& a = job.attempts(job.attempts_size() - 1);
  if (a.started_ms() == 0) return "-";
  int64_t end = a.ended_ms() != 0 ? a.ended_ms() : now_ms;
  return FormatDurationMs(std::max<int64_t>(0, end - a.started_ms()));
}

std::string Failures(const v1::Job& job) {
  std::string out = std::to_string(job.failures());
  if (job.spec().has_max_restarts()) out += "/" + std::to_string(job.spec().max_restarts());
  return out;
}

// "cgroup-v2, eth1 10000Mbit" / "none".
std::string NodeIsolationText(const v1::NodeIsolation& iso) {
  std::string out = iso.mode().empty() ? "none" : iso.mode();
  if (!iso.nic().empty()) out += ", " + iso.nic() + " " + std::to_string(iso.nic_mbps()) + "Mbit";
  return out;
}

// Each MPS pool's free share and memory, and whose shares it holds:
// "gpu1 40% 60Gi free (alice)", "gpu3 100% 80Gi free"; "-" without pools.
std::string MpsPoolsText(const v1::Node& n) {
  std::vector<std::string> parts;
  for (const v1::MpsPoolUse& u : n.mps_pools()) {
    auto g = std::find_if(n.inventory().gpus().begin(), n.inventory().gpus().end(),
                          [&](const v1::Gpu& x) { return x.uuid() == u.uuid(); });
    if (g == n.inventory().gpus().end()) continue;
    const uint32_t used = std::min(u.allocated_percent(), 100u);
    const uint64_t memory = g->memory_bytes();
    std::string text = "gpu" + std::to_string(g->index()) + " " + std::to_string(100 - used) +
                       "% " + FormatBytes(memory - std::min(memory, u.allocated_memory_bytes())) +
                       " free";
    if (!u.user().empty()) text += " (" + u.user() + ")";
    parts.push_back(std::move(text));
  }
  return JoinOrDash(parts, ", ");
}

// "8x NVIDIA H200" per model (MIG slices with their profile), in first-seen order.
std::string GpuModels(const v1::Inventory& inv) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& g : inv.gpus()) {
    std::string model = g.model().empty() ? "unknown" : g.model();
    if (!g.mig_profile().empty()) model += " " + g.mig_profile();
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == model; });
    if (it == counts.end()) {
      counts.emplace_back(model, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> parts;
  for (const auto& [model, n] : counts) parts.push_back(std::to_string(n) + "x " + model);
  return JoinOrDash(parts, ", ");
}

// "k=v,k2=v2", sorted by key (a proto map has no order of its own).
std::string Labels(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) parts.push_back(k + "=" + v);
  return JoinOrDash(parts);
}

std::string Taints(const Repeated<v1::Taint>& taints) {
  std::vector<std::string> parts;
  for (const auto& t : taints) {
    parts.push_back(t.key() + (t.value().empty() ? "" : "=" + t.value()) +
                    (t.effect().empty() ? "" : ":" + t.effect()));
  }
  return JoinOrDash(parts);
}

std::string TokenState(const v1::TokenInfo& t, int64_t now_ms) {
  if (t.revoked_ms() != 0) return "revoked";
  if (t.expires_ms() != 0 && t.expires_ms() <= now_ms) return "expired";
  return "active";
}

}  // namespace

Listing UsageListing(const v1::UsageResponse& usage, v1::UsageGroup by) {
  const char* kind = by == v1::USAGE_GROUP_USER    ? "user"
                     : by == v1::USAGE_GROUP_CLASS ? "class"
                                                   : "tenant";
  Listing l;
  std::string header = kind;
  for (char& c : header) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  l.columns = {{header},      {"GPU-H"},     {"LOST GPU-H"}, {"SUCCEEDED"}, {"FAILED"},
               {"CANCELLED"}, {"EVICTIONS"}, {"STARTED"},    {"WAIT P50"},  {"WAIT P95"}};
  auto wait = [](const v1::UsageLine& u, double s) {
    if (u.waits() == 0) return std::string("-");
    return s < 1 ? std::string("<1s") : FormatDurationMs(static_cast<int64_t>(s * 1000 + 0.5));
  };
  for (const v1::UsageLine& u : usage.lines()) {
    l.rows.push_back({u.key(), Fixed(u.gpu_hours(), 2), Fixed(u.lost_gpu_hours(), 2),
                      std::to_string(u.succeeded()), std::to_string(u.failed()),
                      std::to_string(u.cancelled()), std::to_string(u.evictions()),
                      std::to_string(u.waits()), wait(u, u.wait_p50_seconds()),
                      wait(u, u.wait_p95_seconds())});
    l.objects.push_back(&u);
    l.names.push_back(std::string(kind) + "/" + u.key());
  }
  std::string tenants;
  for (const auto& t : usage.tenants()) tenants += (tenants.empty() ? "" : ", ") + t;
  l.footer = "UTC days " + Date(usage.since_ms()).substr(0, 10) + " to " +
             Date(usage.until_ms() - 1).substr(0, 10) + " (whole days), " +
             (tenants.empty() ? "every tenant" : "tenants " + tenants) +
             "; waits are queue time to first placement, within 6%\n";
  return l;
}

Listing HistoryListing(const Repeated<v1::Job>& jobs) {
  Listing l;
  l.columns = {{"ID"},
               {"NAME", false, 20},
               {"USER"},
               {"TENANT"},
               {"CLASS", true},
               {"STATE"},
               {"START"},
               {"END"},
               {"EXIT"},
               {"NODES", false, 30},
               {"GPU-H"},
               {"ATTEMPTS", true},
               {"EVICTIONS", true},
               {"MESSAGE", true}};
  for (const v1::Job& job : jobs) {
    int64_t start = 0;
    for (const auto& a : job.attempts()) {
      if (a.started_ms() != 0) {
        start = a.started_ms();
        break;
      }
    }
    const std::string id = job.array_id() != 0
                               ? arrays::TaskLabel(job.array_id(), job.array_index())
                               : std::to_string(job.id());
    std::string nodes = "-";
    if (job.attempts_size() > 0) {
      std::vector<std::string> names;
      for (const auto& p : job.attempts(job.attempts_size() - 1).placement()) {
        names.push_back(p.node());
      }
      nodes = JoinOrDash(names);
    }
    l.rows.push_back(
        {id, job.spec().name(), job.user(), job.spec().tenant(), job.spec().priority_class(),
         StateName(job.state()), Date(start), Date(job.finished_ms()),
         std::to_string(job.exit_code()), nodes, Fixed(usage::AllocatedGpuSeconds(job) / 3600, 2),
         std::to_string(job.attempts_size()), std::to_string(job.evictions()), job.message()});
    l.objects.push_back(&job);
    l.names.push_back("job/" + std::to_string(job.id()));
  }
  return l;
}

std::string Date(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string ArrayCounts(const v1::JobArray& a) {
  std::vector<std::pair<std::string, uint32_t>> counts;
  for (const char* state : {"running", "scheduled", "preempting", "cooldown", "pending"}) {
    auto it = a.unfinished().find(state);
    if (it != a.unfinished().end() && it->second > 0) counts.emplace_back(state, it->second);
  }
  counts.emplace_back("succeeded", a.succeeded());
  counts.emplace_back("failed", a.failed());
  counts.emplace_back("cancelled", a.cancelled());
  std::string out;
  for (const auto& [state, n] : counts) {
    if (n == 0) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  }
  return out.empty() ? "no tasks" : out;
}

std::string RenderArray(const v1::JobArray& a, int64_t now_ms, const OutputOptions& options) {
  const bool human = HumanFormat(options.format);
  std::string text;
  if (human) {
    const v1::JobSpec& s = a.spec();
    std::ostringstream o;
    o << "Array " << arrays::Label(a) << "  " << s.name() << "  (" << a.tasks() << " task"
      << (a.tasks() == 1 ? "" : "s") << ")\n"
      << "  Tasks:      " << ArrayCounts(a) << "\n"
      << "  Tenant:     " << s.tenant() << "   user " << a.user() << "   class "
      << s.priority_class() << "\n"
      << "  Submitted:  " << Ago(a.submitted_ms(), now_ms) << "\n";
    if (s.after_size() > 0) o << "  After:      " << AfterText(s, a.after_met()) << "\n";
    if (!a.message().empty()) o << "  Reason:     " << a.message() << "\n";
    if (!a.cancelled_by().empty()) o << "  Cancelled:  by " << a.cancelled_by() << "\n";
    if (a.finished_ms() != 0) o << "  Ended:      " << Ago(a.finished_ms(), now_ms) << "\n";
    o << "  Each task:  " << s.nodes() << " node(s) x " << s.gpus_per_node()
      << " GPU(s); baton status " << a.id() << "_INDEX for one\n";
    text = o.str();
  }
  return RenderOne(a, "array/" + std::to_string(a.id()), text, options);
}

Listing QueueListing(const Repeated<v1::Job>& jobs, int64_t now_ms,
                     const Repeated<v1::JobArray>& arrays, bool expand_arrays) {
  Listing l;
  l.columns = {{"ID"},
               {"NAME", false, 20},
               {"TENANT"},
               {"USER"},
               {"CLASS"},
               {"STATE"},
               {"NODES"},
               {"GPUS"},
               {"GPUS/NODE", true},
               {"ATTEMPTS", true},
               {"FAILURES", true},
               {"EVICTIONS", true},
               {"SUBMITTED"},
               {"RUNTIME", true},
               {"PLACEMENT", true},
               {"REASON", false, 60}};
  std::map<uint64_t, const v1::JobArray*> by_id;
  for (const auto& a : arrays) by_id[a.id()] = &a;
  std::set<uint64_t> shown;
  auto array_row = [&](const v1::JobArray& a, const std::string& reason) {
    const auto& sp = a.spec();
    l.rows.push_back({arrays::Label(a), sp.name(), sp.tenant(), a.user(), sp.priority_class(),
                      ArrayCounts(a), std::to_string(sp.nodes()),
                      std::to_string(sp.nodes() * sp.gpus_per_node()),
                      std::to_string(sp.gpus_per_node()), "-", "-", "-",
                      Ago(a.submitted_ms(), now_ms), "-", "-", reason});
    l.objects.push_back(&a);
    l.names.push_back("array/" + std::to_string(a.id()));
  };
  for (const auto& job : jobs) {
    if (job.array_id() != 0 && !expand_arrays) {
      auto it = by_id.find(job.array_id());
      if (it != by_id.end()) {  // folded: the array's row where its first task is
        if (shown.insert(job.array_id()).second) array_row(*it->second, job.message());
        continue;
      }
    }
    const auto& sp = job.spec();
    const std::string id = job.array_id() != 0
                               ? arrays::TaskLabel(job.array_id(), job.array_index())
                               : std::to_string(job.id());
    l.rows.push_back(
        {id, sp.name(), sp.tenant(), job.user(), sp.priority_class(), StateName(job.state()),
         std::to_string(sp.nodes()), std::to_string(sp.nodes() * sp.gpus_per_node()),
         std::to_string(sp.gpus_per_node()), std::to_string(job.attempts_size()), Failures(job),
         std::to_string(job.evictions()), Ago(job.submitted_ms(), now_ms), Runtime(job, now_ms),
         PlacementNodes(job), job.message()});
    l.objects.push_back(&job);
    l.names.push_back("job/" + std::to_string(job.id()));
  }
  for (const auto& a : arrays) {  // none of its tasks is a job yet (or listed)
    if (!expand_arrays && !shown.contains(a.id())) {
      array_row(a, !a.message().empty() ? a.message()
                                        : "its tasks wait to be made jobs as they may start");
    }
  }
  return l;
}

// A node's place in the switch tree, top level first: "spine-1/leaf-3" ("-" for a level
// it has no label of); "-" without levels.
std::string TopologyPath(const v1::Node& n, const std::vector<std::string>& levels) {
  std::string out;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    std::string label = it->substr(it->find('=') + 1);
    auto v = n.labels().find(label);
    out += (out.empty() ? "" : "/") + (v == n.labels().end() ? std::string("-") : v->second);
  }
  return out.empty() ? "-" : out;
}

Listing NodesListing(const Repeated<v1::Node>& nodes, int64_t now_ms,
                     const std::vector<std::string>& topology_levels) {
  Listing l;
  l.columns = {{"NAME"},
               {"STATE"},
               {"CPUS"},
               {"MEMORY"},
               {"GPUS"},
               {"MPS POOLS"},
               {"POOL"},
               {"ISOLATION"},
               {"ADDRESS"},
               {"JOBS"},
               {"GPU MODEL", true},
               {"TOPOLOGY", true},
               {"LABELS", true},
               {"TAINTS", true},
               {"LAST SEEN", true},
               {"DRAINED", true}};
  for (const auto& n : nodes) {
    const auto& inv = n.inventory();
    std::vector<std::string> jobs;
    for (uint64_t j : n.running_jobs()) jobs.push_back(std::to_string(j));
    l.rows.push_back(
        {n.name(), NodeStateName(n.state()) + (n.has_drain() ? ",drained" : ""),
         FormatCpuMillis(n.allocated_cpu_millis()) + "/" + std::to_string(inv.cpus()),
         FormatBytes(n.allocated_memory_bytes()) + "/" + FormatBytes(inv.memory_bytes()),
         std::to_string(n.allocated_gpus()) + "/" +
             std::to_string(inv.gpus_size() - n.mps_pools_size()),
         MpsPoolsText(n), n.pool().empty() ? "default" : n.pool(), NodeIsolationText(n.isolation()),
         n.address(), JoinOrDash(jobs), GpuModels(inv), TopologyPath(n, topology_levels),
         Labels(n.labels()), Taints(n.taints()), Ago(n.last_seen_ms(), now_ms),
         n.has_drain() ? Ago(n.drain().since_ms(), now_ms) + " by " + n.drain().by() +
                             (n.drain().reason().empty() ? "" : ": " + n.drain().reason())
                       : "-"});
    l.objects.push_back(&n);
    l.names.push_back("node/" + n.name());
  }
  std::string limits = LimitsTable({nodes.begin(), nodes.end()});
  if (!limits.empty()) l.footer = "\n" + limits;
  return l;
}

Listing SharesListing(const v1::SharesResponse& shares) {
  Listing l;
  l.columns = {{"TENANT"},      {"WEIGHT"},         {"USAGE"},
               {"USED"},        {"FAIR"},           {"RUNNING"},
               {"PENDING"},     {"QUOTA"},          {"GPU-H/WEIGHT", true},
               {"ORDER", true}, {"HALF-LIFE", true}};
  // The scheduler's order inside a class: usage / weight, lowest first.
  auto key = [](const v1::TenantShare& t) {
    return t.weight() > 0 ? t.usage_gpu_seconds() / 3600 / t.weight() : 0.0;
  };
  std::vector<double> keys;
  for (const auto& t : shares.tenants()) keys.push_back(key(t));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const auto& t : shares.tenants()) {
    std::ostringstream weight;
    weight << t.weight();
    size_t order = std::lower_bound(keys.begin(), keys.end(), key(t)) - keys.begin() + 1;
    l.rows.push_back({t.tenant(), weight.str(), Fixed(t.usage_gpu_seconds() / 3600, 1) + " GPU-h",
                      Pct(t.usage_share()), Pct(t.weight_share()),
                      std::to_string(t.running_gpus()) + " GPUs",
                      std::to_string(t.pending_gpus()) + " GPUs",
                      t.has_quota() ? std::to_string(t.quota_gpus()) + " GPUs" : "-",
                      t.weight() > 0 ? Fixed(key(t), 2) : "-", std::to_string(order),
                      FormatDurationMs(static_cast<int64_t>(t.half_life_seconds() * 1000))});
    l.objects.push_back(&t);
    l.names.push_back("tenant/" + t.tenant());
  }
  if (!shares.tenants().empty()) {
    std::ostringstream note;
    note << "usage decays with a half-life of " << shares.tenants(0).half_life_seconds() / 3600
         << " h; USED above FAIR: that tenant's jobs queue behind the others' in a class\n";
    l.footer = note.str();
  }
  return l;
}

Listing TokensListing(const Repeated<v1::TokenInfo>& tokens, int64_t now_ms) {
  Listing l;
  l.columns = {{"ID"}, {"USER"},    {"TENANT"},  {"STATE", true}, {"CREATED"},
               {"BY"}, {"EXPIRES"}, {"REVOKED"}, {"COMMENT"}};
  for (const auto& t : tokens) {
    l.rows.push_back(
        {t.id(), t.user(), t.tenant().empty() ? "*" : t.tenant(), TokenState(t, now_ms),
         Date(t.created_ms()), t.created_by(), Date(t.expires_ms()),
         t.revoked_ms() ? Date(t.revoked_ms()) + " by " + t.revoked_by() : "-", t.comment()});
    l.objects.push_back(&t);
    l.names.push_back("token/" + t.id());
  }
  return l;
}

std::string RenderJob(const v1::Job& job, int64_t now_ms, const OutputOptions& options) {
  bool human = HumanFormat(options.format);
  return RenderOne(job, "job/" + std::to_string(job.id()), human ? DescribeJob(job, now_ms) : "",
                   options);
}

std::string RenderExplanation(uint64_t id, const v1::ExplainResponse& explanation,
                              const OutputOptions& options) {
  return RenderOne(explanation, "job/" + std::to_string(id), explanation.text(), options);
}

std::string RenderEvent(const v1::Event& e, const OutputOptions& options) {
  if (options.format != OutputFormat::kWide) {
    bool human = HumanFormat(options.format);
    return RenderOne(e, "event/" + std::to_string(e.log_seq()), human ? EventLine(e) + "\n" : "",
                     options);
  }
  std::vector<std::string> extra;
  if (e.attempt() != 0) extra.push_back("attempt " + std::to_string(e.attempt()));
  if (!e.tenant().empty()) extra.push_back("tenant " + e.tenant());
  if (!e.priority_class().empty()) extra.push_back("class " + e.priority_class());
  if (e.node_state() != v1::NODE_STATE_UNSPECIFIED) {
    extra.push_back("node state " + NodeStateName(e.node_state()));
  }
  if (e.has_lost_gpu_seconds())
    extra.push_back("lost " + Fixed(e.lost_gpu_seconds(), 1) + " GPU-s");
  return EventLine(e) + (extra.empty() ? "" : "  [" + JoinOrDash(extra, ", ") + "]") + "\n";
}

}  // namespace baton::cli
