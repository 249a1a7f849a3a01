#include "launcher/cli/spec_input.h"

#include <google/protobuf/util/message_differencer.h>

#include <functional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::cli {
namespace {

using google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

constexpr char kFullSpec[] = R"(
name: llama-ft
tenant: vision
class: research
nodes: 2
ranks: 8
gpus: 8
cpus: 500m
memory: 16Gi
gpu_memory: 40Gi
network_cap: 1gbit
gpu_model: H200
mig_profile: 1g.18gb
launch_mode: mpi
restart_policy: on-failure
max_restarts: 3
pool: batch
working_dir: /home/alice/llama
checkpoint_dir: /shared/ckpt/llama
grace: 90s
max_runtime: 2h
env:
  NCCL_DEBUG: INFO
  LR: "0.1"
node_selector:
  zone: b
  ib: "true"
tolerations:
  - {key: gpu-maint, value: "yes", effect: NoSchedule}
  - key: dedicated
command: [torchrun, train.py, --lr, "0.1", --name, "with space"]
)";

v1::JobSpec ExpectedFullSpec() {
  v1::JobSpec s;
  s.set_name("llama-ft");
  s.set_tenant("vision");
  s.set_priority_class("research");
  s.set_nodes(2);
  s.set_ranks_per_node(8);
  s.set_gpus_per_node(8);
  s.set_cpu_millis_per_node(500);
  s.set_memory_bytes_per_node(16ull << 30);
  s.set_gpu_memory_bytes(40ull << 30);
  s.set_network_mbps(1000);
  s.set_gpu_model("H200");
  s.set_mig_profile("1g.18gb");
  s.set_launch_mode(v1::LAUNCH_MODE_MPI);
  s.set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
  s.set_max_restarts(3);
  s.set_pool("batch");
  s.set_working_dir("/home/alice/llama");
  s.set_checkpoint_dir("/shared/ckpt/llama");
  s.set_grace_seconds(90);
  s.set_max_runtime_seconds(7200);
  (*s.mutable_env())["NCCL_DEBUG"] = "INFO";
  (*s.mutable_env())["LR"] = "0.1";
  (*s.mutable_node_selector())["zone"] = "b";
  (*s.mutable_node_selector())["ib"] = "true";
  v1::Toleration* t = s.add_tolerations();
  t->set_key("gpu-maint");
  t->set_value("yes");
  t->set_effect("NoSchedule");
  t = s.add_tolerations();
  t->set_key("dedicated");
  t->set_exists(true);
  for (const char* arg : {"torchrun", "train.py", "--lr", "0.1", "--name", "with space"}) {
    s.add_command(arg);
  }
  return s;
}

TEST(SpecFromYaml, ReadsEveryKeyOfAFullSpec) {
  auto spec = SpecFromYaml(kFullSpec, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(ExpectedFullSpec(), *spec)) << diff;
}

TEST(SpecFromYaml, CanonicalKeysMeanTheSameAsAliases) {
  auto aliases = SpecFromYaml("class: a\ngpus: 2\ncpus: 4\nmemory: 1Gi\nranks: 3\n", "x");
  auto canonical = SpecFromYaml(
      "priority_class: a\ngpus_per_node: 2\ncpus_per_node: 4\nmemory_per_node: 1Gi\n"
      "ranks_per_node: 3\n",
      "x");
  ASSERT_TRUE(aliases.ok() && canonical.ok());
  EXPECT_TRUE(MessageDifferencer::Equals(*aliases, *canonical));
  EXPECT_EQ(aliases->cpu_millis_per_node(), 4000u);
}

TEST(SpecFromYaml, TolerationWithValueAndExistsOperator) {
  auto spec = SpecFromYaml("tolerations:\n  - {key: k, value: v, operator: Exists}\n", "x");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->tolerations_size(), 1);
  EXPECT_EQ(spec->tolerations(0).value(), "v");
  EXPECT_TRUE(spec->tolerations(0).exists());
  EXPECT_EQ(spec->tolerations(0).effect(), "");
}

