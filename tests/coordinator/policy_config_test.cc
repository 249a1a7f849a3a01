// The policy file: the example parses to what it says, an empty file is the default
// policy (today's five classes), and a bad file is refused whole with every problem named.
#include "coordinator/policy_config.h"

#include <limits>

#include "gtest/gtest.h"

namespace baton {
namespace {

std::string Why(const absl::Status& s) { return std::string(s.message()); }

TEST(PolicyConfig, DefaultsAreTodaysClasses) {
  Policy p = Policy::Default();
  ASSERT_EQ(p.classes.size(), 5u);
  const char* names[] = {"inference-critical", "inference", "labeling", "training", "experiment"};
  int32_t values[] = {1000, 900, 500, 300, 100};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(p.classes[i].name, names[i]);
    EXPECT_EQ(p.classes[i].value, values[i]);
    EXPECT_EQ(p.classes[i].service, i < 2);
    EXPECT_EQ(p.classes[i].preemptible, i >= 2);
  }
  EXPECT_EQ(p.default_class, "training");
  EXPECT_TRUE(p.tenants.empty());
  EXPECT_TRUE(ValidatePolicy(p).ok());
}

TEST(PolicyConfig, EmptyFileIsTheDefaultPolicy) {
  absl::StatusOr<Policy> p = ParsePolicy("");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->classes.size(), 5u);
  EXPECT_EQ(p->Find("training")->min_runtime_s, Policy::Default().Find("training")->min_runtime_s);
}

TEST(PolicyConfig, ExampleFileParsesToWhatItSays) {
  absl::StatusOr<Policy> p = LoadPolicyFile(BATON_SOURCE_DIR "/scripts/policy.example.yaml");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->tenants.size(), 3u);
  const TenantPolicy& vision = p->Tenant("vision");
  EXPECT_EQ(vision.weight, 2);
  ASSERT_TRUE(vision.nominal.has_value());
  EXPECT_EQ(vision.nominal->gpus, 64u);
  EXPECT_EQ(vision.nominal->cpu_millis, 512'000u);
  EXPECT_EQ(vision.nominal->memory_bytes, 4ull << 40);
  EXPECT_EQ(vision.borrowing_limit.gpus, 32u);
  EXPECT_EQ(vision.borrowing_limit.cpu_millis, sched::kUnlimited.cpu_millis);
  EXPECT_EQ(vision.lending_limit.gpus, 19u);  // 30% of 64, rounded down
  EXPECT_EQ(p->Tenant("serving").lending_limit.gpus, 0u);
  EXPECT_FALSE(p->Tenant("someone-else").nominal.has_value());
  EXPECT_EQ(p->Find("training")->min_runtime_s, 600);
  EXPECT_EQ(p->Find("training")->cooldown_base_s, 120);
  EXPECT_FALSE(p->Find("experiment")->may_preempt);
  EXPECT_FALSE(p->Find("inference")->preemptible);
  EXPECT_EQ(p->fair_share_half_life_s, 24 * 3600);
  EXPECT_EQ(p->job_limits.max_gpus_per_job, 256u);
  EXPECT_EQ(p->job_limits.min_cpu_millis_per_rank, 500u);
  ASSERT_EQ(p->pools.size(), 1u);
  EXPECT_EQ(p->pools[0].classes.size(), 2u);
  EXPECT_EQ(p->StopAfterDisconnectS("training"), 300);
  EXPECT_EQ(p->StopAfterDisconnectS("experiment"), 60);
  EXPECT_EQ(p->StopAfterDisconnectS("inference"), Policy::kNever);
  EXPECT_TRUE(p->Find("inference-critical")->evicts_within_min_runtime);
  EXPECT_FALSE(p->Find("inference")->evicts_within_min_runtime);
  EXPECT_EQ(p->ServiceRestartFor("inference").backoff_cap_s, 60);
  EXPECT_EQ(p->ServiceRestartFor("inference-critical").backoff_cap_s, 10);
  EXPECT_EQ(p->ServiceRestartFor("inference-critical").backoff_s, 1);
  EXPECT_EQ(p->ServiceRestartFor("inference-critical").healthy_after_s, 600);
}

