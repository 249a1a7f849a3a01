// The web dashboard in a real browser (issue 48): a real cluster, jobs submitted as
// baton-alice, `baton ui` links for her and baton-bob, and tests/browser/dashboard.mjs
// driving Debian's chromium-headless-shell through playwright-core — no page without a
// session; the link signs in once and leaves the address bar; the cookie is out of
// script's reach; free GPUs lead the overview; the queue shows a pending reason on its
// row; a person's markup in a hold reason, a cancel reason, an env value and a log line
// is text (no element made, no script run); the job page follows the job's output and
// shows its eviction by bob's job without a reload; Tab reaches every action; Cancel
// works for alice and is neither shown to nor accepted from bob; the spent link says so;
// the dashboard refuses to be framed; inline script is refused by the page's policy; a
// screenshot of every page at 1366×768 lands in browser-screenshots/ of the build folder.
// Skips, saying why, without Chromium, node or tests/browser/node_modules
// (scripts/setup.sh).
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"

namespace baton::testing {
namespace {

constexpr char kChromium[] = "/usr/lib/chromium/chromium-headless-shell";

std::string MissingBrowser() {
  const std::string modules = std::string(BATON_SOURCE_DIR) + "/tests/browser/node_modules";
  if (access(kChromium, X_OK) != 0) {
    return std::string(kChromium) + " is missing (apt install chromium-headless-shell)";
  }
  if (access((modules + "/playwright-core").c_str(), R_OK) != 0) {
    return modules + "/playwright-core is missing (npm ci in tests/browser)";
  }
  if (RunProcess({"node", "--version"}, {}).exit_code != 0) return "node is missing";
  return "";
}

TEST(Browser, TheDashboardSignsInOnceShowsTheClusterAsTextLiveAndActs) {
  if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  if (std::string missing = MissingBrowser(); !missing.empty()) GTEST_SKIP() << missing;
  // The test policy with training evictable at once (no minimum runtime).
  std::string policy = TestPolicyYaml();
  const std::string inference = "{name: inference, value: 900, service: true";
  ASSERT_NE(policy.find(inference), std::string::npos);
  policy.replace(policy.find(inference), inference.size(), inference + ", gpu_sharing: mps");
  const size_t min_runtime = policy.find("min_runtime: 10m");
  ASSERT_NE(min_runtime, std::string::npos);
  policy.replace(min_runtime, 16, "min_runtime: 0s");
  LocalCluster cluster(/*agents=*/1, /*gpus=*/2, policy);
  std::ofstream(cluster.GpuUtilizationFile(0)) << "* 3\n";  // held GPUs nearly idle

  const std::string markup = "<img src=x onerror=window.pwned=1>";
  CommandResult held = cluster.Baton({"submit", "-q", "--hold", "--", "sleep", "300"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  const std::string held_id = std::to_string(ClusterClient::SubmittedId(held.out));
  ASSERT_EQ(cluster.Baton({"hold", held_id, "--reason", markup}).exit_code, 0);
  CommandResult doomed = cluster.Baton({"submit", "-q", "--hold", "--", "sleep", "300"});
  const std::string cancelled_id = std::to_string(ClusterClient::SubmittedId(doomed.out));
  ASSERT_EQ(cluster.Baton({"cancel", cancelled_id, "--reason", markup}).exit_code, 0);
  CommandResult running =
      cluster.Baton({"submit", "-q", "--env", "NOTE=" + markup, "--", "sleep", "300"});
  ASSERT_EQ(running.exit_code, 0) << running.err;
  const uint64_t running_id = ClusterClient::SubmittedId(running.out);
  // Both GPUs, printing the markup, evictable (training) with a short grace.
  CommandResult training =
      cluster.Baton({"submit", "-q", "--class", "training", "--gpus", "2", "--cpus", "1", "--grace",
                     "2s", "--", "sh", "-c", "echo '" + markup + "'; exec sleep 600"});
  ASSERT_EQ(training.exit_code, 0) << training.err;
  const uint64_t training_id = ClusterClient::SubmittedId(training.out);
  ASSERT_TRUE(cluster.WaitForState(running_id, "JOB_STATE_RUNNING"))
      << cluster.Describe(running_id);
  ASSERT_TRUE(cluster.WaitForState(training_id, "JOB_STATE_RUNNING"))
      << cluster.Describe(training_id);
  // A second node whose GPU is in MIG mode (two slices); bob's service holds one of them.
  ASSERT_TRUE(cluster.AddAgent(/*gpus=*/1, {"--fake-mig", "3g.40gb:2"}));
  CommandResult sliced = cluster.Baton({"submit", "-q", "--class", "inference", "--mig", "3g.40gb",
                                        "--gpus", "1", "--cpus", "1", "--", "sleep", "600"},
                                       kBob);
  ASSERT_EQ(sliced.exit_code, 0) << sliced.err;
  const uint64_t sliced_id = ClusterClient::SubmittedId(sliced.out);
  ASSERT_TRUE(cluster.WaitForState(sliced_id, "JOB_STATE_RUNNING")) << cluster.Describe(sliced_id);
  // A third node offering its GPU as an MPS pool; bob's 30% share on it.
  ASSERT_TRUE(cluster.AddAgent(
      /*gpus=*/1, {"--mps-gpus", "0", "--mps-control",
                   std::string(BATON_SOURCE_DIR) + "/tests/launcher/fake_mps_control.sh"}));
  CommandResult shared =
      cluster.Baton({"submit", "-q", "--class", "inference", "--gpu-share", "30%", "--gpu-mem",
                     "4Gi", "--cpus", "1", "--", "sleep", "600"},
                    kBob);
  ASSERT_EQ(shared.exit_code, 0) << shared.err;
  const uint64_t shared_id = ClusterClient::SubmittedId(shared.out);
  ASSERT_TRUE(cluster.WaitForState(shared_id, "JOB_STATE_RUNNING")) << cluster.Describe(shared_id);

  auto link = [&cluster](const std::string& user) {
    CommandResult ui = cluster.Baton({"ui"}, user);
    EXPECT_EQ(ui.exit_code, 0) << ui.err;
    const size_t at = ui.out.find("https://");
    return at == std::string::npos ? "" : ui.out.substr(at, ui.out.find('\n', at) - at);
  };
  TempDir files;
  const std::string evict_file = files.Sub("evict");
  char cwd[4096];
  const std::string shots = std::string(getcwd(cwd, sizeof cwd)) + "/browser-screenshots";
  const nlohmann::json args = {{"link", link(kAlice)},
                               {"bobLink", link(kBob)},
                               {"held", held_id},
                               {"cancelled", cancelled_id},
                               {"running", std::to_string(running_id)},
                               {"training", std::to_string(training_id)},
                               {"sliced", std::to_string(sliced_id)},
                               {"shared", std::to_string(shared_id)},
                               {"markup", markup},
                               {"evictFile", evict_file},
                               {"shots", shots}};

  // Once the page of the training job is open, bob's inference job evicts it.
  std::atomic<uint64_t> serve{0};
  std::thread evictor([&] {
    for (int i = 0; i < 1200 && access(evict_file.c_str(), F_OK) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (access(evict_file.c_str(), F_OK) != 0) return;
    serve = SubmitInference(cluster);
    std::ofstream(evict_file + ".id") << serve.load() << "\n";
  });
  std::map<std::string, std::string> env;
  if (const char* shot = getenv("BATON_SCREENSHOT")) env["BATON_SCREENSHOT"] = shot;
  CommandResult run = RunProcess(
      {"node", std::string(BATON_SOURCE_DIR) + "/tests/browser/dashboard.mjs", args.dump()}, env,
      std::chrono::seconds(180));
  evictor.join();
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("\"ok\":true"), std::string::npos) << run.out << run.err;
  EXPECT_NE(serve.load(), 0u) << "the page never asked for the eviction";
  EXPECT_TRUE(cluster.WaitForState(running_id, "JOB_STATE_CANCELLED"))
      << "the page's Cancel took effect: " << cluster.Describe(running_id);
  // How soon the page showed the eviction after the coordinator decided it (a figure for
  // the log, not a check: speed belongs to benchmarks).
  std::optional<v1::Job> evicted = cluster.GetJob(training_id);
  const size_t at = run.out.find("\"eviction_seen_ms\":");
  if (evicted && evicted->attempts_size() > 0 && at != std::string::npos) {
    const int64_t seen = std::atoll(run.out.c_str() + at + 19);
    std::cout << "eviction shown " << seen - evicted->attempts(0).preempted_ms()
              << " ms after it was decided\n";
  }
}

}  // namespace
}  // namespace baton::testing
