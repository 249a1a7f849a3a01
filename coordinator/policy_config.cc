#include "coordinator/policy_config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "common/ids.h"
#include "common/resources.h"

namespace baton {
namespace {

// Every problem found, each with where it is.
class Problems {
 public:
  void Add(const std::string& where, const std::string& what) {
    list_.push_back(where + ": " + what);
  }
  absl::Status ToStatus(const std::string& source) const {
    if (list_.empty()) return absl::OkStatus();
    std::string text = source + ": " + std::to_string(list_.size()) + " problem(s)";
    for (const auto& p : list_) text += "\n  " + p;
    return absl::InvalidArgumentError(text);
  }

 private:
  std::vector<std::string> list_;
};

void Validate(const Policy& policy, Problems& problems);  // the checks, below

// Typed reads of YAML values; each bad value is a problem, and the field keeps its value.
class Reader {
 public:
  explicit Reader(Problems& problems) : problems_(problems) {}

  bool Map(const YAML::Node& n, const std::string& where,
           std::initializer_list<const char*> known) {
    if (!n.IsMap()) {
      problems_.Add(where, "expected a map");
      return false;
    }
    for (const auto& kv : n) {
      std::string key = kv.first.Scalar();
      if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) ==
          known.end()) {
        problems_.Add(where, "unknown key '" + key + "'");
      }
    }
    return true;
  }

  template <typename T>
  void Scalar(const YAML::Node& n, const std::string& where, T* out) {
    if (!n) return;
    try {
      if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "expected a single value");
      *out = n.as<T>();
    } catch (const YAML::Exception&) {
      problems_.Add(where, "'" + Text(n) + "' is not a valid " + TypeName<T>());
    }
  }

  template <typename T>
  void Parsed(const YAML::Node& n, const std::string& where, T* out,
              absl::StatusOr<uint64_t> (*parse)(std::string_view)) {
    if (!n) return;
    absl::StatusOr<uint64_t> v = n.IsScalar() ? parse(n.Scalar()) : absl::InvalidArgumentError("");
    if (!v.ok()) {
      problems_.Add(where, "'" + Text(n) + "' is not a valid quantity");
      return;
    }
    // A field narrower than the parsed value (grace in 32 bits, durations in signed 64)
    // must not wrap into a small or negative setting that then passes every later check.
    if (*v > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      problems_.Add(where, "'" + Text(n) + "' is too large (at most " +
                               std::to_string(std::numeric_limits<T>::max()) + ")");
      return;
    }
    *out = static_cast<T>(*v);
  }

  // {gpus: 8, cpus: "64", memory: 512Gi}; fields left out keep `out`'s.
  void Amount(const YAML::Node& n, const std::string& where, Resources* out) {
    if (!n || !Map(n, where, {"gpus", "cpus", "memory"})) return;
    Scalar(n["gpus"], where + ".gpus", &out->gpus);
    Parsed(n["cpus"], where + ".cpus", &out->cpu_millis, ParseCpuMillis);
    Parsed(n["memory"], where + ".memory", &out->memory_bytes, ParseBytes);
  }

  Problems& problems() { return problems_; }

 private:
  static std::string Text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    std::ostringstream out;
    out << n;
    return out.str();
  }
  template <typename T>
  static const char* TypeName() {
    if constexpr (std::is_same_v<T, bool>) return "true/false";
    if constexpr (std::is_floating_point_v<T>) return "number";
    if constexpr (std::is_integral_v<T>) return "whole number";
    return "string";
  }

  Problems& problems_;
};

void ParseDefaults(Reader& r, const YAML::Node& n, Policy& p) {
  if (!n || !r.Map(n, "defaults",
                   {"class", "grace", "max_grace", "max_restarts", "cpu_per_rank",
                    "memory_per_rank", "pids_limit", "stop_after_disconnect", "restart_backoff",
                    "restart_backoff_cap", "healthy_after"})) {
    return;
  }
  r.Scalar(n["class"], "defaults.class", &p.default_class);
  r.Parsed(n["grace"], "defaults.grace", &p.default_grace_seconds, ParseDurationSeconds);
  r.Parsed(n["max_grace"], "defaults.max_grace", &p.max_grace_seconds, ParseDurationSeconds);
  r.Scalar(n["max_restarts"], "defaults.max_restarts", &p.default_max_restarts);
  r.Parsed(n["cpu_per_rank"], "defaults.cpu_per_rank", &p.default_cpu_millis_per_rank,
           ParseCpuMillis);
  r.Parsed(n["memory_per_rank"], "defaults.memory_per_rank", &p.default_memory_bytes_per_rank,
           ParseBytes);
  r.Scalar(n["pids_limit"], "defaults.pids_limit", &p.default_pids_limit);
  r.Parsed(n["stop_after_disconnect"], "defaults.stop_after_disconnect",
           &p.default_stop_after_disconnect_s, ParseDurationSeconds);
  r.Parsed(n["restart_backoff"], "defaults.restart_backoff", &p.service_restart.backoff_s,
           ParseDurationSeconds);
  r.Parsed(n["restart_backoff_cap"], "defaults.restart_backoff_cap",
           &p.service_restart.backoff_cap_s, ParseDurationSeconds);
  r.Parsed(n["healthy_after"], "defaults.healthy_after", &p.service_restart.healthy_after_s,
           ParseDurationSeconds);
}

