#include "coordinator/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace baton::sim {
namespace {

constexpr double kHourMs = 3'600'000;
constexpr Time kDayMs = 24 * 3'600'000;

double Round(double v, double unit = 0.001) { return std::round(v / unit) * unit; }

struct Group {
  std::vector<double> waits_s;
  uint32_t jobs = 0, started = 0, finished = 0, infeasible = 0;
  uint64_t evictions = 0;
  double lost_gpu_ms = 0;
};

void Add(Group& g, const SimJob& j, Time end) {
  ++g.jobs;
  if (j.infeasible) {
    ++g.infeasible;
    return;
  }
  g.started += j.first_start >= 0;
  g.finished += j.finished;
  Time started = j.first_start >= 0 ? j.first_start : end;
  g.waits_s.push_back(static_cast<double>(std::max<Time>(started - j.submitted, 0)) / 1000);
  g.evictions += j.evictions;
  g.lost_gpu_ms += j.lost_gpu_ms;
}

nlohmann::json Waits(const std::vector<double>& w) {
  return {{"p50", Round(Quantile(w, 0.5))},
          {"p95", Round(Quantile(w, 0.95))},
          {"p99", Round(Quantile(w, 0.99))},
          {"max", Round(Quantile(w, 1))}};
}

nlohmann::json GroupJson(const Group& g, double gpu_ms, double capacity_ms) {
  uint32_t feasible = g.jobs - g.infeasible;
  return {{"jobs", g.jobs},
          {"started", g.started},
          {"finished", g.finished},
          {"never_started", feasible - g.started},
          {"infeasible", g.infeasible},
          {"wait_s", Waits(g.waits_s)},
          {"utilisation", capacity_ms > 0 ? Round(gpu_ms / capacity_ms, 1e-4) : 0},
          {"gpu_hours", Round(gpu_ms / kHourMs, 0.01)},
          {"gpu_hours_lost_to_evictions", Round(g.lost_gpu_ms / kHourMs, 0.01)},
          {"evictions", g.evictions},
          {"evictions_per_job", feasible ? Round(double(g.evictions) / feasible, 1e-4) : 0}};
}

// Each tenant's share of the GPUs in use, per day, from the timeline samples.
std::map<std::string, std::vector<double>> SharesByDay(const Simulator& sim) {
  std::map<std::string, std::vector<double>> out;
  std::map<int64_t, std::map<std::string, double>> days;
  std::map<int64_t, double> busy;
  for (const SimSample& s : sim.samples()) {
    int64_t day = (s.t - sim.start()) / kDayMs;
    busy[day] += s.busy_gpus;
    for (const auto& [t, gpus] : s.tenant_gpus) days[day][t] += gpus;
  }
  std::set<std::string> tenants;
  for (const auto& [day, m] : days) {
    for (const auto& [t, v] : m) tenants.insert(t);
  }
  for (const auto& [day, total] : busy) {
    for (const std::string& t : tenants) {
      out[t].push_back(total > 0 ? Round(days[day][t] / total, 1e-4) : 0);
    }
  }
  return out;
}

}  // namespace

double Quantile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(rank), values.end());
  return values[rank];
}

namespace {

// Multi-node gangs by node count: how many ran spread over more leaves than they need
// (docs/topology.md), their waits and their completion times (submit to finish).
nlohmann::json Gangs(const Simulator& sim, Time end) {
  struct Size {
    Group group;
    uint32_t spread = 0;
    std::vector<double> jct_s;
  };
  std::map<uint32_t, Size> sizes;
  Size all;
  for (const auto& [id, j] : sim.jobs()) {
    if (j.nodes < 2 || j.infeasible) continue;
    for (Size* s : {&sizes[j.nodes], &all}) {
      Add(s->group, j, end);
      s->spread += j.spread_attempts > 0;
      if (j.finished) s->jct_s.push_back(static_cast<double>(j.finished_at - j.submitted) / 1000);
    }
  }
  auto json = [](const Size& s) {
    double mean = 0;
    for (double v : s.jct_s) mean += v / static_cast<double>(s.jct_s.size());
    return nlohmann::json{
        {"jobs", s.group.jobs},
        {"started", s.group.started},
        {"spread", s.spread},
        {"spread_fraction", s.group.started ? Round(double(s.spread) / s.group.started, 1e-4) : 0},
        {"wait_s", Waits(s.group.waits_s)},
        {"jct_mean_s", Round(mean)}};
  };
  nlohmann::json out = json(all);
  for (const auto& [nodes, s] : sizes) out["by_nodes"][std::to_string(nodes)] = json(s);
  return out;
}

}  // namespace

