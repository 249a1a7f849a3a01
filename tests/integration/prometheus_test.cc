// Metrics end to end: a real Prometheus (Debian's `prometheus`) scrapes a real
// coordinator and two real agents on loopback every second, with the alert rules of
// scripts/monitoring loaded; a scenario runs through the CLI (a job that succeeds, a CPU
// hog under a 0.2-CPU quota, a refused spec, a node lost under a running job); the test
// then finds, through Prometheus's HTTP API, the series with the values the scenario
// produced, and the eviction through `baton events --follow`.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/local_cluster.h"
#include "tests/launcher/isolation/os_env.h"
#include "tests/util/subprocess.h"

namespace baton::testing {
namespace {

std::string FirstLine(const std::string& path) {
  std::string s = ReadFile(path);
  return s.substr(0, s.find('\n'));
}

class Cluster : public ClusterClient {
 public:
  void set_address(const std::string& a) { address_ = a; }
  void set_client_env(std::map<std::string, std::string> env) { client_env_ = std::move(env); }
};

class PrometheusScrape : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(BATON_PROMETHEUS).empty() || access(BATON_PROMETHEUS, X_OK) != 0) {
      GTEST_SKIP() << "no prometheus binary (Debian package prometheus)";
    }
    if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
    isolation_missing_ = V1Missing();
    tag_ = std::to_string(getpid());
    security_ = std::make_unique<TestSecurity>(dir_.path());
    ASSERT_TRUE(security_->ok()) << security_->why();
    cluster_.set_client_env(security_->ClientEnv());
    // Node b's job is replaced 1 s + its 1 s grace + the margin after b goes silent.
    std::ofstream(dir_.path() + "/policy.yaml") << TestPolicyYaml(", stop_after_disconnect: 1s");
    guard_ = std::make_unique<CgroupTreeGuard>("batonobs" + tag_);
    StartCoordinator();
    // Node a runs the CPU hog under its own quota (isolation v1 when the machine has it);
    // node b, in pool "lossy", is the one that will be lost.
    StartAgent("a", {"--isolation", isolation_missing_.empty() ? "auto" : "none", "--cgroup-parent",
                     guard_->top() + "/a", "--training-burst=false"});
    StartAgent("b", {"--isolation", "none", "--pool", "lossy"});
    ASSERT_TRUE(cluster_.WaitForReadyNodes(2, std::chrono::seconds(20))) << dir_.path();
    StartPrometheus();
  }

  void TearDown() override {
    if (agents_.count("b")) agents_["b"]->Signal(SIGCONT);
    for (auto& [name, a] : agents_) a->Signal(SIGTERM);
    for (auto& [name, a] : agents_) a->Wait(std::chrono::seconds(10));
    for (auto* p : {&coordinator_, &prometheus_}) {
      if (*p) {
        (*p)->Signal(SIGTERM);
        (*p)->Wait(std::chrono::seconds(10));
      }
    }
  }

  void StartCoordinator() {
    std::string d = dir_.path();
    std::vector<std::string> argv = {Bin("baton-coordinator"),
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--data-dir",
                                     d + "/coordinator",
                                     "--ready-file",
                                     d + "/c.addr",
                                     "--metrics-listen",
                                     "127.0.0.1:0",
                                     "--metrics-ready-file",
                                     d + "/c.metrics",
                                     "--heartbeat",
                                     "250ms",
                                     "--lease",
                                     "1500ms",
                                     "--lost-margin",
                                     "500ms",
                                     "--policy",
                                     d + "/policy.yaml"};
    for (auto& f : security_->CoordinatorFlags()) argv.push_back(f);
    coordinator_ = std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{},
                                                d + "/coordinator");
    ASSERT_TRUE(WaitFor([&] { return !ReadFile(d + "/c.addr").empty(); }, std::chrono::seconds(20)))
        << ReadFile(d + "/coordinator.err");
    cluster_.set_address(FirstLine(d + "/c.addr"));
    targets_["coordinator"] = FirstLine(d + "/c.metrics");
  }

  void StartAgent(const std::string& n, std::vector<std::string> extra) {
    std::string d = dir_.path();
    nodes_[n] = "obs" + tag_ + n;
    std::vector<std::string> argv = {Bin("baton-agent"),
                                     "--name",
                                     nodes_[n],
                                     "--coordinator",
                                     cluster_.coordinator(),
                                     "--data-dir",
                                     d + "/" + n,
                                     "--fake-gpus",
                                     "2",
                                     "--nvml",
                                     "",
                                     "--stats-interval",
                                     "200ms",
                                     "--metrics-listen",
                                     "127.0.0.1:0",
                                     "--metrics-ready-file",
                                     d + "/" + n + ".metrics",
                                     "--ready-file",
                                     d + "/" + n + ".addr"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (auto& f : security_->AgentFlags(nodes_[n], {"IP:127.0.0.1"})) argv.push_back(f);
    agents_[n] =
        std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{}, d + "/" + n);
    ASSERT_TRUE(
        WaitFor([&] { return !ReadFile(d + "/" + n + ".addr").empty(); }, std::chrono::seconds(20)))
        << ReadFile(d + "/" + n + ".err");
    targets_[n] = FirstLine(d + "/" + n + ".metrics");
  }

  void StartPrometheus() {
    std::string d = dir_.path();
    port_ = FreePort();
    std::ofstream(d + "/prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "rule_files: ['" << BATON_SOURCE_DIR << "/scripts/monitoring/alerts.yml']\n"
        << "scrape_configs:\n"
        << "  - job_name: baton-coordinator\n    static_configs: [{targets: ['"
        << targets_["coordinator"] << "']}]\n"
        << "  - job_name: baton-agent\n    static_configs: [{targets: ['" << targets_["a"] << "', '"
        << targets_["b"] << "']}]\n";
    prometheus_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BATON_PROMETHEUS, "--config.file=" + d + "/prometheus.yml",
                                 "--storage.tsdb.path=" + d + "/tsdb",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--log.level=warn"},
        std::map<std::string, std::string>{}, d + "/prometheus");
    httplib::Client http("127.0.0.1", port_);
    ASSERT_TRUE(WaitFor(
        [&] {
          auto r = http.Get("/-/ready");
          return r && r->status == 200;
        },
        std::chrono::seconds(30)))
        << ReadFile(d + "/prometheus.err");
  }

  // The instant vector of `promql` as JSON (an empty array when none).
  nlohmann::json Query(const std::string& promql) {
    httplib::Client http("127.0.0.1", port_);
    auto r = http.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!r || r->status != 200) return nlohmann::json::array();
    auto j = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || j.value("status", "") != "success") return nlohmann::json::array();
    return j["data"]["result"];
  }
  // The value of the first series of `promql`, nullopt when there is none.
  std::optional<double> Value(const std::string& promql) {
    auto result = Query(promql);
    if (result.empty()) return std::nullopt;
    return std::stod(result[0]["value"][1].get<std::string>());
  }
  // Waits (up to 30 s) until `promql` has a first value satisfying `ok`.
  bool Eventually(const std::string& promql, const std::function<bool(double)>& ok) {
    return WaitFor(
        [&] {
          auto v = Value(promql);
          return v && ok(*v);
        },
        std::chrono::seconds(30));
  }
  static std::function<bool(double)> Is(double want) {
    return [want](double v) { return v == want; };
  }

  uint64_t SubmitQuiet(std::vector<std::string> args) {
    args.insert(args.begin(), {"submit", "-q"});
    CommandResult r = cluster_.Baton(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ClusterClient::SubmittedId(r.out);
  }

  TempDir dir_;
  std::unique_ptr<TestSecurity> security_;
  std::string tag_, isolation_missing_;
  std::unique_ptr<CgroupTreeGuard> guard_;
  Cluster cluster_;
  std::unique_ptr<Subprocess> coordinator_, prometheus_;
  std::map<std::string, std::unique_ptr<Subprocess>> agents_;
  std::map<std::string, std::string> nodes_, targets_;
  int port_ = 0;
};