PriorityClass ParseClass(Reader& r, const YAML::Node& n, const std::string& where) {
  PriorityClass c;
  if (!r.Map(n, where,
             {"name", "value", "preemptible", "service", "may_preempt", "cooldown", "cooldown_cap",
              "min_runtime", "tenants", "pids_limit", "stop_after_disconnect",
              "evicts_within_min_runtime", "restart_backoff", "restart_backoff_cap",
              "healthy_after", "topology", "gpu_sharing", "mps_user"})) {
    return c;
  }
  if (const YAML::Node t = n["topology"];
      t && r.Map(t, where + ".topology", {"level", "mode", "wait"})) {
    r.Scalar(t["level"], where + ".topology.level", &c.topology.level);
    std::string mode = "preferred";
    r.Scalar(t["mode"], where + ".topology.mode", &mode);
    if (mode != "preferred" && mode != "required") {
      r.problems().Add(where + ".topology.mode", "'" + mode + "' is not preferred or required");
    }
    c.topology.required = mode == "required";
    int64_t wait_s = 0;
    r.Parsed(t["wait"], where + ".topology.wait", &wait_s, ParseDurationSeconds);
    c.topology.wait_ms = wait_s * 1000;
    if (!t["level"]) r.problems().Add(where + ".topology", "a topology needs a level");
  }
  r.Scalar(n["name"], where + ".name", &c.name);
  r.Scalar(n["value"], where + ".value", &c.value);
  r.Scalar(n["service"], where + ".service", &c.service);
  c.preemptible = !c.service;
  c.min_runtime_s = c.service ? 0 : c.min_runtime_s;
  r.Scalar(n["preemptible"], where + ".preemptible", &c.preemptible);
  r.Scalar(n["may_preempt"], where + ".may_preempt", &c.may_preempt);
  r.Parsed(n["cooldown"], where + ".cooldown", &c.cooldown_base_s, ParseDurationSeconds);
  r.Parsed(n["cooldown_cap"], where + ".cooldown_cap", &c.cooldown_cap_s, ParseDurationSeconds);
  r.Parsed(n["min_runtime"], where + ".min_runtime", &c.min_runtime_s, ParseDurationSeconds);
  // inference-critical may evict inside a minimum runtime unless its policy says no.
  c.evicts_within_min_runtime = c.name == "inference-critical";
  r.Scalar(n["evicts_within_min_runtime"], where + ".evicts_within_min_runtime",
           &c.evicts_within_min_runtime);
  r.Scalar(n["gpu_sharing"], where + ".gpu_sharing", &c.gpu_sharing);
  if (c.gpu_sharing == "none") c.gpu_sharing.clear();
  r.Scalar(n["mps_user"], where + ".mps_user", &c.mps_user);
  if (!n["name"]) r.problems().Add(where, "a class needs a name");
  if (!n["value"]) r.problems().Add(where, "a class needs a value");
  return c;
}

// "30%" of the nominal quota in every dimension (an unlimited one stays unlimited).
std::optional<Resources> PercentOf(Reader& r, const YAML::Node& n, const std::string& where,
                                   const std::optional<Resources>& nominal) {
  std::string text = n.Scalar();
  char* end = nullptr;
  double pct = std::strtod(text.c_str(), &end);
  // Written so that NaN ("nan%") fails too: converting it to an integer is undefined.
  if (text.empty() || end == text.c_str() || std::string(end) != "%" || !(pct >= 0 && pct <= 100)) {
    r.problems().Add(where, "'" + text + "' is not a percentage from 0% to 100%");
    return std::nullopt;
  }
  if (!nominal) {
    r.problems().Add(where, "a percentage needs a nominal quota");
    return std::nullopt;
  }
  auto part = [pct](uint64_t v, uint64_t unlimited) {
    return v == unlimited ? v
                          : static_cast<uint64_t>(std::floor(static_cast<double>(v) * pct / 100));
  };
  return Resources{part(nominal->cpu_millis, sched::kUnlimited.cpu_millis),
                   part(nominal->memory_bytes, sched::kUnlimited.memory_bytes),
                   static_cast<uint32_t>(part(nominal->gpus, sched::kUnlimited.gpus))};
}