// MPS shares: tasks started within the run (of every kind), shares among them, and the
// pool capacity stranded (free units no waiting share fits, sampled) over the pools'.
nlohmann::json Sharing(const Simulator& sim) {
  uint64_t placed = 0, shares = 0, shares_placed = 0;
  for (const auto& [id, j] : sim.jobs()) {
    placed += j.first_start >= 0;
    shares += j.gpu_share_percent > 0;
    shares_placed += j.gpu_share_percent > 0 && j.first_start >= 0;
  }
  double stranded = 0, pools = 0;
  for (const SimSample& s : sim.samples()) {
    stranded += s.stranded_gpus;
    pools += s.pool_gpus;
  }
  return {{"tasks", sim.jobs().size()},
          {"tasks_placed", placed},
          {"shares", shares},
          {"shares_placed", shares_placed},
          {"stranded_gpu_fraction", pools > 0 ? Round(stranded / pools, 1e-4) : 0.0}};
}

nlohmann::json Summarize(const Simulator& sim, const ReportOptions& options) {
  Time end = sim.now();
  double span_ms = static_cast<double>(end - sim.start());
  double capacity_ms = span_ms * sim.total_gpus();
  std::map<std::string, Group> classes, tenants;
  Group all, big, inference;
  for (const auto& [id, j] : sim.jobs()) {
    Add(all, j, end);
    Add(classes[j.priority_class], j, end);
    Add(tenants[j.tenant], j, end);
    if (j.gpus >= options.big_gang_gpus) Add(big, j, end);
    const sched::PriorityClass* c = sim.policy().Find(j.priority_class);
    if (c && c->service) Add(inference, j, end);
  }
  double used_ms = 0;
  for (const auto& [t, ms] : sim.gpu_ms()) used_ms += ms;
  nlohmann::json out;
  out["sim"] = {{"simulated_s", Round(span_ms / 1000)},
                {"passes", sim.passes()},
                {"passes_planned", sim.plans()},
                {"evictions", sim.evictions()},
                {"plan_s", Round(sim.plan_seconds())}};
  out["cluster"] = {{"nodes", sim.view().nodes.size()}, {"gpus", sim.total_gpus()}};
  out["all"] = GroupJson(all, used_ms, capacity_ms);
  for (const auto& [name, g] : classes) {
    auto it = sim.class_gpu_ms().find(name);
    out["classes"][name] =
        GroupJson(g, it == sim.class_gpu_ms().end() ? 0 : it->second, capacity_ms);
  }
  double weights = 0;
  for (const auto& [name, g] : tenants) weights += sim.policy().Tenant(name).weight;
  std::map<std::string, std::vector<double>> by_day = SharesByDay(sim);
  for (const auto& [name, g] : tenants) {
    auto it = sim.gpu_ms().find(name);
    double ms = it == sim.gpu_ms().end() ? 0 : it->second;
    nlohmann::json t = GroupJson(g, ms, capacity_ms);
    double weight = sim.policy().Tenant(name).weight;
    t["weight"] = weight;
    t["weight_share"] = Round(weight / weights, 1e-4);
    t["gpu_share"] = used_ms > 0 ? Round(ms / used_ms, 1e-4) : 0;
    t["gpu_share_by_day"] = by_day[name];
    out["tenants"][name] = t;
  }
  double longest = big.waits_s.empty() ? 0 : Quantile(big.waits_s, 1);
  out["big_gangs"] = {{"min_gpus", options.big_gang_gpus},
                      {"jobs", big.jobs - big.infeasible},
                      {"never_started", big.jobs - big.infeasible - big.started},
                      {"wait_s", Waits(big.waits_s)},
                      {"longest_wait_s", Round(longest)}};
  out["inference"] = {{"jobs", inference.jobs - inference.infeasible},
                      {"placement_delay_s", Waits(inference.waits_s)}};
  out["gangs"] = Gangs(sim, end);
  std::map<std::string, uint32_t> reasons;
  for (const auto& [id, j] : sim.jobs()) {
    if (j.infeasible) ++reasons[j.infeasible_reason];
  }
  for (const auto& [r, n] : reasons) out["infeasible_reasons"][r] = n;
  out["mps"] = Sharing(sim);
  return out;
}

namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Duration(double s) {
  if (s < 120) return Fmt("%.0fs", s);
  if (s < 7200) return Fmt("%.1fm", s / 60);
  return Fmt("%.1fh", s / 3600);
}

void Row(std::string& out, const std::string& name, const nlohmann::json& g) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-20s %7u %8s %8s %8s %7.1f%% %10.1f %7.3f\n", name.c_str(),
                g["jobs"].get<uint32_t>(), Duration(g["wait_s"]["p50"]).c_str(),
                Duration(g["wait_s"]["p95"]).c_str(), Duration(g["wait_s"]["p99"]).c_str(),
                g["utilisation"].get<double>() * 100,
                g["gpu_hours_lost_to_evictions"].get<double>(),
                g["evictions_per_job"].get<double>());
  out += buf;
}

constexpr char kHeader[] = "  %-20s %7s %8s %8s %8s %8s %10s %7s\n";

std::string Header(const char* what) {
  char buf[256];
  std::snprintf(buf, sizeof buf, kHeader, what, "jobs", "wait p50", "p95", "p99", "util",
                "GPU-h lost", "evict/j");
  return buf;
}

}  // namespace

std::string SummaryText(const nlohmann::json& s) {
  std::string out;
  out += Fmt("simulated %.1f h", s["sim"]["simulated_s"].get<double>() / 3600) + " on " +
         std::to_string(s["cluster"]["nodes"].get<uint64_t>()) + " nodes / " +
         std::to_string(s["cluster"]["gpus"].get<uint64_t>()) +
         " GPUs: " + std::to_string(s["sim"]["passes"].get<uint64_t>()) + " scheduling passes, " +
         std::to_string(s["sim"]["evictions"].get<uint64_t>()) + " evictions\n\n";
  out += Header("class");
  for (const auto& [name, g] : s["classes"].items()) Row(out, name, g);
  Row(out, "(all)", s["all"]);
  out += "\n" + Header("tenant");
  for (const auto& [name, g] : s["tenants"].items()) Row(out, name, g);
  out += "\n  tenant share vs weight (of the GPUs in use)\n";
  for (const auto& [name, g] : s["tenants"].items()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-20s weight %5.1f -> %5.1f%%, got %5.1f%%\n", name.c_str(),
                  g["weight"].get<double>(), g["weight_share"].get<double>() * 100,
                  g["gpu_share"].get<double>() * 100);
    out += buf;
  }
  std::string never;
  for (const auto& [name, g] : s["classes"].items()) {
    if (g["never_started"].get<uint32_t>() > 0) {
      never += " " + name + " " + std::to_string(g["never_started"].get<uint32_t>());
    }
  }
  if (!never.empty()) {
    out += "\n  never started (waiting when the run ended; their wait counts to the end):" + never +
           "\n";
  }
  const nlohmann::json& big = s["big_gangs"];
  out += "\n  big gangs (>= " + std::to_string(big["min_gpus"].get<uint32_t>()) +
         " GPUs): " + std::to_string(big["jobs"].get<uint32_t>()) + " jobs, longest wait " +
         Duration(big["longest_wait_s"]) + ", " +
         std::to_string(big["never_started"].get<uint32_t>()) + " never started\n";
  if (const nlohmann::json& g = s["gangs"]; g["jobs"].get<uint32_t>() > 0) {
    out += "  multi-node gangs: " + std::to_string(g["jobs"].get<uint32_t>()) + " jobs, " +
           std::to_string(g["spread"].get<uint32_t>()) +
           " spread over more leaves than they need, wait p95 " + Duration(g["wait_s"]["p95"]) +
           ", mean completion " + Duration(g["jct_mean_s"]) + "\n";
    for (const auto& [nodes, b] : g["by_nodes"].items()) {
      out += "    " + nodes + " nodes: " + std::to_string(b["jobs"].get<uint32_t>()) + " jobs, " +
             std::to_string(b["spread"].get<uint32_t>()) + " spread, wait p95 " +
             Duration(b["wait_s"]["p95"]) + ", mean completion " + Duration(b["jct_mean_s"]) + "\n";
    }
  }
  const nlohmann::json& inf = s["inference"];
  out += "  inference placement delay: " + std::to_string(inf["jobs"].get<uint32_t>()) +
         " jobs, p50 " + Duration(inf["placement_delay_s"]["p50"]) + ", p99 " +
         Duration(inf["placement_delay_s"]["p99"]) + ", max " +
         Duration(inf["placement_delay_s"]["max"]) + "\n";
  if (s.contains("infeasible_reasons")) {
    out += "\n  refused (can never run under this policy):\n";
    for (const auto& [r, n] : s["infeasible_reasons"].items()) {
      out += "  " + std::to_string(n.get<uint32_t>()) + " x " + r + "\n";
    }
  }
  return out;
}