TEST(SpecFromYaml, MalformedYamlNamesTheSourceAndLine) {
  auto spec = SpecFromYaml("name: x\nnodes: 2\ncommand: [a, b\ngpus: 1\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(spec.status()), HasSubstr("job.yaml"));
  EXPECT_THAT(Message(spec.status()), HasSubstr("line "));

  auto tab = SpecFromYaml("name: x\nnodes: 2\nenv:\n  A: 1\n B: 2\n", "job.yaml");
  ASSERT_FALSE(tab.ok());
  EXPECT_THAT(Message(tab.status()), HasSubstr("line 5"));
}

TEST(SpecFromYaml, UnknownKeyIsNamed) {
  auto spec = SpecFromYaml("name: x\ngpuz: 2\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(spec.status()), HasSubstr("job.yaml: gpuz"));
  EXPECT_THAT(Message(spec.status()), HasSubstr("unknown key"));
}

TEST(SpecFromYaml, CommandAsAScalarAsksForAList) {
  auto spec = SpecFromYaml("command: python train.py --lr 0.1\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(Message(spec.status()), HasSubstr("job.yaml: command"));
  EXPECT_THAT(Message(spec.status()), HasSubstr("list"));
}

TEST(SpecFromYaml, NegativeGpusNamesTheKeyAndValue) {
  auto spec = SpecFromYaml("gpus: -1\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(spec.status()), HasSubstr("job.yaml: gpus"));
  EXPECT_THAT(Message(spec.status()), HasSubstr("-1"));
}

TEST(SpecFromYaml, WrongShapesAreErrorsNamingTheKey) {
  struct Case {
    const char* yaml;
    const char* key;
  };
  for (const Case& c :
       {Case{"env: [A, B]\n", "env"}, Case{"node_selector: zone\n", "node_selector"},
        Case{"tolerations: {key: a}\n", "tolerations"},
        Case{"tolerations:\n  - {value: a}\n", "tolerations"}, Case{"nodes: [1, 2]\n", "nodes"},
        Case{"command: {a: b}\n", "command"}, Case{"memory: lots\n", "memory"},
        Case{"nodes: 1.5\n", "nodes"}}) {
    auto spec = SpecFromYaml(c.yaml, "job.yaml");
    ASSERT_FALSE(spec.ok()) << c.yaml;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(Message(spec.status()), HasSubstr(std::string("job.yaml: ") + c.key)) << c.yaml;
  }
}

TEST(SpecFromYaml, TopLevelMustBeAMap) {
  for (const char* text : {"", "- a\n- b\n", "just text\n"}) {
    auto spec = SpecFromYaml(text, "job.yaml");
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_THAT(Message(spec.status()), HasSubstr("job.yaml")) << text;
  }
}

TEST(SpecFromYaml, NestedValueWhereAStringIsExpectedNamesTheLine) {
  auto spec = SpecFromYaml("name: x\nenv:\n  A: [1, 2]\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(Message(spec.status()), HasSubstr("line 3"));
}

// One check per field the flags can set.
struct FieldCase {
  std::string key;
  std::string value;
  std::function<bool(const v1::JobSpec&)> check;
};

// Found by tests/fuzz (spec_yaml): proto3 strings must be UTF-8, so such a spec used to
// reach the coordinator as a message it could not parse.
TEST(SpecFromYaml, TextThatIsNotUtf8IsRefusedNamingTheField) {
  for (const std::string bad : {"name: nagp\xeeu\n", "command: [python, \"\xc0\xaf\"]\n",
                                "env: {A: \"\xed\xa0\x80\"}\n", "pool: \xf4\x90\x80\x80\n"}) {
    auto spec = SpecFromYaml(bad, "job.yaml");
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(spec.status()), HasSubstr("is not UTF-8 text"));
  }
  auto env = SpecFromYaml("env: {A: \"\xed\xa0\x80\"}\n", "job.yaml");
  EXPECT_THAT(Message(env.status()), HasSubstr("job.yaml: env.value"));
  auto fine = SpecFromYaml("name: caf\xc3\xa9\ncommand: [\"\xf0\x9f\x9a\x80\"]\n", "job.yaml");
  EXPECT_TRUE(fine.ok()) << fine.status();
}

TEST(SetSpecField, SetsEveryScalarField) {
  const std::vector<FieldCase> cases = {
      {"name", "train", [](auto& s) { return s.name() == "train"; }},
      {"tenant", "nlp", [](auto& s) { return s.tenant() == "nlp"; }},
      {"class", "urgent", [](auto& s) { return s.priority_class() == "urgent"; }},
      {"priority_class", "batch", [](auto& s) { return s.priority_class() == "batch"; }},
      {"nodes", "4", [](auto& s) { return s.nodes() == 4; }},
      {"ranks", "8", [](auto& s) { return s.ranks_per_node() == 8; }},
      {"ranks_per_node", "2", [](auto& s) { return s.ranks_per_node() == 2; }},
      {"gpus", "8", [](auto& s) { return s.gpus_per_node() == 8; }},
      {"gpus_per_node", "0", [](auto& s) { return s.gpus_per_node() == 0; }},
      {"cpus", "500m", [](auto& s) { return s.cpu_millis_per_node() == 500; }},
      {"cpus_per_node", "2.5", [](auto& s) { return s.cpu_millis_per_node() == 2500; }},
      {"memory", "16Gi", [](auto& s) { return s.memory_bytes_per_node() == (16ull << 30); }},
      {"memory_per_node", "512M",
       [](auto& s) { return s.memory_bytes_per_node() == 512'000'000ull; }},
      {"gpu_memory", "20Gi", [](auto& s) { return s.gpu_memory_bytes() == (20ull << 30); }},
      {"gpu_share", "25%", [](auto& s) { return s.gpu_share_percent() == 25; }},
      {"gpu_share", "100", [](auto& s) { return s.gpu_share_percent() == 100; }},
      {"network_cap", "1gbit", [](auto& s) { return s.network_mbps() == 1000; }},
      {"network_cap", "100mbit", [](auto& s) { return s.network_mbps() == 100; }},
      {"gpu_model", "H200", [](auto& s) { return s.gpu_model() == "H200"; }},
      {"mig_profile", "1g.18gb", [](auto& s) { return s.mig_profile() == "1g.18gb"; }},
      {"launch_mode", "direct", [](auto& s) { return s.launch_mode() == v1::LAUNCH_MODE_DIRECT; }},
      {"launch_mode", "mpi", [](auto& s) { return s.launch_mode() == v1::LAUNCH_MODE_MPI; }},
      {"restart_policy", "never",
       [](auto& s) { return s.restart_policy() == v1::RESTART_POLICY_NEVER; }},
      {"restart_policy", "on-failure",
       [](auto& s) { return s.restart_policy() == v1::RESTART_POLICY_ON_FAILURE; }},
      {"restart_policy", "always",
       [](auto& s) { return s.restart_policy() == v1::RESTART_POLICY_ALWAYS; }},
      {"max_restarts", "5", [](auto& s) { return s.max_restarts() == 5; }},
      {"max_restarts", "0", [](auto& s) { return s.has_max_restarts() && s.max_restarts() == 0; }},
      {"pool", "batch", [](auto& s) { return s.pool() == "batch"; }},
      {"working_dir", "/w", [](auto& s) { return s.working_dir() == "/w"; }},
      {"checkpoint_dir", "/c", [](auto& s) { return s.checkpoint_dir() == "/c"; }},
      {"grace", "90s", [](auto& s) { return s.grace_seconds() == 90; }},
      {"grace", "2m", [](auto& s) { return s.grace_seconds() == 120; }},
      {"max_runtime", "1d", [](auto& s) { return s.max_runtime_seconds() == 86400; }},
  };
  for (const auto& c : cases) {
    v1::JobSpec spec;
    absl::Status s = SetSpecField(c.key, c.value, "--" + c.key, &spec);
    ASSERT_TRUE(s.ok()) << c.key << "=" << c.value << ": " << s;
    EXPECT_TRUE(c.check(spec)) << c.key << "=" << c.value << " gave " << spec.ShortDebugString();
  }
}

TEST(SetSpecField, BadValuesNameTheFlagAndTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gpus", "-1"},          {"nodes", "two"},        {"nodes", ""},
      {"cpus", "lots"},        {"memory", "16Gx"},      {"network_cap", "10gbps"},
      {"grace", "forever"},    {"launch_mode", "ssh"},  {"restart_policy", "sometimes"},
      {"max_restarts", "1e3"}, {"nodes", "4294967296"}, {"gpu_share", "0%"},
      {"gpu_share", "101%"},   {"gpu_share", "2.5%"},   {"gpu_share", "a quarter"}};
  for (const auto& [key, value] : cases) {
    v1::JobSpec spec;
    absl::Status s = SetSpecField(key, value, "--" + key, &spec);
    ASSERT_FALSE(s.ok()) << key << "=" << value;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_THAT(Message(s), HasSubstr("--" + key + ":")) << key;
    if (!value.empty()) {
      EXPECT_THAT(Message(s), HasSubstr(value)) << key;
    }
  }
}

TEST(SetSpecField, UnknownFieldIsNamed) {
  v1::JobSpec spec;
  absl::Status s = SetSpecField("colour", "blue", "--colour", &spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("--colour"));
  // Structured keys are not scalar fields.
  EXPECT_FALSE(SetSpecField("command", "python", "--command", &spec).ok());
  EXPECT_FALSE(SetSpecField("env", "A=1", "--env", &spec).ok());
}

TEST(ParseToleration, KeyValueAndEffect) {
  auto t = ParseToleration("gpu-maint=yes:NoSchedule", "--toleration");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->key(), "gpu-maint");
  EXPECT_EQ(t->value(), "yes");
  EXPECT_EQ(t->effect(), "NoSchedule");
  EXPECT_FALSE(t->exists());
}

TEST(ParseToleration, KeyAloneToleratesAnyValueAndEffect) {
  auto t = ParseToleration("dedicated", "--toleration");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->key(), "dedicated");
  EXPECT_TRUE(t->exists());
  EXPECT_EQ(t->value(), "");
  EXPECT_EQ(t->effect(), "");
}

TEST(ParseToleration, KeyWithEffectOnly) {
  auto t = ParseToleration("dedicated:NoExecute", "--toleration");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->key(), "dedicated");
  EXPECT_TRUE(t->exists());
  EXPECT_EQ(t->effect(), "NoExecute");
}