TenantPolicy ParseTenant(Reader& r, const YAML::Node& n, const std::string& where, bool named) {
  TenantPolicy t;
  if (!r.Map(
          n, where,
          named ? std::initializer_list<const char*>{"name", "weight", "nominal", "borrowing_limit",
                                                     "lending_limit", "members", "allow_root"}
                : std::initializer_list<const char*>{"name", "weight", "nominal", "borrowing_limit",
                                                     "lending_limit"})) {
    return t;
  }
  if (named) r.Scalar(n["name"], where + ".name", &t.name);
  if (named && !n["name"]) r.problems().Add(where, "a tenant needs a name");
  if (!named && n["name"]) r.problems().Add(where + ".name", "the default tenant has no name");
  r.Scalar(n["weight"], where + ".weight", &t.weight);
  if (n["nominal"]) {
    t.nominal = sched::kUnlimited;
    r.Amount(n["nominal"], where + ".nominal", &*t.nominal);
  }
  r.Amount(n["borrowing_limit"], where + ".borrowing_limit", &t.borrowing_limit);
  const YAML::Node lend = n["lending_limit"];
  if (lend && lend.IsScalar()) {
    if (auto l = PercentOf(r, lend, where + ".lending_limit", t.nominal)) t.lending_limit = *l;
  } else {
    r.Amount(lend, where + ".lending_limit", &t.lending_limit);
  }
  return t;
}

sched::PoolPolicy ParsePool(Reader& r, const YAML::Node& n, const std::string& where) {
  sched::PoolPolicy p;
  if (!r.Map(n, where, {"name", "classes"})) return p;
  r.Scalar(n["name"], where + ".name", &p.name);
  if (const YAML::Node classes = n["classes"]; classes && !classes.IsSequence()) {
    r.problems().Add(where + ".classes", "expected a list of class names");
  } else if (classes) {
    for (size_t i = 0; i < classes.size(); ++i) {
      std::string c;
      r.Scalar(classes[i], where + ".classes[" + std::to_string(i) + "]", &c);
      p.classes.push_back(c);
    }
  }
  return p;
}

void ParseLimits(Reader& r, const YAML::Node& n, sched::JobLimits& l) {
  const std::string w = "job_limits";
  if (!n || !r.Map(n, w,
                   {"max_nodes", "max_gpus_per_node", "max_gpus_per_job", "max_cpus_per_node",
                    "max_memory_per_node", "min_cpus_per_rank", "min_memory_per_rank"})) {
    return;
  }
  r.Scalar(n["max_nodes"], w + ".max_nodes", &l.max_nodes);
  r.Scalar(n["max_gpus_per_node"], w + ".max_gpus_per_node", &l.max_gpus_per_node);
  r.Scalar(n["max_gpus_per_job"], w + ".max_gpus_per_job", &l.max_gpus_per_job);
  r.Parsed(n["max_cpus_per_node"], w + ".max_cpus_per_node", &l.max_cpu_millis_per_node,
           ParseCpuMillis);
  r.Parsed(n["max_memory_per_node"], w + ".max_memory_per_node", &l.max_memory_bytes_per_node,
           ParseBytes);
  r.Parsed(n["min_cpus_per_rank"], w + ".min_cpus_per_rank", &l.min_cpu_millis_per_rank,
           ParseCpuMillis);
  r.Parsed(n["min_memory_per_rank"], w + ".min_memory_per_rank", &l.min_memory_bytes_per_rank,
           ParseBytes);
}

template <typename T, typename F>
void ParseList(Reader& r, const YAML::Node& n, const std::string& where, std::vector<T>& out,
               F parse) {
  if (!n) return;
  if (!n.IsSequence()) {
    r.problems().Add(where, "expected a list");
    return;
  }
  out.clear();
  for (size_t i = 0; i < n.size(); ++i) {
    out.push_back(parse(n[i], where + "[" + std::to_string(i) + "]"));
  }
}

// A list of names ("alice", "@ml", "*"); nullopt when absent.
std::optional<std::vector<std::string>> Names(Reader& r, const YAML::Node& n,
                                              const std::string& where) {
  if (!n) return std::nullopt;
  std::vector<std::string> out;
  if (!n.IsSequence()) {
    r.problems().Add(where, "expected a list of names");
    return out;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    std::string name;
    r.Scalar(n[i], where + "[" + std::to_string(i) + "]", &name);
    out.push_back(name);
  }
  return out;
}

