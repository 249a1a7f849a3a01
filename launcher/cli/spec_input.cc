#include "launcher/cli/spec_input.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"
#include "common/resources.h"
#include "common/status.h"

namespace baton::cli {
namespace {

using Setter = std::function<absl::Status(const std::string&, v1::JobSpec*)>;

absl::StatusOr<uint32_t> ParseCount(const std::string& v) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
    return absl::InvalidArgumentError("'" + v + "' is not a non-negative integer");
  }
  return n;
}

template <typename Parse, typename Set>
Setter Quantity(Parse parse, Set set) {
  return [parse, set](const std::string& v, v1::JobSpec* s) -> absl::Status {
    auto q = parse(v);
    if (!q.ok()) return q.status();
    set(s, *q);
    return absl::OkStatus();
  };
}

Setter Count(void (v1::JobSpec::*set)(uint32_t)) {
  return Quantity(ParseCount, [set](v1::JobSpec* s, uint32_t n) { (s->*set)(n); });
}

Setter Text(void (v1::JobSpec::*set)(const std::string&)) {
  return [set](const std::string& v, v1::JobSpec* s) {
    (s->*set)(v);
    return absl::OkStatus();
  };
}

Setter Seconds(void (v1::JobSpec::*set)(uint64_t)) {
  return Quantity(ParseDurationSeconds, [set](v1::JobSpec* s, uint64_t n) { (s->*set)(n); });
}

// "leaf", "leaf:required", "leaf:preferred@10m": a level, a mode, and how long a required
// gang waits for one domain before it runs spread (Slurm's --switches=N@max-time).
absl::Status SetTopology(const std::string& v, v1::JobSpec* s) {
  std::string text = v;
  v1::TopologyRequest t;
  if (size_t at = text.find('@'); at != std::string::npos) {
    auto wait = ParseDurationSeconds(text.substr(at + 1));
    if (!wait.ok() || *wait > UINT32_MAX) {
      return absl::InvalidArgumentError("'" + text.substr(at + 1) + "' is not a wait (10m, 90s)");
    }
    t.set_wait_seconds(static_cast<uint32_t>(*wait));
    text.resize(at);
  }
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    std::string mode = text.substr(colon + 1);
    if (mode != "required" && mode != "preferred") {
      return absl::InvalidArgumentError("'" + mode +
                                        "' is not a topology mode (required or preferred)");
    }
    t.set_required(mode == "required");
    text.resize(colon);
  }
  if (text.empty()) {
    return absl::InvalidArgumentError("'" + v +
                                      "' names no level: LEVEL[:required|:preferred][@WAIT]");
  }
  t.set_level(text);
  *s->mutable_topology() = std::move(t);
  return absl::OkStatus();
}

// "ok:17,any:18:19,notok:20" (Slurm's afterok:17 spellings too): appended to spec.after.
absl::Status AddDependencies(const std::string& v, v1::JobSpec* s) {
  static const std::map<std::string, v1::DependencyKind> kKinds = {
      {"ok", v1::DEPENDENCY_KIND_OK},       {"afterok", v1::DEPENDENCY_KIND_OK},
      {"any", v1::DEPENDENCY_KIND_ANY},     {"afterany", v1::DEPENDENCY_KIND_ANY},
      {"notok", v1::DEPENDENCY_KIND_NOTOK}, {"afternotok", v1::DEPENDENCY_KIND_NOTOK}};
  for (const std::string& item : std::vector<std::string>(absl::StrSplit(v, ','))) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    auto kind = kKinds.find(parts[0]);
    if (parts.size() < 2 || kind == kKinds.end()) {
      return absl::InvalidArgumentError("'" + item +
                                        "' is not a dependency: KIND:JOB[:JOB...] with KIND ok, "
                                        "any or notok (ok:17,any:18)");
    }
    for (size_t i = 1; i < parts.size(); ++i) {
      // 17, 17_3 (task 3 of array 17) or 17_* (every task of it, as 17 says too).
      std::optional<uint32_t> task;
      if (size_t us = parts[i].find('_'); us != std::string::npos) {
        const std::string index = parts[i].substr(us + 1);
        parts[i].resize(us);
        if (index != "*") {
          uint32_t n = 0;
          auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), n);
          if (index.empty() || ec != std::errc() || end != index.data() + index.size()) {
            return absl::InvalidArgumentError("'" + item + "': '" + index +
                                              "' is not a task index (ARRAY_INDEX or ARRAY_*)");
          }
          task = n;
        }
      }
      absl::StatusOr<uint64_t> id = ParseJobId(parts[i]);
      if (!id.ok())
        return absl::InvalidArgumentError("'" + item + "': " + std::string(id.status().message()));
      v1::JobDependency* d = s->add_after();
      d->set_kind(kind->second);
      d->set_job(*id);
      if (task) d->set_task(*task);
    }
  }
  return absl::OkStatus();
}

