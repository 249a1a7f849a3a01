#include "launcher/cli/capacity.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace baton::cli {
namespace {

// MIG profile memory is the figure in its name, in GB (10^9 bytes), as GiB: "3g.71gb"
// gives an instance 66.1 GiB. What nvidia-smi shows differs by a few hundred MiB either
// way; the names are what operators plan with.
constexpr double kGbInGib = 1e9 / (1ull << 30);

MigProfile Mig(const std::string& name, uint32_t compute, uint32_t per_gpu) {
  double gb = std::stod(name.substr(name.find('.') + 1));
  return MigProfile{name, gb * kGbInGib, compute, per_gpu};
}

std::string Num(double v, int digits = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

uint32_t CeilDiv(double a, double b) { return static_cast<uint32_t>(std::ceil(a / b - 1e-9)); }

absl::Status Bad(const std::string& source, const YAML::Node& n, const std::string& field,
                 const std::string& what) {
  int line = n.IsDefined() ? n.Mark().line + 1 : 0;
  return absl::InvalidArgumentError(source + ":" + std::to_string(line) + ": " + field + ": " +
                                    what);
}

// A number read from `n[key]` into *out (kept when absent); `min` exclusive when `open`.
absl::Status Number(const std::string& source, const YAML::Node& n, const std::string& key,
                    const std::string& field, double min, bool open, double* out,
                    bool required = false) {
  const YAML::Node v = n[key];
  if (!v) return required ? Bad(source, n, field, "missing") : absl::OkStatus();
  try {
    *out = v.as<double>();
  } catch (const YAML::Exception&) {
    return Bad(source, v, field, "'" + (v.IsScalar() ? v.Scalar() : "...") + "' is not a number");
  }
  if (!std::isfinite(*out) || *out < min || (open && *out == min)) {
    return Bad(source, v, field,
               Num(*out, 3) + " must be " + (open ? "above " : "at least ") + Num(min, 3));
  }
  return absl::OkStatus();
}

absl::Status Keys(const std::string& source, const YAML::Node& n, const std::string& where,
                  std::initializer_list<const char*> known) {
  if (!n.IsMap()) return Bad(source, n, where, "expected a map");
  for (const auto& kv : n) {
    std::string k = kv.first.Scalar();
    if (std::none_of(known.begin(), known.end(), [&](const char* s) { return k == s; })) {
      return Bad(source, kv.first, where.empty() ? k : where + "." + k, "unknown key");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseGpu(const std::string& src, const YAML::Node& g, CapacityInput& in) {
  if (!g) return absl::OkStatus();
  if (g.IsScalar()) {
    absl::StatusOr<GpuType> t = KnownGpu(g.Scalar());
    if (!t.ok()) return Bad(src, g, "gpu", std::string(t.status().message()));
    in.gpu = *t;
    return absl::OkStatus();
  }
  if (absl::Status s = Keys(src, g, "gpu", {"name", "memory_gib", "mig"}); !s.ok()) return s;
  in.gpu = GpuType{g["name"] ? g["name"].as<std::string>() : "custom", 0, {}};
  if (absl::Status s = Number(src, g, "memory_gib", "gpu.memory_gib", 0, true, &in.gpu.memory_gib,
                              /*required=*/true);
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; g["mig"] && i < g["mig"].size(); ++i) {
    const YAML::Node m = g["mig"][i];
    std::string w = "gpu.mig[" + std::to_string(i) + "]";
    MigProfile p;
    double compute = 0, per = 0;
    p.name = m["profile"] ? m["profile"].as<std::string>() : "";
    for (auto [key, out] :
         {std::pair{"memory_gib", &p.memory_gib}, {"compute", &compute}, {"per_gpu", &per}}) {
      if (absl::Status s = Number(src, m, key, w + "." + key, 0, true, out, true); !s.ok()) {
        return s;
      }
    }
    if (compute > 7 || per > 7) return Bad(src, m, w, "compute and per_gpu are at most 7");
    p.compute = static_cast<uint32_t>(compute);
    p.per_gpu = static_cast<uint32_t>(per);
    in.gpu.mig.push_back(p);
  }
  return absl::OkStatus();
}

absl::Status ParseService(const std::string& src, const YAML::Node& n, const std::string& w,
                          Service& s) {
  if (absl::Status st = Keys(src, n, w,
                             {"name", "weights_gib", "peak_kv_cache_gib", "peak_qps", "qps_per_gpu",
                              "replicas", "sharing"});
      !st.ok()) {
    return st;
  }
  if (!n["name"]) return Bad(src, n, w + ".name", "missing");
  s.name = n["name"].as<std::string>();
  double replicas = 1;
  for (auto [key, min, open, out] : {std::tuple{"weights_gib", 0.0, true, &s.weights_gib},
                                     {"peak_kv_cache_gib", 0.0, false, &s.peak_kv_cache_gib},
                                     {"peak_qps", 0.0, true, &s.peak_qps},
                                     {"qps_per_gpu", 0.0, true, &s.qps_per_gpu}}) {
    if (absl::Status st = Number(src, n, key, w + "." + key, min, open, out, true); !st.ok()) {
      return st;
    }
  }
  if (absl::Status st = Number(src, n, "replicas", w + ".replicas", 1, false, &replicas);
      !st.ok()) {
    return st;
  }
  if (replicas != std::floor(replicas) || replicas > 10'000) {
    return Bad(src, n["replicas"], w + ".replicas", "a whole number up to 10000");
  }
  s.replicas = static_cast<uint32_t>(replicas);
  if (n["sharing"]) s.sharing = n["sharing"].as<std::string>();
  if (s.sharing != "auto" && s.sharing != "mig" && s.sharing != "mps" && s.sharing != "none") {
    return Bad(src, n["sharing"], w + ".sharing", "one of auto, mig, mps, none");
  }
  return absl::OkStatus();
}

absl::Status ParseServices(const std::string& src, const YAML::Node& root, CapacityInput& in) {
  if (!root || root.IsNull()) return absl::OkStatus();
  if (absl::Status s = Keys(
          src, root, "", {"gpu", "gpus_per_node", "reserve_fraction", "overhead_gib", "services"});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseGpu(src, root["gpu"], in); !s.ok()) return s;
  double per_node = in.gpus_per_node;
  for (auto [key, min, open, out] : {std::tuple{"gpus_per_node", 1.0, false, &per_node},
                                     {"reserve_fraction", 0.0, true, &in.reserve_fraction},
                                     {"overhead_gib", 0.0, false, &in.overhead_gib}}) {
    if (absl::Status s = Number(src, root, key, key, min, open, out); !s.ok()) return s;
  }
  if (in.reserve_fraction > 1) {
    return Bad(src, root["reserve_fraction"], "reserve_fraction", "at most 1 (all of the peak)");
  }
  if (per_node > 64 || per_node != std::floor(per_node)) {
    return Bad(src, root["gpus_per_node"], "gpus_per_node", "a whole number up to 64");
  }
  in.gpus_per_node = static_cast<uint32_t>(per_node);
  const YAML::Node list = root["services"];
  if (list && !list.IsSequence()) return Bad(src, list, "services", "expected a list");
  std::set<std::string> names;
  for (size_t i = 0; list && i < list.size(); ++i) {
    Service s;
    std::string w = "services[" + std::to_string(i) + "]";
    if (absl::Status st = ParseService(src, list[i], w, s); !st.ok()) return st;
    if (!names.insert(s.name).second) return Bad(src, list[i], w + ".name", "a second " + s.name);
    in.services.push_back(s);
  }
  return absl::OkStatus();
}

absl::Status ParsePlan(const std::string& src, const YAML::Node& root, CapacityInput& in) {
  if (!root || root.IsNull()) return absl::OkStatus();
  if (absl::Status s = Keys(src, root, "", {"guarantee", "projects", "budget_gpus"}); !s.ok()) {
    return s;
  }
  if (absl::Status s = Number(src, root, "guarantee", "guarantee", 0, true, &in.guarantee);
      !s.ok()) {
    return s;
  }
  if (in.guarantee > 1) return Bad(src, root["guarantee"], "guarantee", "a rate up to 1 (100%)");
  double budget = 0;
  if (absl::Status s = Number(src, root, "budget_gpus", "budget_gpus", 0, false, &budget);
      !s.ok()) {
    return s;
  }
  in.budget_gpus = static_cast<uint32_t>(budget);
  const YAML::Node list = root["projects"];
  if (list && !list.IsSequence()) return Bad(src, list, "projects", "expected a list");
  std::set<std::string> names;
  for (size_t i = 0; list && i < list.size(); ++i) {
    const YAML::Node n = list[i];
    std::string w = "projects[" + std::to_string(i) + "]";
    if (absl::Status s = Keys(src, n, w, {"name", "gpu_days", "deadline_days", "weight"});
        !s.ok()) {
      return s;
    }
    Project p;
    if (!n["name"]) return Bad(src, n, w + ".name", "missing");
    p.name = n["name"].as<std::string>();
    for (auto [key, req, out] : {std::tuple{"gpu_days", true, &p.gpu_days},
                                 {"deadline_days", true, &p.deadline_days},
                                 {"weight", false, &p.weight}}) {
      if (absl::Status s = Number(src, n, key, w + "." + key, 0, true, out, req); !s.ok()) {
        return s;
      }
    }
    if (!names.insert(p.name).second) return Bad(src, n, w + ".name", "a second " + p.name);
    in.projects.push_back(p);
  }
  return absl::OkStatus();
}

// The cheapest way to host one instance of `s`: its unit, memory, compute, and how many
// units one physical GPU holds (0: the instance spans `gpus` whole GPUs).
struct Unit {
  std::string name;
  double memory_gib = 0, compute = 0;
  uint32_t per_gpu = 1, gpus = 1;
  // An MPS unit: what each instance asks (ServicePlan::gpu_share_percent, gpu_memory_mib).
  uint32_t share_percent = 0;
  uint64_t memory_mib = 0;
};

// A GPU's memory in MiB, as its inventory reports it (whole MiB).
uint64_t MibOf(double gib) { return static_cast<uint64_t>(std::floor(gib * 1024 + 1e-9)); }

Unit Choose(const CapacityInput& in, const Service& s, double need_gib) {
  const GpuType& g = in.gpu;
  if (need_gib > g.memory_gib) {
    uint32_t n = CeilDiv(need_gib, g.memory_gib);
    return Unit{std::to_string(n) + " x " + g.name, n * g.memory_gib, double(n), 1, n};
  }
  Unit whole{"1 x " + g.name, g.memory_gib, 1, 1, 1};
  if (s.sharing == "auto" || s.sharing == "mig") {
    for (const MigProfile& p : g.mig) {  // smallest first; the full-GPU profile is `whole`
      if (p.per_gpu > 1 && p.memory_gib >= need_gib) {
        return Unit{"MIG " + p.name, p.memory_gib, p.compute / 7.0, p.per_gpu, 1};
      }
    }
  }
  if (s.sharing == "mps") {
    // As many as the GPU's memory holds, in whole MiB as the scheduler counts a pool, and
    // at most 100: a share is at least 1% of the compute.
    const uint64_t mib = MibOf(g.memory_gib);
    const auto need_mib = static_cast<uint64_t>(std::ceil(need_gib * 1024 - 1e-9));
    uint32_t k =
        static_cast<uint32_t>(std::min<uint64_t>(mib / std::max<uint64_t>(need_mib, 1), 100));
    if (k > 1) {
      return Unit{"MPS 1/" + std::to_string(k) + " " + g.name,
                  double(mib / k) / 1024,
                  1.0 / k,
                  k,
                  1,
                  100 / k,
                  mib / k};
    }
  }
  return whole;
}

}  // namespace

absl::StatusOr<GpuType> KnownGpu(const std::string& name) {
  if (name == "H200") {
    return GpuType{"H200",
                   140.4,
                   {Mig("1g.18gb", 1, 7), Mig("1g.35gb", 1, 4), Mig("2g.35gb", 2, 3),
                    Mig("3g.71gb", 3, 2), Mig("4g.71gb", 4, 1), Mig("7g.141gb", 7, 1)}};
  }
  if (name == "H100-80GB") {
    return GpuType{"H100-80GB",
                   79.6,
                   {Mig("1g.10gb", 1, 7), Mig("1g.20gb", 1, 4), Mig("2g.20gb", 2, 3),
                    Mig("3g.40gb", 3, 2), Mig("4g.40gb", 4, 1), Mig("7g.80gb", 7, 1)}};
  }
  if (name == "A100-80GB") {
    return GpuType{"A100-80GB",
                   80,
                   {Mig("1g.10gb", 1, 7), Mig("2g.20gb", 2, 3), Mig("3g.40gb", 3, 2),
                    Mig("4g.40gb", 4, 1), Mig("7g.80gb", 7, 1)}};
  }
  if (name == "A100-40GB") {
    return GpuType{"A100-40GB",
                   40,
                   {Mig("1g.5gb", 1, 7), Mig("2g.10gb", 2, 3), Mig("3g.20gb", 3, 2),
                    Mig("4g.20gb", 4, 1), Mig("7g.40gb", 7, 1)}};
  }
  if (name == "L40S") return GpuType{"L40S", 44.5, {}};
  return absl::NotFoundError("unknown GPU '" + name +
                             "' (known: H200, H100-80GB, A100-80GB, A100-40GB, L40S; or give "
                             "{name, memory_gib, mig})");
}

absl::StatusOr<CapacityInput> ParseCapacityInput(const std::string& services_yaml,
                                                 const std::string& services_source,
                                                 const std::string& plan_yaml,
                                                 const std::string& plan_source) {
  CapacityInput in;
  in.gpu = *KnownGpu("H200");
  for (auto [text, src, is_plan] :
       {std::tuple{&services_yaml, &services_source, false}, {&plan_yaml, &plan_source, true}}) {
    try {
      YAML::Node root = YAML::Load(*text);
      absl::Status s = is_plan ? ParsePlan(*src, root, in) : ParseServices(*src, root, in);
      if (!s.ok()) return s;
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(*src + ":" + std::to_string(e.mark.line + 1) + ": " +
                                        e.msg);
    }
  }
  if (in.services.empty() && in.projects.empty()) {
    return absl::InvalidArgumentError("nothing to plan: no services and no projects");
  }
  return in;
}

absl::StatusOr<CapacityPlan> PlanCapacity(const CapacityInput& in) {
  CapacityPlan plan;
  uint32_t gpus = 0, mps = 0;  // physical GPUs, and those as MPS pools
  for (size_t i = 0; i < in.services.size(); ++i) {
    const Service& s = in.services[i];
    ServicePlan p;
    p.name = s.name;
    p.instance_gib = s.weights_gib + s.peak_kv_cache_gib + in.overhead_gib;
    Unit u = Choose(in, s, p.instance_gib);
    if (u.gpus > in.gpus_per_node) {
      return absl::InvalidArgumentError(
          "services[" + std::to_string(i) + "].weights_gib: one instance needs " +
          Num(p.instance_gib) + " GiB, " + std::to_string(u.gpus) + " GPUs of " +
          Num(in.gpu.memory_gib) + " GiB: more than a node's " + std::to_string(in.gpus_per_node));
    }
    p.unit = u.name;
    p.unit_memory_gib = u.memory_gib;
    p.unit_compute = u.compute;
    p.peak_compute = s.peak_qps / s.qps_per_gpu;
    p.reserved_compute = in.reserve_fraction * p.peak_compute;
    p.instances = std::max(s.replicas, CeilDiv(p.reserved_compute, u.compute));
    p.gpus = u.gpus > 1 ? p.instances * u.gpus : CeilDiv(p.instances, u.per_gpu);
    p.gpu_share_percent = u.share_percent;
    p.gpu_memory_mib = u.memory_mib;
    if (u.share_percent > 0) mps += p.gpus;
    gpus += p.gpus;
    plan.services.push_back(p);
  }
  plan.inference_gpus = gpus;
  // Every inference node offers the same number of pools (one agent flag): enough nodes
  // that the pools hold the MPS units and the other GPUs the rest.
  const uint32_t g = in.gpus_per_node;
  uint32_t nodes = CeilDiv(gpus, g);
  while (mps > 0 && nodes * (g - CeilDiv(mps, nodes)) < gpus - mps) ++nodes;
  plan.inference_nodes = nodes;
  plan.mps_gpus_per_node = mps > 0 ? CeilDiv(mps, nodes) : 0;
  plan.lend_fraction = std::clamp(3 * (1 - in.guarantee), 0.0, 1.0);
  uint32_t nominal = 0;
  for (const Project& pr : in.projects) {
    ProjectPlan p;
    p.name = pr.name;
    p.average_gpus = pr.gpu_days / pr.deadline_days;
    p.nominal = CeilDiv(p.average_gpus, in.guarantee);
    p.lending_limit = static_cast<uint32_t>(std::floor(p.nominal * plan.lend_fraction + 1e-9));
    p.weight = pr.weight > 0 ? pr.weight : p.nominal;
    nominal += p.nominal;
    plan.projects.push_back(p);
  }
  plan.training_nodes = CeilDiv(nominal, in.gpus_per_node);
  plan.training_gpus = plan.training_nodes * in.gpus_per_node;
  plan.total_gpus = (plan.inference_nodes + plan.training_nodes) * in.gpus_per_node;
  if (in.budget_gpus > 0 && plan.total_gpus > in.budget_gpus) {
    return absl::InvalidArgumentError(
        "budget_gpus: the plan needs " + std::to_string(plan.total_gpus) + " GPUs (" +
        std::to_string(plan.inference_gpus) + " inference, " + std::to_string(nominal) +
        " training nominal, in whole nodes), above the budget of " +
        std::to_string(in.budget_gpus) + ": lower the guarantee, move deadlines, or buy more");
  }
  return plan;
}

std::string PlanTable(const CapacityInput& in, const CapacityPlan& plan) {
  std::ostringstream out;
  char buf[256];
  if (!plan.services.empty()) {
    out << "inference pool (" << in.gpu.name << ", " << Num(in.gpu.memory_gib)
        << " GiB; compute reserved for " << Num(in.reserve_fraction * 100, 0) << "% of peak)\n";
    std::snprintf(buf, sizeof buf, "  %-16s %9s %-18s %9s %9s %9s %5s %5s\n", "service", "inst GiB",
                  "unit", "unit GiB", "peak GPU", "reserved", "inst", "GPUs");
    out << buf;
    for (const ServicePlan& p : plan.services) {
      std::snprintf(buf, sizeof buf, "  %-16s %9.1f %-18s %9.1f %9.2f %9.2f %5u %5u\n",
                    p.name.c_str(), p.instance_gib, p.unit.c_str(), p.unit_memory_gib,
                    p.peak_compute, p.reserved_compute, p.instances, p.gpus);
      out << buf;
    }
    out << "  total: " << plan.inference_gpus << " GPUs on " << plan.inference_nodes << " nodes of "
        << in.gpus_per_node << " (pool inference, tainted)\n";
    for (const ServicePlan& p : plan.services) {
      if (p.gpu_share_percent == 0) continue;
      out << "  " << p.name << ": each instance --gpu-share " << p.gpu_share_percent
          << "% --gpu-mem " << p.gpu_memory_mib << "Mi, in a class with gpu_sharing: mps\n";
    }
    if (plan.mps_gpus_per_node > 0) {
      out << "  MPS pools: " << plan.mps_gpus_per_node
          << " GPU(s) of each inference node (baton-agent --mps-gpus)\n";
    }
    out << "\n";
  }
  if (!plan.projects.empty()) {
    out << "shared training pool (guarantee " << Num(in.guarantee * 100, 0)
        << "%: each tenant lends at most " << Num(plan.lend_fraction * 100, 0)
        << "% of its nominal quota)\n";
    std::snprintf(buf, sizeof buf, "  %-16s %12s %9s %9s %8s\n", "project", "average GPUs",
                  "nominal", "lend max", "weight");
    out << buf;
    for (const ProjectPlan& p : plan.projects) {
      std::snprintf(buf, sizeof buf, "  %-16s %12.1f %9u %9u %8.1f\n", p.name.c_str(),
                    p.average_gpus, p.nominal, p.lending_limit, p.weight);
      out << buf;
    }
    out << "  total: " << plan.training_gpus << " GPUs on " << plan.training_nodes
        << " nodes (default pool)\n\n";
  }
  out << "cluster: " << plan.total_gpus << " GPUs\n";
  return out.str();
}

std::string PlanPolicyYaml(const CapacityInput& in, const CapacityPlan& plan) {
  std::ostringstream out;
  out << "# baton capacity: tenants and pools for the coordinator's policy file.\n";
  if (!plan.services.empty()) {
    out << "pools:\n  - name: inference\n    classes: [inference-critical, inference]\n";
  }
  if (plan.mps_gpus_per_node > 0) {
    out << "# MPS units: their services' class needs gpu_sharing: mps (classes[].gpu_sharing).\n";
  }
  out << "tenants:\n";
  if (!plan.services.empty()) {
    out << "  - name: serving          # the inference pool; lends nothing\n"
        << "    weight: 1\n    nominal: {gpus: " << plan.inference_gpus << "}\n"
        << "    lending_limit: 0%\n";
  }
  for (const ProjectPlan& p : plan.projects) {
    out << "  - name: " << p.name << "\n    weight: " << p.weight
        << "\n    nominal: {gpus: " << p.nominal
        << "}\n    lending_limit: " << Num(plan.lend_fraction * 100, 0) << "%     # guarantee "
        << Num(in.guarantee * 100, 0) << "%\n";
  }
  return out.str();
}

std::string PlanClusterYaml(const CapacityInput& in, const CapacityPlan& plan) {
  std::ostringstream out;
  out << "# baton capacity: the planned pools as a baton-sim cluster file.\nnode_groups:\n";
  auto group = [&](const char* name, uint32_t count, bool inference) {
    if (count == 0) return;
    out << "  - name: " << name << "\n    count: " << count << "\n    gpus: " << in.gpus_per_node
        << "\n    gpu_model: " << in.gpu.name << "\n    gpu_memory: " << MibOf(in.gpu.memory_gib)
        << "Mi\n";
    if (inference && plan.mps_gpus_per_node > 0) {
      out << "    mps_gpus: " << plan.mps_gpus_per_node << "\n";
    }
    if (inference) {
      out << "    pool: inference\n"
          << "    taints: [{key: dedicated, value: inference, effect: NoSchedule}]\n";
    }
  };
  group("infer", plan.inference_nodes, true);
  group("train", plan.training_nodes, false);
  return out.str();
}

namespace {

double At(const nlohmann::json& j, const char* pointer) {
  nlohmann::json::json_pointer p(pointer);
  return j.contains(p) && j[p].is_number() ? j[p].get<double>() : 0;
}

}  // namespace

std::vector<RuleCheck> CheckPlan(const CapacityInput& in, const CapacityPlan& plan,
                                 const nlohmann::json& s) {
  std::vector<RuleCheck> out;
  if (!plan.services.empty()) {
    // One pass is 250 ms; a service that waits longer found its pool full.
    double p99 = At(s, "/inference/placement_delay_s/p99");
    double most = At(s, "/inference/placement_delay_s/max");
    out.push_back({"inference pool: weights + peak KV cache, 70% of peak compute",
                   most <= 1 && At(s, "/classes/inference/never_started") == 0,
                   "services waited p99 " + Num(p99, 2) + " s, at most " + Num(most, 2) +
                       " s (held: no wait beyond a scheduling pass)"});
  }
  double used = At(s, "/all/gpu_hours"), lost = At(s, "/all/gpu_hours_lost_to_evictions");
  for (const ProjectPlan& p : plan.projects) {
    std::string t = "/tenants/" + p.name;
    if (!s.contains(nlohmann::json::json_pointer(t))) {
      out.push_back({"project " + p.name, false, "no jobs of tenant " + p.name + " in the trace"});
      continue;
    }
    double never = At(s, (t + "/never_started").c_str());
    double p95 = At(s, (t + "/wait_s/p95").c_str());
    double deadline_s = 0;
    for (const Project& pr : in.projects) {
      if (pr.name == p.name) deadline_s = pr.deadline_days * 86400;
    }
    out.push_back({"project " + p.name + ": nominal " + std::to_string(p.nominal) +
                       " GPUs, lending at most " + std::to_string(p.lending_limit),
                   never == 0 && p95 <= 0.1 * deadline_s,
                   Num(never, 0) + " jobs never started, p95 wait " + Num(p95 / 3600, 2) +
                       " h (held: all started, p95 within 10% of the deadline)"});
  }
  if (!plan.projects.empty()) {
    double share = used > 0 ? lost / used : 0;
    out.push_back({"lending at most " + Num(plan.lend_fraction * 100, 0) +
                       "%: reclaiming lent GPUs stays cheap",
                   share <= 0.05,
                   Num(lost, 1) + " GPU-h lost to evictions of " + Num(used, 1) + " used (" +
                       Num(share * 100, 1) + "%; held: at most 5%)"});
    double longest = At(s, "/big_gangs/longest_wait_s");
    out.push_back({"big gangs gather their GPUs", At(s, "/big_gangs/never_started") == 0,
                   Num(At(s, "/big_gangs/jobs"), 0) + " gangs of at least " +
                       Num(At(s, "/big_gangs/min_gpus"), 0) + " GPUs, longest wait " +
                       Num(longest / 3600, 2) + " h, " + Num(At(s, "/big_gangs/never_started"), 0) +
                       " never started"});
  }
  return out;
}

std::string CheckTable(const std::vector<RuleCheck>& checks) {
  std::string out = "the plan on the trace (baton-sim):\n";
  for (const RuleCheck& c : checks) {
    out += std::string("  ") + (c.held ? "held         " : "DID NOT HOLD ") + c.rule + "\n" +
           std::string(15, ' ') + c.detail + "\n";
  }
  return out;
}

}  // namespace baton::cli
