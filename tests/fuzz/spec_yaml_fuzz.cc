// The job spec YAML (`baton submit -f job.yaml`, launcher/cli/spec_input.h). A file is
// either refused with InvalidArgument naming it, or yields a JobSpec that (1) survives
// the wire (what the CLI sends, the coordinator must parse back equal: proto3 refuses
// strings that are not UTF-8) and (2) written back as YAML with the same keys, reads back
// equal.
#include <google/protobuf/util/message_differencer.h>
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/cli/spec_input.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using baton::v1::JobSpec;
using google::protobuf::util::MessageDifferencer;

YAML::Emitter& Key(YAML::Emitter& out, const char* key) {
  return out << YAML::Key << key << YAML::Value;
}

void Text(YAML::Emitter& out, const char* key, const std::string& value) {
  if (!value.empty()) Key(out, key) << YAML::DoubleQuoted << value;
}

void Number(YAML::Emitter& out, const char* key, uint64_t value, const char* unit = "") {
  if (value != 0) Key(out, key) << std::to_string(value) + unit;
}

void Map(YAML::Emitter& out, const char* key,
         const google::protobuf::Map<std::string, std::string>& map) {
  if (map.empty()) return;
  Key(out, key) << YAML::BeginMap;
  for (const auto& [k, v] : map) {
    // Explicit ("? ") keys: a simple key is limited to 1024 characters, and an escaped
    // key can pass that.
    out << YAML::Key << YAML::LongKey << YAML::DoubleQuoted << k << YAML::Value
        << YAML::DoubleQuoted << v;
  }
  out << YAML::EndMap;
}

void Tolerations(YAML::Emitter& out, const JobSpec& s) {
  if (s.tolerations().empty()) return;
  Key(out, "tolerations") << YAML::BeginSeq;
  for (const auto& t : s.tolerations()) {
    out << YAML::BeginMap;
    out << YAML::Key << "key" << YAML::Value << YAML::DoubleQuoted << t.key();
    if (!t.exists() || !t.value().empty()) {
      out << YAML::Key << "value" << YAML::Value << YAML::DoubleQuoted << t.value();
    }
    if (t.exists()) out << YAML::Key << "operator" << YAML::Value << "Exists";
    if (!t.effect().empty()) {
      out << YAML::Key << "effect" << YAML::Value << YAML::DoubleQuoted << t.effect();
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

// topology as its map form, after as a list of KIND:JOB[_TASK], array as FIRST-LAST[:STEP][%MAX].
void Scheduling(YAML::Emitter& out, const JobSpec& s) {
  if (s.has_topology()) {
    const baton::v1::TopologyRequest& t = s.topology();
    Key(out, "topology") << YAML::BeginMap;
    out << YAML::Key << "level" << YAML::Value << YAML::DoubleQuoted << t.level();
    if (t.required()) out << YAML::Key << "mode" << YAML::Value << "required";
    if (t.wait_seconds() != 0) {
      out << YAML::Key << "wait" << YAML::Value << std::to_string(t.wait_seconds()) + "s";
    }
    out << YAML::EndMap;
  }
  if (!s.after().empty()) {
    static const char* kinds[] = {"", "ok", "any", "notok"};
    Key(out, "after") << YAML::BeginSeq;
    for (const auto& d : s.after()) {
      std::string item = std::string(kinds[d.kind()]) + ":" + std::to_string(d.job());
      if (d.has_task()) item += "_" + std::to_string(d.task());
      out << item;
    }
    out << YAML::EndSeq;
  }
  if (s.has_array()) {
    const baton::v1::ArraySpec& a = s.array();
    std::string text = std::to_string(a.first()) + "-" + std::to_string(a.last());
    if (a.has_step()) text += ":" + std::to_string(a.step());
    if (a.has_max_running()) text += "%" + std::to_string(a.max_running());
    Key(out, "array") << text;
  }
}

// The spec as a job.yaml, every field under its canonical key.
std::string ToYaml(const JobSpec& s) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  Text(out, "name", s.name());
  Text(out, "tenant", s.tenant());
  Text(out, "priority_class", s.priority_class());
  Number(out, "nodes", s.nodes());
  Number(out, "ranks_per_node", s.ranks_per_node());
  Number(out, "gpus_per_node", s.gpus_per_node());
  Number(out, "cpus_per_node", s.cpu_millis_per_node(), "m");
  Number(out, "memory_per_node", s.memory_bytes_per_node());
  Number(out, "gpu_memory", s.gpu_memory_bytes());
  if (s.gpu_share_percent() > 0)
    Key(out, "gpu_share") << std::to_string(s.gpu_share_percent()) + "%";
  Number(out, "network_cap", s.network_mbps(), "mbit");
  Text(out, "gpu_model", s.gpu_model());
  Text(out, "mig_profile", s.mig_profile());
  if (s.launch_mode() == baton::v1::LAUNCH_MODE_DIRECT) Key(out, "launch_mode") << "direct";
  if (s.launch_mode() == baton::v1::LAUNCH_MODE_MPI) Key(out, "launch_mode") << "mpi";
  const char* policies[] = {nullptr, "never", "on-failure", "always"};
  if (s.restart_policy() > 0 && s.restart_policy() < 4) {
    Key(out, "restart_policy") << policies[s.restart_policy()];
  }
  // Present even when 0: an explicit 0 means "no retries", unset the policy's default.
  if (s.has_max_restarts()) Key(out, "max_restarts") << std::to_string(s.max_restarts());
  Text(out, "pool", s.pool());
  Text(out, "working_dir", s.working_dir());
  Text(out, "checkpoint_dir", s.checkpoint_dir());
  Number(out, "grace", s.grace_seconds(), "s");
  Number(out, "max_runtime", s.max_runtime_seconds(), "s");
  Scheduling(out, s);
  Map(out, "env", s.env());
  Map(out, "node_selector", s.node_selector());
  Tolerations(out, s);
  if (!s.command().empty()) {
    Key(out, "command") << YAML::BeginSeq;
    for (const auto& arg : s.command()) out << YAML::DoubleQuoted << arg;
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<JobSpec> spec = baton::cli::SpecFromYaml(text, "job.yaml");
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument,
               spec.status().ToString());
    FUZZ_CHECK(spec.status().message().substr(0, 9) == "job.yaml:", spec.status().ToString());
    return 0;
  }
  std::string wire;
  FUZZ_CHECK(spec->SerializeToString(&wire), "cannot serialize");
  JobSpec received;
  FUZZ_CHECK(received.ParseFromString(wire), "the coordinator could not parse the spec sent");
  FUZZ_CHECK(MessageDifferencer::Equals(received, *spec), "the wire changed the spec");

  const std::string yaml = ToYaml(*spec);
  absl::StatusOr<JobSpec> again = baton::cli::SpecFromYaml(yaml, "job.yaml");
  FUZZ_CHECK(again.ok(), "its own YAML is refused: " + again.status().ToString() + "\n" + yaml);
  FUZZ_CHECK(MessageDifferencer::Equals(*again, *spec),
             "YAML round trip changed the spec:\n" + yaml + "\n" + again->DebugString());
  return 0;
}