std::string CompareText(const nlohmann::json& a, const std::string& a_name, const nlohmann::json& b,
                        const std::string& b_name) {
  std::vector<std::pair<std::string, nlohmann::json::json_pointer>> rows = {
      {"utilisation", nlohmann::json::json_pointer("/all/utilisation")},
      {"wait p50 s", nlohmann::json::json_pointer("/all/wait_s/p50")},
      {"wait p95 s", nlohmann::json::json_pointer("/all/wait_s/p95")},
      {"wait p99 s", nlohmann::json::json_pointer("/all/wait_s/p99")},
      {"GPU-h lost", nlohmann::json::json_pointer("/all/gpu_hours_lost_to_evictions")},
      {"evictions/job", nlohmann::json::json_pointer("/all/evictions_per_job")},
      {"big gang longest wait s", nlohmann::json::json_pointer("/big_gangs/longest_wait_s")},
      {"inference delay p99 s", nlohmann::json::json_pointer("/inference/placement_delay_s/p99")},
      {"gangs spread (fraction)", nlohmann::json::json_pointer("/gangs/spread_fraction")},
      {"gang wait p95 s", nlohmann::json::json_pointer("/gangs/wait_s/p95")},
      {"gang completion mean s", nlohmann::json::json_pointer("/gangs/jct_mean_s")}};
  std::set<std::string> classes;
  for (const auto* s : {&a, &b}) {
    if (!s->contains("classes")) continue;
    for (const auto& [name, g] : (*s)["classes"].items()) classes.insert(name);
  }
  for (const std::string& c : classes) {
    rows.push_back(
        {c + " wait p95 s", nlohmann::json::json_pointer("/classes/" + c + "/wait_s/p95")});
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-28s %16s %16s\n", "", a_name.substr(0, 16).c_str(),
                b_name.substr(0, 16).c_str());
  std::string out = buf;
  for (const auto& [label, ptr] : rows) {
    double va = a.contains(ptr) ? a[ptr].get<double>() : 0;
    double vb = b.contains(ptr) ? b[ptr].get<double>() : 0;
    std::snprintf(buf, sizeof buf, "  %-28s %16.4g %16.4g\n", label.c_str(), va, vb);
    out += buf;
  }
  return out;
}

void WriteTimeline(const Simulator& sim, std::ostream& out) {
  std::set<std::string> tenants;
  for (const SimSample& s : sim.samples()) {
    for (const auto& [t, g] : s.tenant_gpus) tenants.insert(t);
  }
  out << "time_s,busy_gpus,total_gpus,running,pending";
  for (const std::string& t : tenants) out << "," << t << "_gpus";
  out << "\n";
  for (const SimSample& s : sim.samples()) {
    out << (s.t - sim.start()) / 1000 << "," << s.busy_gpus << "," << sim.total_gpus() << ","
        << s.running << "," << s.pending;
    for (const std::string& t : tenants) {
      auto it = s.tenant_gpus.find(t);
      out << "," << (it == s.tenant_gpus.end() ? 0 : it->second);
    }
    out << "\n";
  }
}

}  // namespace baton::sim