TEST(PolicyConfig, OutageAndRestartRulesArePerClassAndChecked) {
  absl::StatusOr<Policy> p = ParsePolicy(R"(
defaults: {class: batch, stop_after_disconnect: 2m, restart_backoff: 2s, restart_backoff_cap: 30s, healthy_after: 5m}
classes:
  - {name: serve, value: 900, service: true, restart_backoff: 5s, healthy_after: 1h}
  - {name: batch, value: 300}
  - {name: pinned, value: 200, stop_after_disconnect: never}
)");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->StopAfterDisconnectS("batch"), 120);
  EXPECT_EQ(p->StopAfterDisconnectS("serve"), Policy::kNever) << "services: never by default";
  EXPECT_EQ(p->StopAfterDisconnectS("pinned"), Policy::kNever);
  const Policy::ServiceRestart serve = p->ServiceRestartFor("serve");
  EXPECT_EQ(serve.backoff_s, 5);
  EXPECT_EQ(serve.backoff_cap_s, 30) << "the default where the class says nothing";
  EXPECT_EQ(serve.healthy_after_s, 3600);
  EXPECT_EQ(p->ServiceRestartFor("batch").backoff_s, 2);
  EXPECT_EQ(serve.Backoff(1), absl::Seconds(5));
  EXPECT_EQ(serve.Backoff(2), absl::Seconds(10));
  EXPECT_EQ(serve.Backoff(3), absl::Seconds(20));
  EXPECT_EQ(serve.Backoff(4), absl::Seconds(30)) << "capped";
  EXPECT_EQ(serve.Backoff(4000), absl::Seconds(30));
  // Doubling the largest values the policy accepts saturates at the cap, never wraps.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const Policy::ServiceRestart huge{.backoff_s = kMax / 2, .backoff_cap_s = kMax};
  EXPECT_EQ(huge.Backoff(1), absl::Seconds(kMax / 2));
  EXPECT_EQ(huge.Backoff(60), absl::Seconds(kMax));

  absl::StatusOr<Policy> bad = ParsePolicy(R"(
defaults: {class: batch, stop_after_disconnect: 0s}
classes:
  - {name: serve, value: 900, service: true, restart_backoff: 2m, restart_backoff_cap: 1m}
  - {name: batch, value: 300, stop_after_disconnect: 0s, healthy_after: soon}
)");
  ASSERT_FALSE(bad.ok());
  const std::string why = Why(bad.status());
  for (const char* problem : {"defaults.stop_after_disconnect: must be positive",
                              "classes (batch).stop_after_disconnect: must be positive or never",
                              "classes (serve).restart_backoff: must be positive and at most",
                              "classes[1].healthy_after"}) {
    EXPECT_NE(why.find(problem), std::string::npos) << problem << " missing from:\n" << why;
  }
}

TEST(PolicyConfig, RefusesTheWholeFileNamingEveryProblem) {
  absl::StatusOr<Policy> p = ParsePolicy(R"(
defaults: {class: nightly}
classes:
  - {name: high, value: 10, service: true, preemptible: true}
  - {name: low, value: 10, cooldown: soon}
  - {name: low, value: 5, colour: blue}
tenants:
  - {name: a, weight: 0, nominal: {gpus: 4}, lending_limit: {gpus: 8}}
  - {weight: 1, lending_limit: 30%}
pools:
  - {name: inference, classes: [inference]}
job_limits: {max_gpus_per_node: 16, max_gpus_per_job: 8}
)");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  std::string why = Why(p.status());
  for (const char* problem :
       {"'soon' is not a valid quantity", "unknown key 'colour'", "a tenant needs a name",
        "a percentage needs a nominal quota", "value 10 is taken", "'nightly' is not a class",
        "weight must be above 0", "'inference' is not a class"}) {
    EXPECT_NE(why.find(problem), std::string::npos) << problem << " missing from:\n" << why;
  }
}