// "0-63", "0-63:2", "0-63%8", "5": first[-last][:step][%max_running] (Slurm's --array,
// without its lists of indexes).
absl::Status SetArray(const std::string& v, v1::JobSpec* s) {
  auto bad = [&v](const std::string& why) {
    return absl::InvalidArgumentError("'" + v + "' is not an array: " + why +
                                      " (FIRST[-LAST][:STEP][%MAX_RUNNING], e.g. 0-63%8)");
  };
  auto number = [](const std::string& t) -> std::optional<uint32_t> {
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
    return n;
  };
  std::string text = v;
  v1::ArraySpec a;
  if (size_t pct = text.find('%'); pct != std::string::npos) {
    std::optional<uint32_t> m = number(text.substr(pct + 1));
    if (!m) return bad("'%" + text.substr(pct + 1) + "' is not a count");
    if (*m == 0) return bad("%0 would never run a task");
    a.set_max_running(*m);
    text.resize(pct);
  }
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    std::optional<uint32_t> step = number(text.substr(colon + 1));
    if (!step) return bad("':" + text.substr(colon + 1) + "' is not a step");
    if (*step == 0) return bad("step 0");
    a.set_step(*step);
    text.resize(colon);
  }
  const size_t dash = text.find('-');
  std::optional<uint32_t> first = number(text.substr(0, dash));
  std::optional<uint32_t> last = dash == std::string::npos ? first : number(text.substr(dash + 1));
  if (!first || !last) return bad("no range of indexes");
  if (*last < *first) return bad("the range is reversed");
  a.set_first(*first);
  a.set_last(*last);
  *s->mutable_array() = std::move(a);
  return absl::OkStatus();
}

// "25%" (or "25"): an MPS share of one GPU, 1 to 100 percent.
absl::Status SetGpuShare(const std::string& v, v1::JobSpec* s) {
  std::string digits = v;
  if (!digits.empty() && digits.back() == '%') digits.pop_back();
  uint32_t pct = 0;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(digits, &pct) || pct == 0 || pct > 100) {
    return absl::InvalidArgumentError("'" + v +
                                      "' is not a share of a GPU from 1% to 100% (e.g. 25%)");
  }
  s->set_gpu_share_percent(pct);
  return absl::OkStatus();
}

const std::map<std::string, Setter>& Fields() {
  static const auto* fields = new std::map<std::string, Setter>{
      {"name", Text(&v1::JobSpec::set_name)},
      {"tenant", Text(&v1::JobSpec::set_tenant)},
      {"priority_class", Text(&v1::JobSpec::set_priority_class)},
      {"nodes", Count(&v1::JobSpec::set_nodes)},
      {"ranks_per_node", Count(&v1::JobSpec::set_ranks_per_node)},
      {"gpus_per_node", Count(&v1::JobSpec::set_gpus_per_node)},
      {"cpus_per_node",
       Quantity(ParseCpuMillis, [](v1::JobSpec* s, uint64_t v) { s->set_cpu_millis_per_node(v); })},
      {"memory_per_node",
       Quantity(ParseBytes, [](v1::JobSpec* s, uint64_t v) { s->set_memory_bytes_per_node(v); })},
      {"gpu_memory",
       Quantity(ParseBytes, [](v1::JobSpec* s, uint64_t v) { s->set_gpu_memory_bytes(v); })},
      {"gpu_share", SetGpuShare},
      {"network_cap",
       Quantity(ParseMbps, [](v1::JobSpec* s, uint64_t v) { s->set_network_mbps(v); })},
      {"gpu_model", Text(&v1::JobSpec::set_gpu_model)},
      {"mig_profile", Text(&v1::JobSpec::set_mig_profile)},
      {"launch_mode",
       [](const std::string& v, v1::JobSpec* s) {
         if (v == "direct") return s->set_launch_mode(v1::LAUNCH_MODE_DIRECT), absl::OkStatus();
         if (v == "mpi") return s->set_launch_mode(v1::LAUNCH_MODE_MPI), absl::OkStatus();
         return absl::InvalidArgumentError("'" + v + "' is not a launch mode (direct or mpi)");
       }},
      {"restart_policy",
       [](const std::string& v, v1::JobSpec* s) {
         static const std::map<std::string, v1::RestartPolicy> kPolicies = {
             {"never", v1::RESTART_POLICY_NEVER},
             {"on-failure", v1::RESTART_POLICY_ON_FAILURE},
             {"always", v1::RESTART_POLICY_ALWAYS}};
         auto it = kPolicies.find(v);
         if (it == kPolicies.end()) {
           return absl::InvalidArgumentError(
               "'" + v + "' is not a restart policy (never, on-failure, always)");
         }
         s->set_restart_policy(it->second);
         return absl::OkStatus();
       }},
      {"max_restarts", Count(&v1::JobSpec::set_max_restarts)},
      {"pool", Text(&v1::JobSpec::set_pool)},
      {"working_dir", Text(&v1::JobSpec::set_working_dir)},
      {"checkpoint_dir", Text(&v1::JobSpec::set_checkpoint_dir)},
      {"grace", Quantity(ParseDurationSeconds,
                         [](v1::JobSpec* s, uint64_t v) {
                           s->set_grace_seconds(
                               static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)));
                         })},
      {"max_runtime", Seconds(&v1::JobSpec::set_max_runtime_seconds)},
      {"topology", SetTopology},
      {"after", AddDependencies},
      {"array", SetArray},
  };
  return *fields;
}

