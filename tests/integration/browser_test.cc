// The web dashboard in a real browser (issue 48): a real cluster, jobs submitted as
// baton-alice, a `baton ui` link, and tests/browser/dashboard.mjs driving Debian's
// chromium-headless-shell through playwright-core — the link signs in once and leaves the
// address bar, the cookie is out of script's reach, free GPUs lead the overview, the
// queue shows a pending reason on its row with a person's markup as text (no element
// made, no script run), the job page's Cancel works, the spent link says so, the
// dashboard refuses to be framed, and inline script is refused by the page's policy. Skips, saying
// why, without Chromium, node or tests/browser/node_modules (scripts/setup.sh).
#include <unistd.h>

#include <cstdlib>
#include <map>

#include "gtest/gtest.h"
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

TEST(Browser, TheDashboardSignsInOnceShowsTheQueueAsTextAndActs) {
  if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  if (std::string missing = MissingBrowser(); !missing.empty()) GTEST_SKIP() << missing;
  LocalCluster cluster(/*agents=*/1, /*gpus=*/2);

  const std::string markup = "<img src=x onerror=window.pwned=1>";
  CommandResult held = cluster.Baton({"submit", "-q", "--hold", "--", "sleep", "300"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  const std::string held_id = std::to_string(ClusterClient::SubmittedId(held.out));
  ASSERT_EQ(cluster.Baton({"hold", held_id, "--reason", markup}).exit_code, 0);
  CommandResult running = cluster.Baton({"submit", "-q", "--", "sleep", "300"});
  ASSERT_EQ(running.exit_code, 0) << running.err;
  const uint64_t running_id = ClusterClient::SubmittedId(running.out);
  ASSERT_TRUE(cluster.WaitForState(running_id, "JOB_STATE_RUNNING"))
      << cluster.Describe(running_id);

  CommandResult ui = cluster.Baton({"ui"});
  ASSERT_EQ(ui.exit_code, 0) << ui.err;
  const size_t at = ui.out.find("https://");
  ASSERT_NE(at, std::string::npos) << ui.out;
  const std::string link = ui.out.substr(at, ui.out.find('\n', at) - at);

  std::map<std::string, std::string> env;
  if (const char* shot = getenv("BATON_SCREENSHOT")) env["BATON_SCREENSHOT"] = shot;
  CommandResult run =
      RunProcess({"node", std::string(BATON_SOURCE_DIR) + "/tests/browser/dashboard.mjs", link,
                  held_id, std::to_string(running_id), markup},
                 env, std::chrono::seconds(120));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("\"ok\":true"), std::string::npos) << run.out << run.err;
  EXPECT_TRUE(cluster.WaitForState(running_id, "JOB_STATE_CANCELLED"))
      << "the page's Cancel took effect: " << cluster.Describe(running_id);
}

}  // namespace
}  // namespace baton::testing