// 50000 days is 4.32e9 s: past grace's 32 bits it would have wrapped to 25 s and passed
// every later check.
TEST(PolicyConfig, AValueTooLargeForItsFieldIsRefusedNotWrapped) {
  absl::StatusOr<Policy> p = ParsePolicy("defaults: {grace: 50000d, max_grace: 50000d}\n");
  ASSERT_FALSE(p.ok());
  std::string why = Why(p.status());
  EXPECT_NE(why.find("defaults.grace: '50000d' is too large (at most 4294967295)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("defaults.max_grace"), std::string::npos) << why;
  auto fits = ParsePolicy("defaults: {grace: 49000d, max_grace: 49000d}\n");
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->default_grace_seconds, 49000u * 86400);
}

TEST(PolicyConfig, RefusesAWellFormedButInconsistentPolicy) {
  absl::StatusOr<Policy> p = ParsePolicy(R"(
defaults: {class: nightly}
classes:
  - {name: high, value: 10, service: true, preemptible: true}
  - {name: low, value: 10}
  - {name: low, value: 5}
tenants:
  - {name: a, weight: 0, nominal: {gpus: 4}, lending_limit: {gpus: 8}}
pools:
  - {name: inference, classes: [inference]}
job_limits: {max_gpus_per_node: 16, max_gpus_per_job: 8}
)");
  ASSERT_FALSE(p.ok());
  std::string why = Why(p.status());
  for (const char* problem :
       {"value 10 is taken", "a second class of that name", "never preemptible",
        "'nightly' is not a class", "weight must be above 0", "lending_limit is above",
        "'inference' is not a class", "max_gpus_per_node is above max_gpus_per_job"}) {
    EXPECT_NE(why.find(problem), std::string::npos) << problem << " missing from:\n" << why;
  }
  EXPECT_NE(why.find("8 problem(s)"), std::string::npos) << why;
}

TEST(PolicyConfig, MalformedYamlSaysWhere) {
  absl::StatusOr<Policy> p = ParsePolicy("classes:\n  - {name: a\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(Why(p.status()).find("line"), std::string::npos) << Why(p.status());
  EXPECT_EQ(LoadPolicyFile("/nonexistent/policy.yaml").status().code(),
            absl::StatusCode::kNotFound);
}

// Found while fuzzing the policy (tests/fuzz/policy_yaml): "nan%" passed the range check,
// and converting NaN to an integer is undefined behaviour (UBSan stops there).
TEST(PolicyConfig, LendingLimitPercentMustBeANumberInRange) {
  for (const char* pct : {"nan%", "-nan%", "NAN%", "inf%", "-1%", "100.5%", "\"%\"", "30"}) {
    absl::StatusOr<Policy> p = ParsePolicy(
        std::string("tenants:\n  - {name: t, nominal: {gpus: 8}, lending_limit: ") + pct + "}\n");
    ASSERT_FALSE(p.ok()) << pct;
    EXPECT_NE(Why(p.status()).find("tenants[0].lending_limit"), std::string::npos)
        << Why(p.status());
  }
  absl::StatusOr<Policy> p =
      ParsePolicy("tenants:\n  - {name: t, nominal: {gpus: 8}, lending_limit: 50%}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->tenants[0].lending_limit.gpus, 4u);
}

TEST(PolicyConfig, AChangeIsDescribedForTheAuditLog) {
  auto before = ParsePolicy(
      "classes:\n  - {name: training, value: 300}\n  - {name: old, value: 100}\n"
      "tenants:\n  - {name: vision, weight: 1, nominal: {gpus: 8, cpus: \"64\", memory: 1Ti}}\n"
      "  - {name: gone, weight: 1}\n");
  auto after = ParsePolicy(
      "classes:\n  - {name: training, value: 350}\n  - {name: urgent, value: 950}\n"
      "tenants:\n  - {name: vision, weight: 2, nominal: {gpus: 16, cpus: \"64\", memory: 1Ti}}\n");
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(DescribePolicyChange(*before, *after),
            "class training: value 300 -> 350; class urgent added (value 950); class old removed; "
            "tenant vision: weight 1 -> 2; tenant vision: quota 8 GPUs, 64 CPUs -> 16 GPUs, 64 "
            "CPUs; tenant gone removed");
  EXPECT_EQ(DescribePolicyChange(*after, *after), "classes, tenants and access unchanged");
}

TEST(PolicyConfig, GpuSharingIsOffByDefaultAndOnlyForServiceClasses) {
  auto none = ParsePolicy("");
  ASSERT_TRUE(none.ok()) << none.status();
  for (const auto& c : none->classes) EXPECT_EQ(c.gpu_sharing, "") << c.name;
  auto on = ParsePolicy(
      "classes:\n  - {name: serve, value: 900, service: true, gpu_sharing: mps}\n"
      "  - {name: train, value: 300, gpu_sharing: none}\n"
      "defaults: {class: train}\n");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->Find("serve")->gpu_sharing, "mps");
  EXPECT_EQ(on->Find("train")->gpu_sharing, "");
  auto bad = ParsePolicy(
      "classes:\n  - {name: serve, value: 900, service: true, gpu_sharing: timeslice}\n"
      "  - {name: train, value: 300, gpu_sharing: mps}\n"
      "defaults: {class: train}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(Why(bad.status()).find("classes[0] (serve).gpu_sharing: 'timeslice' is not mps"),
            std::string::npos)
      << Why(bad.status());
  EXPECT_NE(Why(bad.status()).find("classes[1] (train).gpu_sharing: mps only for service"),
            std::string::npos)
      << Why(bad.status());
  auto off = ParsePolicy(
      "classes:\n  - {name: serve, value: 900, service: true}\n"
      "  - {name: train, value: 300}\ndefaults: {class: train}\n");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(DescribePolicyChange(*off, *on), "class serve: gpu_sharing none -> mps");
}

TEST(PolicyConfig, AnMpsServiceUserNeedsSharingAndIsNeverRoot) {
  auto on = ParsePolicy(
      "classes:\n  - {name: serve, value: 900, service: true, gpu_sharing: mps,"
      " mps_user: svc-infer}\n  - {name: train, value: 300}\ndefaults: {class: train}\n");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->Find("serve")->mps_user, "svc-infer");
  EXPECT_EQ(on->Find("train")->mps_user, "");
  auto bad = ParsePolicy(
      "classes:\n  - {name: serve, value: 900, service: true, mps_user: svc}\n"
      "  - {name: serve2, value: 800, service: true, gpu_sharing: mps, mps_user: root}\n"
      "  - {name: serve3, value: 700, service: true, gpu_sharing: mps, mps_user: 'a b'}\n"
      "  - {name: train, value: 300}\ndefaults: {class: train}\n");
  ASSERT_FALSE(bad.ok());
  for (const char* want :
       {"classes[0] (serve).mps_user: an MPS service user needs gpu_sharing: mps",
        "classes[1] (serve2).mps_user: shares never run as root",
        "classes[2] (serve3).mps_user: 'a b' is not a user name"}) {
    EXPECT_NE(Why(bad.status()).find(want), std::string::npos) << want << "\n" << Why(bad.status());
  }
  auto each = ParsePolicy(
      "classes:\n  - {name: serve, value: 900, service: true, gpu_sharing: mps}\n"
      "  - {name: train, value: 300}\ndefaults: {class: train}\n");
  ASSERT_TRUE(each.ok());
  EXPECT_EQ(DescribePolicyChange(*each, *on), "class serve: mps_user (each owner) -> svc-infer");
}

TEST(PolicyConfig, SteeringCappedTrainingToSocketsIsASwitchOnByDefault) {
  auto on = ParsePolicy("");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->steer_capped_training_to_sockets);
  auto off = ParsePolicy("network:\n  steer_capped_training_to_sockets: false\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->steer_capped_training_to_sockets);
  EXPECT_EQ(DescribePolicyChange(*on, *off), "network.steer_capped_training_to_sockets: on -> off");
  auto bad = ParsePolicy("network:\n  steer_capped_training_to_sockets: maybe\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("network.steer_capped_training_to_sockets"),
            std::string::npos)
      << bad.status();
  auto unknown = ParsePolicy("network:\n  steer_to_sockets: true\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("steer_to_sockets"), std::string::npos)
      << unknown.status();
}

TEST(PolicyConfig, InferenceNumaExclusiveIsASwitchOffByDefault) {
  auto off = ParsePolicy("");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->inference_numa_exclusive);
  auto on = ParsePolicy("placement:\n  inference_numa_exclusive: true\n");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->inference_numa_exclusive);
  EXPECT_EQ(DescribePolicyChange(*off, *on), "placement.inference_numa_exclusive: off -> on");
  auto bad = ParsePolicy("placement:\n  inference_numa_exclusive: sometimes\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("placement.inference_numa_exclusive"), std::string::npos)
      << bad.status();
  auto unknown = ParsePolicy("placement:\n  numa_exclusive: true\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("numa_exclusive"), std::string::npos)
      << unknown.status();
}

TEST(PolicyConfig, TopologyLevelsAndClassDefaultsParseAndAreChecked) {
  auto p = ParsePolicy(
      "topology:\n  levels: [leaf, example.com/spine]\n"
      "classes:\n  - {name: training, value: 300, topology: {level: leaf, mode: required, "
      "wait: 10m}}\n  - {name: experiment, value: 100}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->topology_levels.size(), 2u);
  EXPECT_EQ(p->topology_levels[0].name, "leaf");
  EXPECT_EQ(p->topology_levels[0].label, "topology.baton.io/leaf");
  EXPECT_EQ(p->topology_levels[1].name, "spine");
  EXPECT_EQ(p->topology_levels[1].label, "example.com/spine");
  const PriorityClass* training = p->Find("training");
  EXPECT_EQ(training->topology.level, "leaf");
  EXPECT_TRUE(training->topology.required);
  EXPECT_EQ(training->topology.wait_ms, 600'000);
  EXPECT_TRUE(p->Find("experiment")->topology.level.empty());
  auto none = ParsePolicy("classes:\n  - {name: training, value: 300}\n");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(DescribePolicyChange(*none, *p),
            "class experiment added (value 100); topology.levels: none -> "
            "leaf=topology.baton.io/leaf, spine=example.com/spine; class training: topology "
            "none -> leaf:required@600s");

  struct Bad {
    const char* yaml;
    const char* names;
  };
  for (const Bad& b : {
           Bad{"topology:\n  levels: [leaf, leaf]\n", "a second level named leaf"},
           Bad{"topology:\n  levels: [leaf, x/leaf]\n", "a second level named leaf"},
           Bad{"topology:\n  levels: [\"\"]\n", "topology.levels[0]"},
           Bad{"topology:\n  tree: [leaf]\n", "unknown key 'tree'"},
           Bad{"classes:\n  - {name: training, value: 300, topology: {level: leaf}}\n",
               "classes[0] (training).topology.level: 'leaf' is not one of topology.levels"},
           Bad{"topology:\n  levels: [leaf]\nclasses:\n  - {name: training, value: 300, "
               "topology: {level: leaf, mode: strict}}\n",
               "'strict' is not preferred or required"},
           Bad{"topology:\n  levels: [leaf]\nclasses:\n  - {name: training, value: 300, "
               "topology: {mode: required}}\n",
               "a topology needs a level"},
       }) {
    auto bad = ParsePolicy(b.yaml);
    ASSERT_FALSE(bad.ok()) << b.yaml;
    EXPECT_NE(bad.status().message().find(b.names), std::string::npos) << bad.status();
  }
}

}  // namespace
}  // namespace baton