const std::map<std::string, std::string>& Aliases() {
  static const auto* aliases = new std::map<std::string, std::string>{{"class", "priority_class"},
                                                                      {"gpus", "gpus_per_node"},
                                                                      {"cpus", "cpus_per_node"},
                                                                      {"memory", "memory_per_node"},
                                                                      {"ranks", "ranks_per_node"}};
  return *aliases;
}

std::string Canonical(const std::string& key) {
  auto it = Aliases().find(key);
  return it == Aliases().end() ? key : it->second;
}

absl::Status Named(const std::string& shown, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), shown + ": " + std::string(s.message()));
}

absl::Status ApplyYamlNode(const std::string& key, const YAML::Node& value,
                           const std::string& shown, v1::JobSpec* spec) {
  std::string k = Canonical(key);
  if (k == "command") {
    if (value.IsScalar()) {
      return absl::InvalidArgumentError(shown +
                                        ": give the command as a list, e.g. "
                                        "[python, train.py, --lr, '0.1']");
    }
    if (!value.IsSequence()) return absl::InvalidArgumentError(shown + ": expected a list");
    for (const auto& arg : value) spec->add_command(arg.as<std::string>());
    return absl::OkStatus();
  }
  if (k == "env" || k == "node_selector") {
    if (!value.IsMap()) return absl::InvalidArgumentError(shown + ": expected a map");
    auto* map = k == "env" ? spec->mutable_env() : spec->mutable_node_selector();
    for (const auto& kv : value) (*map)[kv.first.as<std::string>()] = kv.second.as<std::string>();
    return absl::OkStatus();
  }
  if (k == "tolerations") {
    if (!value.IsSequence()) return absl::InvalidArgumentError(shown + ": expected a list");
    for (const auto& t : value) {
      v1::Toleration* tol = spec->add_tolerations();
      if (!t.IsMap() || !t["key"]) {
        return absl::InvalidArgumentError(shown + ": each entry needs a key");
      }
      tol->set_key(t["key"].as<std::string>());
      if (t["value"]) tol->set_value(t["value"].as<std::string>());
      if (t["effect"]) tol->set_effect(t["effect"].as<std::string>());
      tol->set_exists(!t["value"] ||
                      (t["operator"] && t["operator"].as<std::string>() == "Exists"));
    }
    return absl::OkStatus();
  }
  if (k == "after" && value.IsSequence()) {  // [ok:17, any:18]
    for (const auto& item : value) {
      if (!item.IsScalar())
        return absl::InvalidArgumentError(shown + ": expected KIND:JOB entries");
      BATON_RETURN_IF_ERROR(Named(shown, AddDependencies(item.as<std::string>(), spec)));
    }
    return absl::OkStatus();
  }
  if (k == "topology" && value.IsMap()) {  // {level: leaf, mode: required, wait: 10m}
    for (const auto& kv : value) {
      std::string key = kv.first.as<std::string>();
      if (key != "level" && key != "mode" && key != "wait") {
        return absl::InvalidArgumentError(shown + "." + key + ": unknown key (level, mode, wait)");
      }
      if (!kv.second.IsScalar()) {
        return absl::InvalidArgumentError(shown + "." + key + ": expected a single value");
      }
    }
    std::string text = value["level"] ? value["level"].as<std::string>() : "";
    if (value["mode"]) text += ":" + value["mode"].as<std::string>();
    if (value["wait"]) text += "@" + value["wait"].as<std::string>();
    return Named(shown, SetTopology(text, spec));
  }
  if (!Fields().count(k)) {
    return absl::InvalidArgumentError(shown + ": unknown key");
  }
  if (!value.IsScalar()) return absl::InvalidArgumentError(shown + ": expected a single value");
  return SetSpecField(k, value.as<std::string>(), shown, spec);
}