TEST(ParseToleration, KeyWithValueNoEffect) {
  auto t = ParseToleration("zone=b", "--toleration");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->key(), "zone");
  EXPECT_EQ(t->value(), "b");
  EXPECT_FALSE(t->exists());
  EXPECT_EQ(t->effect(), "");
}

TEST(ParseToleration, MissingKeyIsAnErrorShowingTheForm) {
  for (const std::string bad : {"", "=v", ":NoSchedule", "=v:NoSchedule"}) {
    auto t = ParseToleration(bad, "--toleration");
    ASSERT_FALSE(t.ok()) << "'" << bad << "'";
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(t.status()), HasSubstr("--toleration"));
    EXPECT_THAT(Message(t.status()), HasSubstr("key[=value][:effect]"));
  }
}

TEST(AddKeyValue, AddsAndOverwrites) {
  google::protobuf::Map<std::string, std::string> map;
  ASSERT_TRUE(AddKeyValue("zone=b", "--selector", &map).ok());
  ASSERT_TRUE(AddKeyValue("url=a=b", "--selector", &map).ok());
  ASSERT_TRUE(AddKeyValue("empty=", "--selector", &map).ok());
  ASSERT_TRUE(AddKeyValue("zone=c", "--selector", &map).ok());
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(map["zone"], "c");
  EXPECT_EQ(map["url"], "a=b");
  EXPECT_EQ(map["empty"], "");
}