// admins, tenants[].members, classes[].tenants: who may do what.
void ParseAccess(Reader& r, const YAML::Node& root, Policy& p) {
  if (auto admins = Names(r, root["admins"], "admins")) p.access.admins = *admins;
  auto each = [&](const char* section, const char* key, auto&& put) {
    const YAML::Node list = root[section];
    if (!list || !list.IsSequence()) return;
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      if (!item.IsMap() || !item["name"] || !item["name"].IsScalar()) continue;
      std::string where = std::string(section) + "[" + std::to_string(i) + "]." + key;
      if (auto names = Names(r, item[key], where)) put(item["name"].Scalar(), std::move(*names));
    }
  };
  each("tenants", "members",
       [&](const std::string& t, std::vector<std::string> m) { p.access.members[t] = m; });
  each("classes", "tenants",
       [&](const std::string& c, std::vector<std::string> t) { p.access.class_tenants[c] = t; });
  // Per-item scalars kept outside the scheduler's structs: tenants[].allow_root and
  // classes[].pids_limit.
  auto scalars = [&](const char* section, const char* key, auto&& put) {
    const YAML::Node list = root[section];
    if (!list || !list.IsSequence()) return;
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      if (!item.IsMap() || !item["name"] || !item["name"].IsScalar() || !item[key]) continue;
      put(item["name"].Scalar(), item[key],
          std::string(section) + "[" + std::to_string(i) + "]." + key);
    }
  };
  scalars("tenants", "allow_root",
          [&](const std::string& t, const YAML::Node& v, const std::string& where) {
            bool allow = false;
            r.Scalar(v, where, &allow);
            if (allow) p.access.root_tenants.insert(t);
          });
  scalars("classes", "stop_after_disconnect",
          [&](const std::string& c, const YAML::Node& v, const std::string& where) {
            if (v.IsScalar() && v.Scalar() == "never") {
              p.class_stop_after_disconnect_s[c] = Policy::kNever;
              return;
            }
            int64_t s = 0;
            r.Parsed(v, where, &s, ParseDurationSeconds);
            p.class_stop_after_disconnect_s[c] = s;
          });
  using Override = std::optional<int64_t> Policy::ServiceRestartOverride::*;
  for (auto [key, field] : {std::pair<const char*, Override>{
                                "restart_backoff", &Policy::ServiceRestartOverride::backoff_s},
                            {"restart_backoff_cap", &Policy::ServiceRestartOverride::backoff_cap_s},
                            {"healthy_after", &Policy::ServiceRestartOverride::healthy_after_s}}) {
    scalars(
        "classes", key,
        [&, field = field](const std::string& c, const YAML::Node& v, const std::string& where) {
          int64_t s = 0;
          r.Parsed(v, where, &s, ParseDurationSeconds);
          p.class_service_restart[c].*field = s;
        });
  }
  scalars("classes", "pids_limit",
          [&](const std::string& c, const YAML::Node& v, const std::string& where) {
            uint32_t limit = 0;
            r.Scalar(v, where, &limit);
            p.class_pids_limits[c] = limit;
          });
}

void ParseAdmission(Reader& r, const YAML::Node& n, Policy::Admission& a) {
  const std::string w = "admission";
  if (!n || !r.Map(n, w,
                   {"max_env_entries", "max_env_bytes", "max_selectors", "max_tolerations",
                    "max_command_bytes", "max_pending_per_tenant", "submit_rate", "submit_burst",
                    "max_array_tasks", "max_array_tasks_per_tenant"})) {
    return;
  }
  r.Scalar(n["max_env_entries"], w + ".max_env_entries", &a.max_env_entries);
  r.Parsed(n["max_env_bytes"], w + ".max_env_bytes", &a.max_env_bytes, ParseBytes);
  r.Scalar(n["max_selectors"], w + ".max_selectors", &a.max_selectors);
  r.Scalar(n["max_tolerations"], w + ".max_tolerations", &a.max_tolerations);
  r.Parsed(n["max_command_bytes"], w + ".max_command_bytes", &a.max_command_bytes, ParseBytes);
  r.Scalar(n["max_pending_per_tenant"], w + ".max_pending_per_tenant", &a.max_pending_per_tenant);
  r.Scalar(n["submit_rate"], w + ".submit_rate", &a.submit_rate);
  r.Scalar(n["submit_burst"], w + ".submit_burst", &a.submit_burst);
  r.Scalar(n["max_array_tasks"], w + ".max_array_tasks", &a.max_array_tasks);
  r.Scalar(n["max_array_tasks_per_tenant"], w + ".max_array_tasks_per_tenant",
           &a.max_array_tasks_per_tenant);
}

// topology.levels, lowest first: "leaf" is the label topology.baton.io/leaf; a label key
// with a '/' is taken as it is and named by what follows its last '/'.
void ParseTopology(Reader& r, const YAML::Node& n, Policy& p) {
  if (!n || !r.Map(n, "topology", {"levels"})) return;
  ParseList(
      r, n["levels"], "topology.levels", p.topology_levels,
      [&](const YAML::Node& l, const std::string& w) {
        std::string text;
        r.Scalar(l, w, &text);
        size_t slash = text.rfind('/');
        return sched::TopologyLevel{
            slash == std::string::npos ? text : text.substr(slash + 1),
            slash == std::string::npos ? std::string(sched::kTopologyLabelPrefix) + text : text};
      });
}