// Well-formed UTF-8 as proto3 strings require it: no overlong forms, no surrogates,
// nothing above U+10FFFF.
bool IsUtf8(const std::string& s) {
  static constexpr uint32_t kLeast[] = {0, 0x80, 0x800, 0x10000};
  for (size_t i = 0; i < s.size();) {
    const unsigned char lead = static_cast<unsigned char>(s[i]);
    const int more = lead < 0x80         ? 0
                     : lead >> 5 == 0x6  ? 1
                     : lead >> 4 == 0xe  ? 2
                     : lead >> 3 == 0x1e ? 3
                                         : -1;
    if (more < 0 || s.size() - i <= static_cast<size_t>(more)) return false;
    uint32_t cp = more == 0 ? lead : lead & (0x3f >> more);
    for (int k = 1; k <= more; ++k) {
      const unsigned char c = static_cast<unsigned char>(s[i + k]);
      if (c >> 6 != 0x2) return false;
      cp = cp << 6 | (c & 0x3f);
    }
    if (cp < kLeast[more] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += more + 1;
  }
  return true;
}

// Every string field of `m` and its messages (map entries too), by reflection so that
// fields added later are checked as well.
absl::Status CheckText(const google::protobuf::Message& m, const std::string& where) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string name = where.empty() ? f->name() : where + "." + f->name();
    const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      if (f->type() == FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& v = f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch)
                                                : r->GetStringReference(m, f, &scratch);
        if (!IsUtf8(v)) return absl::InvalidArgumentError(name + " is not UTF-8 text");
      } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
        BATON_RETURN_IF_ERROR(CheckText(
            f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), name));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSpecText(const v1::JobSpec& spec, const std::string& source) {
  return Named(source, CheckText(spec, ""));
}

absl::Status SetSpecField(const std::string& key, const std::string& value,
                          const std::string& shown, v1::JobSpec* spec) {
  auto it = Fields().find(Canonical(key));
  if (it == Fields().end()) return absl::InvalidArgumentError(shown + ": unknown field");
  return Named(shown, it->second(value, spec));
}

absl::Status AddKeyValue(const std::string& text, const std::string& shown,
                         google::protobuf::Map<std::string, std::string>* map) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(shown + ": '" + text + "' is not key=value");
  }
  (*map)[text.substr(0, eq)] = text.substr(eq + 1);
  return absl::OkStatus();
}

absl::StatusOr<v1::Toleration> ParseToleration(const std::string& text, const std::string& shown) {
  v1::Toleration t;
  std::string rest = text;
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos) {
    t.set_effect(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  size_t eq = rest.find('=');
  t.set_key(rest.substr(0, eq));
  if (eq == std::string::npos) {
    t.set_exists(true);
  } else {
    t.set_value(rest.substr(eq + 1));
  }
  if (t.key().empty()) {
    return absl::InvalidArgumentError(shown + ": '" + text + "' is not key[=value][:effect]");
  }
  return t;
}

absl::StatusOr<v1::JobSpec> SpecFromYaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(source + ": malformed YAML at line " +
                                      std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) return absl::InvalidArgumentError(source + ": expected a map of job fields");
  v1::JobSpec spec;
  try {
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      absl::Status s = ApplyYamlNode(key, kv.second, source + ": " + key, &spec);
      if (!s.ok()) return s;
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(source + ": line " + std::to_string(e.mark.line + 1) + ": " +
                                      e.msg);
  }
  BATON_RETURN_IF_ERROR(CheckSpecText(spec, source));
  return spec;
}

}  // namespace baton::cli