TEST(AddKeyValue, TextWithoutKeyOrEqualsIsAnErrorNamingIt) {
  google::protobuf::Map<std::string, std::string> map;
  for (const std::string bad : {"zone", "=b", ""}) {
    absl::Status s = AddKeyValue(bad, "--env", &map);
    ASSERT_FALSE(s.ok()) << "'" << bad << "'";
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(s), HasSubstr("--env: '" + bad + "'"));
  }
  EXPECT_TRUE(map.empty());
}

// Each text, given to --FIELD, is refused naming the flag and saying `says`.
void ExpectRefused(const std::string& field, std::vector<std::pair<std::string, std::string>> bad) {
  for (const auto& [text, says] : bad) {
    v1::JobSpec spec;
    absl::Status s = SetSpecField(field, text, "--" + field, &spec);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(Message(s), HasSubstr("--" + field + ": ")) << text;
    EXPECT_THAT(Message(s), HasSubstr(says)) << text;
  }
}

TEST(SpecFromYaml, TopologyAsAMapOrAsTheFlagsText) {
  auto map = SpecFromYaml("topology: {level: leaf, mode: required, wait: 10m}\n", "job.yaml");
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->topology().level(), "leaf");
  EXPECT_TRUE(map->topology().required());
  EXPECT_EQ(map->topology().wait_seconds(), 600u);
  auto text = SpecFromYaml("topology: leaf:required@10m\n", "job.yaml");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(MessageDifferencer::Equals(map->topology(), text->topology()));
  v1::JobSpec flag;
  ASSERT_TRUE(SetSpecField("topology", "spine", "--topology", &flag).ok());
  EXPECT_EQ(flag.topology().level(), "spine");
  EXPECT_FALSE(flag.topology().required());
  EXPECT_EQ(flag.topology().wait_seconds(), 0u);

  ExpectRefused("topology", {{"leaf:strict", "'strict' is not a topology mode"},
                             {":required", "names no level"},
                             {"leaf@soon", "'soon' is not a wait"}});
  auto unknown = SpecFromYaml("topology: {level: leaf, switches: 1}\n", "job.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(Message(unknown.status()), HasSubstr("topology.switches: unknown key"));
}