void ParseRoot(Reader& r, const YAML::Node& root, Policy& p) {
  if (!root || root.IsNull()) return;
  if (!r.Map(root, "policy",
             {"defaults", "fair_share", "preemption", "classes", "tenants", "default_tenant",
              "default_pool", "pools", "job_limits", "admission", "admins", "placement", "network",
              "topology"})) {
    return;
  }
  ParseTopology(r, root["topology"], p);
  ParseDefaults(r, root["defaults"], p);
  if (const YAML::Node fs = root["fair_share"]; fs && r.Map(fs, "fair_share", {"half_life"})) {
    r.Parsed(fs["half_life"], "fair_share.half_life", &p.fair_share_half_life_s,
             ParseDurationSeconds);
  }
  if (const YAML::Node pre = root["preemption"];
      pre && r.Map(pre, "preemption", {"searches_per_pass"})) {
    r.Scalar(pre["searches_per_pass"], "preemption.searches_per_pass",
             &p.preemption_searches_per_pass);
  }
  if (const YAML::Node pl = root["placement"];
      pl && r.Map(pl, "placement", {"inference_numa_exclusive"})) {
    r.Scalar(pl["inference_numa_exclusive"], "placement.inference_numa_exclusive",
             &p.inference_numa_exclusive);
  }
  if (const YAML::Node net = root["network"];
      net && r.Map(net, "network", {"steer_capped_training_to_sockets"})) {
    r.Scalar(net["steer_capped_training_to_sockets"], "network.steer_capped_training_to_sockets",
             &p.steer_capped_training_to_sockets);
  }
  ParseList(r, root["classes"], "classes", p.classes,
            [&](const YAML::Node& n, const std::string& w) { return ParseClass(r, n, w); });
  ParseList(r, root["tenants"], "tenants", p.tenants,
            [&](const YAML::Node& n, const std::string& w) {
              return ParseTenant(r, n, w, /*named=*/true);
            });
  if (root["default_tenant"]) {
    p.default_tenant = ParseTenant(r, root["default_tenant"], "default_tenant", /*named=*/false);
  }
  r.Scalar(root["default_pool"], "default_pool", &p.default_pool);
  ParseList(r, root["pools"], "pools", p.pools,
            [&](const YAML::Node& n, const std::string& w) { return ParsePool(r, n, w); });
  ParseLimits(r, root["job_limits"], p.job_limits);
  ParseAdmission(r, root["admission"], p.admission);
  ParseAccess(r, root, p);
}

}  // namespace