TEST_F(PrometheusScrape, FindsTheSeriesTheScenarioProduced) {
  ASSERT_TRUE(Eventually("sum(up)", Is(3))) << "all three targets scraped";

  CommandResult done = cluster_.Baton({"submit", "--wait", "--", "true"});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  uint64_t hog =
      SubmitQuiet({"--cpus", "0.2", "--gpus", "1", "--", "sh", "-c", "while :; do :; done"});
  uint64_t lost =
      SubmitQuiet({"--pool", "lossy", "--gpus", "2", "--grace", "1s", "--", "sleep", "120"});
  EXPECT_EQ(cluster_.Baton({"submit", "--gpus", "64", "--", "true"}).exit_code, 2);
  ASSERT_TRUE(cluster_.WaitForState(hog, "JOB_STATE_RUNNING"));
  ASSERT_TRUE(cluster_.WaitForState(lost, "JOB_STATE_RUNNING"));
  Subprocess follow({Bin("baton"), "events", "--follow", "--kind", "eviction"},
                    cluster_.ClientEnv(), dir_.path() + "/follow");
  agents_["b"]->Signal(SIGSTOP);  // silent past lease + margin: node b is lost
  ASSERT_TRUE(cluster_.WaitForState(lost, "JOB_STATE_PENDING", std::chrono::seconds(20)));

  std::string j = "job_id=\"" + std::to_string(hog) + "\"";
  std::string a = "node=\"" + nodes_["a"] + "\"";
  EXPECT_TRUE(Eventually("sum(baton_jobs_finished_total{state=\"succeeded\"})", Is(1)));
  EXPECT_TRUE(Eventually("sum(baton_jobs_submitted_total)", Is(3)));
  EXPECT_TRUE(Eventually("sum(baton_submissions_refused_total)", Is(1)));
  EXPECT_TRUE(Eventually("baton_preemptions_total{reason=\"node_lost\"}", Is(1)));
  EXPECT_TRUE(
      Eventually("baton_preemption_lost_work_gpu_seconds_count{reason=\"node_lost\"}", Is(1)));
  EXPECT_TRUE(Eventually("baton_preemption_lost_work_gpu_seconds_sum", [](double v) {
    return v > 0;
  })) << "2 GPUs for as long as the lost job ran";
  EXPECT_TRUE(
      Eventually("baton_job_evictions_total{job_id=\"" + std::to_string(lost) + "\"}", Is(1)));
  EXPECT_TRUE(Eventually("baton_nodes{state=\"lost\"}", Is(1)));
  EXPECT_TRUE(Eventually("baton_agents_connected", Is(1)));
  EXPECT_TRUE(Eventually("sum(baton_pending_jobs)", Is(1)));
  EXPECT_TRUE(Eventually("sum(baton_running_jobs)", Is(1)));
  EXPECT_TRUE(Eventually("baton_admission_wait_seconds_count{class=\"training\"}",
                         [](double v) { return v >= 3; }));
  EXPECT_TRUE(Eventually("count(baton_job_gpu_info{" + j + "})", Is(1)));
  EXPECT_TRUE(Eventually("baton_job_info{" + j + ",kind=\"training\"}", Is(1)));
  EXPECT_TRUE(Eventually("baton_node_free_gpus{" + a + "}", Is(1)));
  EXPECT_TRUE(Eventually("baton_build_info{component=\"agent\"}", Is(1)));
  if (isolation_missing_.empty()) {
    EXPECT_TRUE(Eventually("baton_job_cpu_throttled_periods_total{" + j + "}", [](double v) {
      return v > 0;
    })) << "a busy loop under a 0.2-CPU quota is throttled";
    EXPECT_TRUE(Eventually("baton_job_cpu_quota_cores{" + j + "}", Is(0.2)));
  } else {
    std::cout << "[ SKIPPED  ] throttling assertions: " << isolation_missing_ << "\n";
  }

  // The alert rules loaded into the server, every one healthy.
  httplib::Client http("127.0.0.1", port_);
  auto rules = http.Get("/api/v1/rules");
  ASSERT_TRUE(rules && rules->status == 200);
  auto groups = nlohmann::json::parse(rules->body)["data"]["groups"];
  int loaded = 0;
  for (const auto& g : groups) {
    for (const auto& r : g["rules"]) {
      EXPECT_EQ(r.value("health", ""), "ok") << r.dump();
      ++loaded;
    }
  }
  EXPECT_EQ(loaded, 12);  // alerts.yml has 12 rules (promtool check rules counts them)

  // The eviction reached a follower of the event log, and reads back by job.
  EXPECT_TRUE(WaitFor(
      [&] { return ReadFile(dir_.path() + "/follow.out").find("node_lost") != std::string::npos; },
      std::chrono::seconds(10)))
      << ReadFile(dir_.path() + "/follow.out") << ReadFile(dir_.path() + "/follow.err");
  follow.Signal(SIGTERM);
  CommandResult events = cluster_.Baton({"events", "--job", std::to_string(lost)});
  EXPECT_NE(events.out.find("eviction"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("running -> pending"), std::string::npos) << events.out;
  cluster_.Baton({"cancel", std::to_string(hog), std::to_string(lost)});
}

}  // namespace
}  // namespace baton::testing