TEST(SpecFromYaml, DependenciesAsTheFlagsTextOrAList) {
  v1::JobSpec flag;
  ASSERT_TRUE(SetSpecField("after", "ok:17,any:18:19,afternotok:20", "--after", &flag).ok());
  ASSERT_EQ(flag.after_size(), 4);
  EXPECT_EQ(flag.after(0).kind(), v1::DEPENDENCY_KIND_OK);
  EXPECT_EQ(flag.after(0).job(), 17u);
  EXPECT_EQ(flag.after(1).kind(), v1::DEPENDENCY_KIND_ANY);
  EXPECT_EQ(flag.after(2).kind(), v1::DEPENDENCY_KIND_ANY);
  EXPECT_EQ(flag.after(2).job(), 19u);
  EXPECT_EQ(flag.after(3).kind(), v1::DEPENDENCY_KIND_NOTOK);
  EXPECT_EQ(flag.after(3).job(), 20u);
  auto list = SpecFromYaml("after: [ok:17, 'any:18:19', afternotok:20]\n", "job.yaml");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->after_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(list->after(i), flag.after(i)));
  }

  ExpectRefused("after", {{"17", "'17' is not a dependency: KIND:JOB"},
                          {"after:17", "'after:17' is not a dependency"},
                          {"ok:", "'ok:': "},
                          {"ok:0", "'ok:0': "},
                          {"ok:17,,any:3", "'' is not a dependency"},
                          {"ok:-4", "'ok:-4': "}});
  v1::JobSpec tasks;
  ASSERT_TRUE(SetSpecField("after", "ok:17_3,any:18_*", "--after", &tasks).ok());
  ASSERT_EQ(tasks.after_size(), 2);
  EXPECT_EQ(tasks.after(0).job(), 17u);
  EXPECT_EQ(tasks.after(0).task(), 3u) << "task 3 of array 17";
  EXPECT_EQ(tasks.after(1).job(), 18u);
  EXPECT_FALSE(tasks.after(1).has_task()) << "18_* is the whole array, as 18";
  ExpectRefused("after", {{"ok:17_x", "'x' is not a task index"}, {"ok:17_", "'' is not a task"}});
  auto nested = SpecFromYaml("after: [{ok: 17}]\n", "job.yaml");
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(Message(nested.status()), HasSubstr("job.yaml: after: expected KIND:JOB entries"));
}

}  // namespace
}  // namespace baton::cli