absl::StatusOr<Policy> ParsePolicy(const std::string& yaml) {
  if (yaml.size() > kMaxPolicyBytes) {
    return absl::InvalidArgumentError("policy: " + FormatBytes(yaml.size()) + ", above the " +
                                      FormatBytes(kMaxPolicyBytes) + " a policy may have");
  }
  Problems problems;
  Reader reader(problems);
  Policy p = Policy::Default();
  try {
    ParseRoot(reader, YAML::Load(yaml), p);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError("policy: malformed YAML at line " +
                                      std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  Validate(p, problems);  // the values that did parse are checked too: every problem named
  if (absl::Status s = problems.ToStatus("policy"); !s.ok()) return s;
  return p;
}

absl::StatusOr<Policy> LoadPolicyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("policy file " + path + " cannot be read");
  std::string text(kMaxPolicyBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  absl::StatusOr<Policy> p = ParsePolicy(text);
  if (!p.ok()) return absl::InvalidArgumentError(path + ": " + std::string(p.status().message()));
  return p;
}

}  // namespace baton

namespace baton {
namespace {

void CheckClasses(const Policy& p, Problems& out) {
  if (p.classes.empty()) out.Add("classes", "at least one class is needed");
  std::set<std::string> names;
  std::set<int32_t> values;
  for (size_t i = 0; i < p.classes.size(); ++i) {
    const PriorityClass& c = p.classes[i];
    std::string w = "classes[" + std::to_string(i) + "] (" + c.name + ")";
    if (!IsValidName(c.name)) out.Add(w, "name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
    if (!names.insert(c.name).second) out.Add(w, "a second class of that name");
    if (!values.insert(c.value).second) {
      out.Add(w, "value " + std::to_string(c.value) + " is taken: classes are strictly ordered");
    }
    if (c.service && c.preemptible) out.Add(w, "a service (inference) class is never preemptible");
    if (c.cooldown_base_s <= 0) out.Add(w, "cooldown must be positive");
    if (c.cooldown_cap_s < c.cooldown_base_s) out.Add(w, "cooldown_cap is below cooldown");
    if (c.min_runtime_s < 0) out.Add(w, "min_runtime is negative");
    if (!c.gpu_sharing.empty() && c.gpu_sharing != "mps") {
      out.Add(w + ".gpu_sharing", "'" + c.gpu_sharing + "' is not mps or none");
    } else if (!c.gpu_sharing.empty() && !c.service) {
      out.Add(w + ".gpu_sharing",
              "mps only for service (inference) classes: training never shares a GPU");
    }
    if (!c.mps_user.empty() && c.gpu_sharing != "mps") {
      out.Add(w + ".mps_user", "an MPS service user needs gpu_sharing: mps");
    } else if (!c.mps_user.empty() && !IsValidName(c.mps_user)) {
      out.Add(w + ".mps_user",
              "'" + c.mps_user + "' is not a user name ([A-Za-z0-9][A-Za-z0-9._-]{0,62})");
    } else if (c.mps_user == "root") {
      out.Add(w + ".mps_user", "shares never run as root");
    }
    if (!c.topology.level.empty() && sched::TopologyLevelIndex(p, c.topology.level) < 0) {
      out.Add(w + ".topology.level", "'" + c.topology.level + "' is not one of topology.levels");
    }
  }
  if (!p.Find(p.default_class)) {
    out.Add("defaults.class", "'" + p.default_class + "' is not a class");
  }
}

void CheckTenant(const TenantPolicy& t, const std::string& w, Problems& out) {
  if (!(t.weight > 0) || !std::isfinite(t.weight)) out.Add(w, "weight must be above 0");
  if (!t.nominal) return;
  const Resources& n = *t.nominal;
  const Resources& l = t.lending_limit;
  auto over = [](uint64_t lend, uint64_t nominal, uint64_t unlimited) {
    return lend != unlimited && nominal != unlimited && lend > nominal;
  };
  if (over(l.gpus, n.gpus, sched::kUnlimited.gpus) ||
      over(l.cpu_millis, n.cpu_millis, sched::kUnlimited.cpu_millis) ||
      over(l.memory_bytes, n.memory_bytes, sched::kUnlimited.memory_bytes)) {
    out.Add(w, "lending_limit is above the nominal quota it lends from");
  }
}

void CheckTenants(const Policy& p, Problems& out) {
  std::set<std::string> names;
  for (size_t i = 0; i < p.tenants.size(); ++i) {
    const TenantPolicy& t = p.tenants[i];
    std::string w = "tenants[" + std::to_string(i) + "] (" + t.name + ")";
    if (!IsValidName(t.name)) out.Add(w, "name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
    if (!names.insert(t.name).second) out.Add(w, "a second tenant of that name");
    CheckTenant(t, w, out);
  }
  CheckTenant(p.default_tenant, "default_tenant", out);
}

void CheckPools(const Policy& p, Problems& out) {
  if (!IsValidName(p.default_pool)) out.Add("default_pool", "'" + p.default_pool + "' is invalid");
  std::set<std::string> names;
  for (size_t i = 0; i < p.pools.size(); ++i) {
    const sched::PoolPolicy& pool = p.pools[i];
    std::string w = "pools[" + std::to_string(i) + "] (" + pool.name + ")";
    if (!IsValidName(pool.name)) out.Add(w, "name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
    if (!names.insert(pool.name).second) out.Add(w, "a second pool of that name");
    for (const std::string& c : pool.classes) {
      if (!p.Find(c)) out.Add(w, "'" + c + "' is not a class");
    }
  }
}

void CheckLimits(const Policy& p, Problems& out) {
  const sched::JobLimits& l = p.job_limits;
  if (l.max_gpus_per_job && l.max_gpus_per_node > l.max_gpus_per_job) {
    out.Add("job_limits", "max_gpus_per_node is above max_gpus_per_job");
  }
  if (l.max_cpu_millis_per_node && l.min_cpu_millis_per_rank > l.max_cpu_millis_per_node) {
    out.Add("job_limits", "min_cpus_per_rank is above max_cpus_per_node");
  }
  if (l.max_memory_bytes_per_node && l.min_memory_bytes_per_rank > l.max_memory_bytes_per_node) {
    out.Add("job_limits", "min_memory_per_rank is above max_memory_per_node");
  }
  if (p.default_grace_seconds > p.max_grace_seconds) {
    out.Add("defaults.grace", "above defaults.max_grace");
  }
  if (p.fair_share_half_life_s <= 0) out.Add("fair_share.half_life", "must be positive");
  if (p.preemption_searches_per_pass == 0) {
    out.Add("preemption.searches_per_pass", "must be at least 1");
  }
  // 0 would mean "stop at once" to the coordinator and "never" on the wire: refuse it.
  if (p.default_stop_after_disconnect_s == 0) {
    out.Add("defaults.stop_after_disconnect", "must be positive (or a class's 'never')");
  }
  for (const auto& [cls, s] : p.class_stop_after_disconnect_s) {
    if (s == 0) out.Add("classes (" + cls + ").stop_after_disconnect", "must be positive or never");
  }
  auto check_restart = [&](const Policy::ServiceRestart& r, const std::string& where) {
    if (r.backoff_s <= 0 || r.backoff_cap_s < r.backoff_s) {
      out.Add(where + ".restart_backoff", "must be positive and at most restart_backoff_cap");
    }
  };
  check_restart(p.service_restart, "defaults");
  for (const auto& [cls, o] : p.class_service_restart) {
    check_restart(p.ServiceRestartFor(cls), "classes (" + cls + ")");
  }
}

// A user name as NSS spells it, "@group" or "*".
bool IsPrincipalName(const std::string& s) {
  if (s == "*") return true;
  std::string name = !s.empty() && s[0] == '@' ? s.substr(1) : s;
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

void CheckAccess(const Policy& p, Problems& out) {
  const AccessPolicy& a = p.access;
  if (a.admins.empty())
    out.Add("admins", "at least one admin (else nobody could change the policy)");
  for (const auto& name : a.admins) {
    if (!IsPrincipalName(name)) out.Add("admins", "'" + name + "' is not a user, @group or *");
  }
  std::set<std::string> tenants;
  for (const auto& t : p.tenants) tenants.insert(t.name);
  for (const auto& [tenant, members] : a.members) {
    for (const auto& name : members) {
      if (!IsPrincipalName(name)) {
        out.Add("tenants (" + tenant + ").members", "'" + name + "' is not a user, @group or *");
      }
    }
  }
  if (a.members.empty()) tenants.insert(kBuiltinTenant);
  for (const auto& [cls, allowed] : a.class_tenants) {
    for (const auto& t : allowed) {
      if (t != "*" && !tenants.count(t)) {
        out.Add(
            "classes (" + cls + ").tenants",
            "'" + t + "' is not a tenant of this policy" +
                (a.members.empty() ? " (with no members listed, every user is in 'default')" : ""));
      }
    }
  }
}

// Ceilings that keep whatever a policy admits launchable (execve's limits) and
// deliverable (a spec fits one request; see kMaxRequestBytes).
void CheckAdmission(const Policy& p, Problems& out) {
  const Policy::Admission& a = p.admission;
  const std::string w = "admission";
  if (a.max_env_bytes + a.max_command_bytes > Policy::kMaxSpecArgBytes) {
    out.Add(w, "max_env_bytes + max_command_bytes must stay within " +
                   FormatBytes(Policy::kMaxSpecArgBytes) + " (what exec takes with room to spare)");
  }
  if (a.max_env_entries > 4096) out.Add(w + ".max_env_entries", "at most 4096");
  if (a.max_selectors > 1024) out.Add(w + ".max_selectors", "at most 1024");
  if (a.max_tolerations > 1024) out.Add(w + ".max_tolerations", "at most 1024");
  if (!(a.submit_rate >= 0) || a.submit_rate > 1e6) {
    out.Add(w + ".submit_rate", "must be between 0 (no limit) and 1000000 per second");
  }
  if (a.submit_rate > 0 && a.submit_burst == 0) {
    out.Add(w + ".submit_burst", "must be at least 1 when submit_rate is set");
  }
  if (a.max_pending_per_tenant == 0) out.Add(w + ".max_pending_per_tenant", "must be at least 1");
  if (a.max_array_tasks == 0) out.Add(w + ".max_array_tasks", "must be at least 1");
  if (a.max_array_tasks_per_tenant < a.max_array_tasks) {
    out.Add(w + ".max_array_tasks_per_tenant", "must be at least max_array_tasks");
  }
}

void CheckTopology(const Policy& p, Problems& out) {
  std::set<std::string> names, labels;
  for (size_t i = 0; i < p.topology_levels.size(); ++i) {
    const sched::TopologyLevel& l = p.topology_levels[i];
    std::string w = "topology.levels[" + std::to_string(i) + "]";
    if (!IsValidName(l.name))
      out.Add(w, "'" + l.name + "' is not a level name ([A-Za-z0-9][A-Za-z0-9._-]{0,62})");
    if (!names.insert(l.name).second) out.Add(w, "a second level named " + l.name);
    if (!labels.insert(l.label).second) out.Add(w, "a second level of label " + l.label);
  }
}

void Validate(const Policy& policy, Problems& problems) {
  CheckTopology(policy, problems);
  CheckAdmission(policy, problems);
  CheckAccess(policy, problems);
  CheckClasses(policy, problems);
  CheckTenants(policy, problems);
  CheckPools(policy, problems);
  CheckLimits(policy, problems);
}

}  // namespace

absl::Status ValidatePolicy(const Policy& policy) {
  Problems problems;
  Validate(policy, problems);
  return problems.ToStatus("policy");
}

namespace {

std::string Num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string QuotaText(const std::optional<Resources>& r) {
  if (!r) return "none";
  return std::to_string(r->gpus) + " GPUs, " + Num(r->cpu_millis / 1000.0) + " CPUs";
}

}  // namespace

std::string DescribePolicyChange(const Policy& before, const Policy& after) {
  std::vector<std::string> parts;
  for (const auto& c : after.classes) {
    const PriorityClass* old = before.Find(c.name);
    if (!old) {
      parts.push_back("class " + c.name + " added (value " + std::to_string(c.value) + ")");
    } else if (old->value != c.value) {
      parts.push_back("class " + c.name + ": value " + std::to_string(old->value) + " -> " +
                      std::to_string(c.value));
    } else if (old->preemptible != c.preemptible || old->may_preempt != c.may_preempt ||
               old->cooldown_base_s != c.cooldown_base_s || old->min_runtime_s != c.min_runtime_s ||
               old->cooldown_cap_s != c.cooldown_cap_s || old->service != c.service) {
      parts.push_back("class " + c.name + ": eviction settings changed");
    } else if (old->gpu_sharing != c.gpu_sharing) {
      parts.push_back("class " + c.name + ": gpu_sharing " +
                      (old->gpu_sharing.empty() ? "none" : old->gpu_sharing) + " -> " +
                      (c.gpu_sharing.empty() ? "none" : c.gpu_sharing));
    } else if (old->mps_user != c.mps_user) {
      parts.push_back("class " + c.name + ": mps_user " +
                      (old->mps_user.empty() ? "(each owner)" : old->mps_user) + " -> " +
                      (c.mps_user.empty() ? "(each owner)" : c.mps_user));
    }
  }
  for (const auto& c : before.classes) {
    if (!after.Find(c.name)) parts.push_back("class " + c.name + " removed");
  }
  auto find = [](const Policy& p, const std::string& name) -> const TenantPolicy* {
    for (const auto& t : p.tenants) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };
  for (const auto& t : after.tenants) {
    const TenantPolicy* old = find(before, t.name);
    if (!old) {
      parts.push_back("tenant " + t.name + " added (weight " + Num(t.weight) + ", quota " +
                      QuotaText(t.nominal) + ")");
      continue;
    }
    if (old->weight != t.weight) {
      parts.push_back("tenant " + t.name + ": weight " + Num(old->weight) + " -> " + Num(t.weight));
    }
    if (old->nominal != t.nominal) {
      parts.push_back("tenant " + t.name + ": quota " + QuotaText(old->nominal) + " -> " +
                      QuotaText(t.nominal));
    }
    if (!(old->borrowing_limit == t.borrowing_limit) || !(old->lending_limit == t.lending_limit)) {
      parts.push_back("tenant " + t.name + ": borrowing/lending limits changed");
    }
  }
  for (const auto& t : before.tenants) {
    if (!find(after, t.name)) parts.push_back("tenant " + t.name + " removed");
  }
  if (before.access.admins != after.access.admins) parts.push_back("admins changed");
  for (const auto& t : after.tenants) {
    auto was = before.access.members.find(t.name);
    auto now = after.access.members.find(t.name);
    bool had = was != before.access.members.end(), has = now != after.access.members.end();
    if (had != has || (had && was->second != now->second)) {
      parts.push_back("tenant " + t.name + ": members changed");
    }
  }
  if (before.access.root_tenants != after.access.root_tenants) {
    parts.push_back("which tenants may run root jobs changed");
  }
  if (before.access.class_tenants != after.access.class_tenants) {
    parts.push_back("which tenants may use which classes changed");
  }
  auto levels = [](const Policy& p) {
    std::string out;
    for (const auto& l : p.topology_levels)
      out += (out.empty() ? "" : ", ") + l.name + "=" + l.label;
    return out.empty() ? std::string("none") : out;
  };
  if (levels(before) != levels(after)) {
    parts.push_back("topology.levels: " + levels(before) + " -> " + levels(after));
  }
  auto topo = [](const PriorityClass& c) {
    if (c.topology.level.empty()) return std::string("none");
    return c.topology.level + (c.topology.required ? ":required" : ":preferred") +
           (c.topology.wait_ms ? "@" + std::to_string(c.topology.wait_ms / 1000) + "s" : "");
  };
  for (const auto& c : after.classes) {
    const PriorityClass* old = before.Find(c.name);
    if (old && topo(*old) != topo(c)) {
      parts.push_back("class " + c.name + ": topology " + topo(*old) + " -> " + topo(c));
    }
  }
  if (before.inference_numa_exclusive != after.inference_numa_exclusive) {
    parts.push_back(std::string("placement.inference_numa_exclusive: ") +
                    (after.inference_numa_exclusive ? "off -> on" : "on -> off"));
  }
  if (before.steer_capped_training_to_sockets != after.steer_capped_training_to_sockets) {
    parts.push_back(std::string("network.steer_capped_training_to_sockets: ") +
                    (after.steer_capped_training_to_sockets ? "off -> on" : "on -> off"));
  }
  if (parts.empty()) return "classes, tenants and access unchanged";
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace baton
