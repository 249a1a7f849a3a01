// One job's whole path with real parts: the baton CLI process -> coordinator process
// (gRPC, RocksDB) -> agent process -> the job's own process -> its log, read back.
#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {
namespace {

uint64_t SubmittedId(const CommandResult& r) { return ClusterClient::SubmittedId(r.out); }

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
    owned_ = std::make_unique<LocalCluster>(/*agents=*/1, /*gpus=*/2);
  }
  LocalCluster& cluster() { return *owned_; }
  std::unique_ptr<LocalCluster> owned_;
};

TEST_F(EndToEnd, SubmitWaitSucceedsAndTheLogReadsBack) {
  CommandResult r = cluster().Baton(
      {"submit", "--wait", "--", "sh", "-c", "echo hello from rank $RANK of $WORLD_SIZE"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("succeeded"), std::string::npos) << "progress shown on stderr: " << r.err;
  uint64_t id = SubmittedId(CommandResult{0, r.out.substr(0, r.out.find('\n')), ""});
  CommandResult logs = cluster().Baton({"logs", std::to_string(id)});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "[rank 0] hello from rank 0 of 1\n");
}

TEST_F(EndToEnd, LogsKeepRankPrefixesAndFilterOneRank) {
  CommandResult r = cluster().Baton(
      {"submit", "--wait", "--ranks-per-node", "2", "--", "sh", "-c", "echo I am $RANK"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t id = SubmittedId(CommandResult{0, r.out.substr(0, r.out.find('\n')), ""});
  CommandResult all = cluster().Baton({"logs", std::to_string(id)});
  EXPECT_NE(all.out.find("[rank 0] I am 0\n"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("[rank 1] I am 1\n"), std::string::npos) << all.out;
  CommandResult one = cluster().Baton({"logs", std::to_string(id), "--rank", "1"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "[rank 1] I am 1\n");
  EXPECT_EQ(cluster().Baton({"logs", std::to_string(id), "--rank", "2"}).exit_code, 2)
      << "rank outside the world";
}

TEST_F(EndToEnd, SubmitWaitExitsWithTheJobsExitCode) {
  CommandResult r =
      cluster().Baton({"submit", "--wait", "--restart", "never", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("failed"), std::string::npos);
}

TEST_F(EndToEnd, FollowedLogsEndWhenTheJobEnds) {
  CommandResult sub = cluster().Baton(
      {"submit", "-q", "--", "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.2; done"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  uint64_t id = SubmittedId(sub);
  ASSERT_TRUE(cluster().WaitForState(id, "JOB_STATE_RUNNING") ||
              cluster().StateOf(id) == "JOB_STATE_SUCCEEDED");
  CommandResult logs = cluster().Baton({"logs", "-f", std::to_string(id)});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "[rank 0] line 1\n[rank 0] line 2\n[rank 0] line 3\n");
}

TEST_F(EndToEnd, CancelStopsTheRunningProcess) {
  std::string pidfile = cluster().shared_dir() + "/job.pid";
  CommandResult sub = cluster().Baton({"submit", "-q", "--grace", "5s", "--", "sh", "-c",
                                       "echo $$ > " + pidfile + "; exec sleep 300"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  uint64_t id = SubmittedId(sub);
  ASSERT_TRUE(cluster().WaitForState(id, "JOB_STATE_RUNNING"));
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(pidfile).empty(); }, std::chrono::seconds(10)));
  pid_t pid = std::stoi(ReadFile(pidfile));
  ASSERT_EQ(kill(pid, 0), 0) << "the job's process runs";
  CommandResult c = cluster().Baton({"cancel", std::to_string(id)});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  ASSERT_TRUE(cluster().WaitForState(id, "JOB_STATE_CANCELLED"));
  EXPECT_TRUE(WaitFor([&] { return kill(pid, 0) != 0; }, std::chrono::seconds(5)))
      << "process " << pid << " survived its job's cancellation";
  CommandResult status = cluster().Baton({"status", std::to_string(id)});
  EXPECT_NE(status.out.find("cancelled by baton-alice"), std::string::npos) << status.out;
}

TEST_F(EndToEnd, AHeldJobWaitsSayingWhoHoldsItUntilReleased) {
  CommandResult sub = cluster().Baton({"submit", "-q", "--hold", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  uint64_t id = SubmittedId(sub);
  const std::string job = std::to_string(id);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster().Baton({"queue"}).out.find("held by baton-alice: held at submit") !=
               std::string::npos;
      },
      std::chrono::seconds(10)))
      << cluster().Baton({"queue"}).out;
  EXPECT_EQ(cluster().StateOf(id), "JOB_STATE_PENDING");
  EXPECT_EQ(cluster().Baton({"release", job}, kBob).exit_code, 4) << "another tenant's job";
  CommandResult hold = cluster().Baton({"hold", job, "--reason", "dataset", "--json"});
  EXPECT_EQ(hold.exit_code, 0) << hold.err;
  EXPECT_NE(hold.out.find("\"reason\":\"dataset\""), std::string::npos) << hold.out;
  CommandResult status = cluster().Baton({"status", job});
  EXPECT_NE(status.out.find("Held:       by baton-alice"), std::string::npos) << status.out;
  CommandResult release = cluster().Baton({"release", job});
  EXPECT_EQ(release.exit_code, 0) << release.err;
  EXPECT_EQ(release.out, "Job " + job + " released\n");
  ASSERT_TRUE(cluster().WaitForState(id, "JOB_STATE_SUCCEEDED"));
  CommandResult late = cluster().Baton({"hold", job});
  EXPECT_EQ(late.exit_code, 6) << "a finished job: " << late.err;
  EXPECT_EQ(cluster().Baton({"release", job}).exit_code, 6) << "not held";
}

TEST_F(EndToEnd, APipelineRunsInOrderAndAFailedStepCancelsTheStepsAfterIt) {
  auto submit = [&](std::vector<std::string> args, const std::string& user = kAlice) {
    args.insert(args.begin(), {"submit", "-q", "--restart", "never"});
    CommandResult r = cluster().Baton(args, user);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return SubmittedId(r);
  };
  const uint64_t prep = submit({"--", "sleep", "1"});
  const uint64_t train = submit({"--after", "ok:" + std::to_string(prep), "--", "true"});
  const uint64_t eval = submit({"--after", "ok:" + std::to_string(train), "--", "true"});
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster().Baton({"queue"}).out.find("waiting for job " + std::to_string(prep) +
                                                   " to succeed") != std::string::npos;
      },
      std::chrono::seconds(10)))
      << cluster().Baton({"queue"}).out;
  CommandResult status = cluster().Baton({"status", std::to_string(eval)});
  EXPECT_NE(status.out.find("After:      ok:" + std::to_string(train) + "\n"), std::string::npos)
      << status.out;
  ASSERT_TRUE(cluster().WaitForState(eval, "JOB_STATE_SUCCEEDED")) << cluster().Describe(eval);
  std::optional<v1::Job> p = cluster().GetJob(prep), t = cluster().GetJob(train),
                         e = cluster().GetJob(eval);
  ASSERT_TRUE(p && t && e);
  ASSERT_EQ(t->attempts_size(), 1);
  ASSERT_EQ(e->attempts_size(), 1);
  EXPECT_GE(t->attempts(0).scheduled_ms(), p->finished_ms()) << "train after prep succeeded";
  EXPECT_GE(e->attempts(0).scheduled_ms(), t->finished_ms()) << "eval after train succeeded";
  EXPECT_NE(cluster().Baton({"status", std::to_string(eval)}).out.find("(met)"), std::string::npos);

  // prep fails: train and eval can never start, and say so; afterany runs anyway.
  const uint64_t bad = submit({"--", "sh", "-c", "sleep 1; exit 3"});
  const uint64_t t2 = submit({"--after", "ok:" + std::to_string(bad), "--", "true"});
  const uint64_t e2 = submit({"--after", "afterok:" + std::to_string(t2), "--", "true"});
  const uint64_t any = submit({"--after", "any:" + std::to_string(bad), "--", "true"});
  ASSERT_TRUE(cluster().WaitForState(e2, "JOB_STATE_CANCELLED")) << cluster().Describe(e2);
  EXPECT_EQ(cluster().StateOf(t2), "JOB_STATE_CANCELLED");
  for (uint64_t id : {t2, e2}) {
    CommandResult st = cluster().Baton({"status", std::to_string(id)});
    EXPECT_NE(st.out.find("dependency never satisfied"), std::string::npos) << st.out;
    CommandResult ev = cluster().Baton({"events", "--job", std::to_string(id)});
    EXPECT_NE(ev.out.find("dependency never satisfied"), std::string::npos) << ev.out;
  }
  ASSERT_TRUE(cluster().WaitForState(any, "JOB_STATE_SUCCEEDED")) << cluster().Describe(any);

  // Refused at submit: a job that does not exist (3), a service (2: it never ends), a typo.
  CommandResult missing = cluster().Baton({"submit", "--after", "ok:424242", "--", "true"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("after ok:424242: job 424242 not found"), std::string::npos)
      << missing.err;
  const uint64_t service =
      submit({"--class", "inference", "--gpus", "1", "--cpus", "1", "--", "sleep", "60"}, kBob);
  CommandResult on_service =
      cluster().Baton({"submit", "--after", "any:" + std::to_string(service), "--", "true"});
  EXPECT_EQ(on_service.exit_code, 2) << on_service.err;
  EXPECT_NE(on_service.err.find("is a service"), std::string::npos) << on_service.err;
  CommandResult typo = cluster().Baton({"submit", "--after", "okay:3", "--", "true"});
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("--after: 'okay:3' is not a dependency"), std::string::npos) << typo.err;
}

// The bill and the sacct: what ran shows in `baton usage` (the rollup, charged in the
// commits that ended the jobs) and `baton history`; another tenant's usage is refused.
TEST_F(EndToEnd, UsageAndHistoryShowWhatRan) {
  CommandResult ok = cluster().Baton({"submit", "--wait", "--gpus", "1", "--", "sleep", "1"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const uint64_t good = SubmittedId(CommandResult{0, ok.out.substr(0, ok.out.find('\n')), ""});
  CommandResult bad =
      cluster().Baton({"submit", "--wait", "--restart", "never", "--", "sh", "-c", "exit 3"});
  ASSERT_EQ(bad.exit_code, 3) << bad.err;
  const uint64_t failed = SubmittedId(CommandResult{0, bad.out.substr(0, bad.out.find('\n')), ""});

  CommandResult usage = cluster().Baton({"usage", "--by", "user", "--since", "1d", "-o", "json"});
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  EXPECT_NE(usage.out.find(std::string("\"key\":\"") + kAlice + "\""), std::string::npos)
      << usage.out;
  EXPECT_NE(usage.out.find("\"succeeded\":\"1\""), std::string::npos) << usage.out;
  EXPECT_NE(usage.out.find("\"failed\":\"1\""), std::string::npos) << usage.out;
  EXPECT_NE(usage.out.find("\"waits\":\"2\""), std::string::npos) << usage.out;
  CommandResult table = cluster().Baton({"usage"});
  EXPECT_NE(table.out.find("GPU-H"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("vision"), std::string::npos) << table.out;
  CommandResult other = cluster().Baton({"usage", "--tenant", "serving"});
  EXPECT_EQ(other.exit_code, 4) << other.err;
  EXPECT_NE(other.err.find("readable by its members and admins only"), std::string::npos)
      << other.err;

  CommandResult history = cluster().Baton({"history", "--user", kAlice, "-o", "csv"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  EXPECT_EQ(history.out.rfind("ID,NAME,USER,TENANT,CLASS,STATE,START,END,EXIT", 0), 0u)
      << history.out;
  EXPECT_LT(history.out.find("\r\n" + std::to_string(failed) + ","),
            history.out.find("\r\n" + std::to_string(good) + ","))
      << "newest end first: " << history.out;
  CommandResult only_failed = cluster().Baton({"history", "--state", "failed", "-o", "name"});
  EXPECT_EQ(only_failed.out, "job/" + std::to_string(failed) + "\n") << only_failed.err;
  EXPECT_EQ(cluster().Baton({"history", "--state", "running"}).exit_code, 2);
  EXPECT_EQ(cluster().Baton({"usage", "--since", "yesterday"}).exit_code, 2);
}

TEST_F(EndToEnd, AnArrayRunsEachTaskOnceWithItsIndexAndFoldsInTheQueue) {
  CommandResult sub = cluster().Baton({"submit", "--array", "0-5%2", "--name", "sweep-%a",
                                       "--restart", "never", "--", "sh", "-c",
                                       "sleep 1; echo task $BATON_ARRAY_TASK_ID of "
                                       "$BATON_ARRAY_TASK_COUNT in $BATON_ARRAY_JOB_ID"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = std::to_string(SubmittedId(sub));
  EXPECT_EQ(sub.out, "Submitted array " + id + " (6 tasks: " + id + "_0 ... " + id + "_5)\n");
  ASSERT_TRUE(WaitFor(
      [&] { return cluster().Baton({"queue"}).out.find(id + "_[0-5%2]") != std::string::npos; },
      std::chrono::seconds(10)))
      << cluster().Baton({"queue"}).out;
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster().Baton({"status", id}).out.find("Tasks:      6 succeeded") !=
               std::string::npos;
      },
      std::chrono::seconds(60)))
      << cluster().Baton({"status", id}).out;
  for (int index : {0, 3, 5}) {
    const std::string task = id + "_" + std::to_string(index);
    CommandResult logs = cluster().Baton({"logs", task});
    EXPECT_EQ(logs.exit_code, 0) << logs.err;
    EXPECT_EQ(logs.out, "[rank 0] task " + std::to_string(index) + " of 6 in " + id + "\n");
    CommandResult status = cluster().Baton({"status", task});
    EXPECT_NE(status.out.find("sweep-" + std::to_string(index)), std::string::npos) << status.out;
  }
  CommandResult missing = cluster().Baton({"status", id + "_99"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("array " + id + " has no task 99"), std::string::npos) << missing.err;
  for (const char* bad : {"5-1", "0-9:0", "0-9%0", "0-10000", "x"}) {
    CommandResult r = cluster().Baton({"submit", "--array", bad, "--", "true"});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("array"), std::string::npos) << r.err;
  }
  // Cancel of one task leaves the others; of the array, ends them all.
  CommandResult big = cluster().Baton({"submit", "-q", "--array", "0-99%1", "--", "sleep", "30"});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  const std::string b = std::to_string(SubmittedId(big));
  EXPECT_EQ(cluster().Baton({"cancel", b + "_50"}).exit_code, 0);
  EXPECT_NE(cluster().Baton({"status", b + "_50"}).out.find("cancelled"), std::string::npos);
  EXPECT_NE(cluster().Baton({"status", b + "_51"}).out.find("pending"), std::string::npos);
  EXPECT_EQ(cluster().Baton({"cancel", b}).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster().Baton({"status", b}).out.find("Tasks:      100 cancelled") !=
               std::string::npos;
      },
      std::chrono::seconds(30)))
      << cluster().Baton({"status", b}).out;
}

// The whole array by its id, as scontrol does: submitted held it waits as a whole (its
// line and each task say so), release lets every task run; submit --wait on an array
// follows all its tasks and exits 0 when all succeeded, 1 when any failed.
TEST_F(EndToEnd, AnArrayIsHeldAndReleasedWholeAndSubmitWaitsForAllItsTasks) {
  const std::vector<std::string> exit_3_at_1 = {
      "--restart", "never", "--", "sh", "-c", "exit $((BATON_ARRAY_TASK_ID == 1 ? 3 : 0))"};
  std::vector<std::string> args = {"submit", "--array", "0-2", "--hold"};
  args.insert(args.end(), exit_3_at_1.begin(), exit_3_at_1.end());
  CommandResult sub = cluster().Baton(args);
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = std::to_string(SubmittedId(sub));
  EXPECT_EQ(sub.out,
            "Submitted array " + id + " (3 tasks: " + id + "_0 ... " + id + "_2) (held)\n");
  CommandResult queue = cluster().Baton({"queue"});
  EXPECT_NE(queue.out.find("held by " + std::string(kAlice) + ": held at submit"),
            std::string::npos)
      << queue.out;
  EXPECT_NE(cluster().Baton({"status", id + "_1"}).out.find("which is held by"), std::string::npos);
  CommandResult again = cluster().Baton({"hold", id, "--reason", "dataset v2"});
  EXPECT_EQ(again.out, "Array " + id + " (3 tasks) held\n") << again.err;
  CommandResult json = cluster().Baton({"release", id, "--json"});
  EXPECT_EQ(json.out, "{\"jobId\":\"" + id + "\",\"released\":true,\"array\":{\"tasks\":3}}\n")
      << json.err;
  EXPECT_EQ(cluster().Baton({"release", id}).exit_code, 6) << "not held any more";
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster().Baton({"status", id}).out.find("Tasks:      2 succeeded, 1 failed") !=
               std::string::npos;
      },
      std::chrono::seconds(60)))
      << cluster().Baton({"status", id}).out;
  EXPECT_EQ(cluster().Baton({"requeue", id}).exit_code, 6) << "nothing of it runs";

  args = {"submit", "--array", "0-2", "--wait"};
  args.insert(args.end(), exit_3_at_1.begin(), exit_3_at_1.end());
  CommandResult waited = cluster().Baton(args);
  EXPECT_EQ(waited.exit_code, 1) << waited.err;
  EXPECT_NE(waited.err.find("2 succeeded, 1 failed"), std::string::npos) << waited.err;
  EXPECT_NE(waited.err.find("1 of 3 tasks of array"), std::string::npos) << waited.err;
  CommandResult good = cluster().Baton({"submit", "--array", "0-1", "--wait", "--", "true"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
}

// `baton ui` (issue 48): a MUNGE-proven call prints a one-time link; its exchange on the
// dashboard (TLS with the coordinator's certificate) signs the caller in as themselves,
// once; the dashboard then answers as the CLI does for that person.
TEST_F(EndToEnd, BatonUiPrintsALinkThatSignsInOnceAsTheCaller) {
  CommandResult sub = cluster().Baton({"submit", "-q", "--name", "web-visible", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  CommandResult ui = cluster().Baton({"ui", "--json"});
  ASSERT_EQ(ui.exit_code, 0) << ui.err;
  const std::string url_key = "\"url\":\"";
  const size_t at = ui.out.find(url_key);
  ASSERT_NE(at, std::string::npos) << ui.out;
  const std::string url = ui.out.substr(
      at + url_key.size(), ui.out.find('"', at + url_key.size()) - at - url_key.size());
  const std::string origin = "https://" + cluster().web_address();
  ASSERT_EQ(url.rfind(origin + "/login#", 0), 0u) << url;
  const std::string secret = url.substr(url.find('#') + 1);

  const std::string web = cluster().web_address();
  httplib::SSLClient client(web.substr(0, web.rfind(':')),
                            std::stoi(web.substr(web.rfind(':') + 1)));
  client.set_ca_cert_path(cluster().security().ca().c_str());
  client.enable_server_certificate_verification(true);
  const std::string body = "{\"secret\":\"" + secret + "\"}";
  auto login = client.Post("/api/login", {{"Origin", origin}}, body, "application/json");
  ASSERT_TRUE(login) << "TLS to the dashboard, verified against the cluster CA";
  ASSERT_EQ(login->status, 200) << login->body;
  EXPECT_NE(login->body.find(kAlice), std::string::npos) << login->body;
  const std::string cookie = login->get_header_value("Set-Cookie")
                                 .substr(0, login->get_header_value("Set-Cookie").find(';'));
  auto jobs = client.Get("/api/v1/jobs?all=1", {{"Cookie", cookie}});
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200);
  EXPECT_NE(jobs->body.find("web-visible"), std::string::npos) << jobs->body;
  EXPECT_EQ(client.Post("/api/login", {{"Origin", origin}}, body, "application/json")->status, 401)
      << "the link works once";

  // The job page's log tail: a finished job's last bytes from its agent (a negative offset
  // there), as LogChunks, then the end.
  CommandResult printer = cluster().Baton(
      {"submit", "-q", "--", "sh", "-c", "for i in $(seq 1000 1999); do echo line$i; done"});
  ASSERT_EQ(printer.exit_code, 0) << printer.err;
  const uint64_t printed = ClusterClient::SubmittedId(printer.out);
  ASSERT_TRUE(cluster().WaitForState(printed, "JOB_STATE_SUCCEEDED"))
      << cluster().Describe(printed);
  auto tail = client.Get("/api/v1/jobs/" + std::to_string(printed) + "/log/stream?tail=100",
                         {{"Cookie", cookie}});
  ASSERT_TRUE(tail);
  ASSERT_EQ(tail->status, 200) << tail->body;
  EXPECT_EQ(tail->get_header_value("Content-Type"), "text/event-stream");
  std::string text;
  for (size_t pos = 0; (pos = tail->body.find("event: chunk\ndata: ", pos)) != std::string::npos;) {
    pos += 19;
    v1::LogChunk chunk;
    const std::string json = tail->body.substr(pos, tail->body.find('\n', pos) - pos);
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &chunk).ok()) << json;
    text += chunk.data();
  }
  EXPECT_EQ(text.size(), 100u) << text;
  EXPECT_NE(text.find("line1999\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("line1000"), std::string::npos) << "only the tail: " << text;
  EXPECT_NE(tail->body.find("event: end\ndata: {\"message\":\"\",\"ok\":true}"), std::string::npos)
      << tail->body;
  CommandResult bobs =
      cluster().Baton({"submit", "-q", "--class", "inference", "--", "sleep", "600"}, kBob);
  ASSERT_EQ(bobs.exit_code, 0) << bobs.err;
  const uint64_t bob_job = ClusterClient::SubmittedId(bobs.out);
  ASSERT_TRUE(cluster().WaitForState(bob_job, "JOB_STATE_RUNNING")) << cluster().Describe(bob_job);
  auto theirs =
      client.Get("/api/v1/jobs/" + std::to_string(bob_job) + "/log/stream", {{"Cookie", cookie}});
  EXPECT_EQ(theirs->status, 403) << "another tenant's log, as baton logs refuses it: "
                                 << theirs->body;
  EXPECT_EQ(cluster().Baton({"cancel", std::to_string(bob_job)}, kBob).exit_code, 0);

  CommandResult mallory = cluster().Baton({"ui"}, kMallory);
  EXPECT_EQ(mallory.exit_code, 4) << "in no tenant: " << mallory.err;
}

TEST_F(EndToEnd, BadInputIsRefusedWithTheFieldNamedAndNothingStored) {
  std::string yaml = cluster().dir() + "/bad.yaml";
  std::ofstream(yaml) << "name: x\ngpus: [1, 2\n";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string names;
  } cases[] = {
      {{"submit", "--gpus", "1"}, 2, "missing command"},
      {{"submit", "--gpus", "-1", "--", "true"}, 2, "--gpus"},
      {{"submit", "--gpus", "3", "--", "true"}, 2, "gpus_per_node"},
      {{"submit", "--class", "vip", "--", "true"}, 2, "priority_class"},
      {{"submit", "-f", yaml}, 2, "malformed YAML"},
      {{"submit", "--mem", "lots", "--", "true"}, 2, "--mem"},
      {{"status", "424242"}, 3, "not found"},
      {{"status", "abc"}, 2, "invalid job id"},
      {{"cancel", "99"}, 3, "not found"},
  };
  for (const auto& c : cases) {
    CommandResult r = cluster().Baton(c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  CommandResult q = cluster().Baton({"queue", "--all", "--json"});
  EXPECT_EQ(q.exit_code, 0);
  EXPECT_EQ(q.out, "") << "nothing was stored";
}

TEST_F(EndToEnd, ResearchersCannotTouchOtherTenantsJobs) {
  CommandResult sub = cluster().Baton({"submit", "-q", "--", "sleep", "30"});
  uint64_t id = SubmittedId(sub);
  const std::string bob = kBob;  // tenant serving
  EXPECT_EQ(cluster().Baton({"cancel", std::to_string(id)}, bob).exit_code, 4);
  EXPECT_EQ(cluster().Baton({"logs", std::to_string(id)}, bob).exit_code, 4);
  EXPECT_EQ(cluster().Baton({"queue"}, bob).exit_code, 0) << "the queue is visible to all";
  EXPECT_EQ(cluster().Baton({"submit", "--tenant", "vision", "--", "true"}, bob).exit_code, 4);
  EXPECT_EQ(cluster().Baton({"cancel", std::to_string(id)}).exit_code, 0);
}

TEST_F(EndToEnd, AdminsReplaceThePolicyThroughTheCli) {
  TempDir dir("baton-policy");
  chmod(dir.path().c_str(), 0755);  // researchers read the file too
  std::string file = dir.Sub("policy.yaml");
  std::ofstream(file)
      << "classes:\n  - {name: training, value: 300}\n  - {name: urgent, value: 950}\n"
      << TestPolicyAccess();
  std::ofstream(dir.Sub("bad.yaml")) << "classes:\n  - {name: urgent, value: many}\n";
  const std::string admin = kRoot;

  CommandResult get = cluster().Baton({"policy", "get"});
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_NE(get.out.find("policy version 0"), std::string::npos) << get.out;
  EXPECT_EQ(cluster().Baton({"policy", "set", file}).exit_code, 4) << "researchers may not";
  CommandResult bad = cluster().Baton({"policy", "set", dir.Sub("bad.yaml")}, admin);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("value"), std::string::npos) << "names the field: " << bad.err;
  CommandResult set = cluster().Baton({"admin", "policy", "set", file, "-m", "urgent work"}, admin);
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(set.out.find("Policy version 1"), std::string::npos) << set.out;
  get = cluster().Baton({"policy", "get"});
  EXPECT_NE(get.out.find("set by root"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("urgent work"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("{name: urgent, value: 950}"), std::string::npos) << get.out;
  EXPECT_EQ(cluster().Baton({"submit", "--class", "urgent", "--wait", "--", "true"}).exit_code, 0);
}

TEST_F(EndToEnd, ShareShowsWhatEachTenantRuns) {
  CommandResult sub = cluster().Baton({"submit", "-q", "--gpus", "2", "--", "sleep", "30"});
  uint64_t id = SubmittedId(sub);
  ASSERT_TRUE(cluster().WaitForState(id, "JOB_STATE_RUNNING")) << cluster().Describe(id);
  CommandResult share = cluster().Baton({"share", "--json"});
  ASSERT_EQ(share.exit_code, 0) << share.err;
  EXPECT_NE(share.out.find("\"tenant\":\"vision\""), std::string::npos) << share.out;
  EXPECT_NE(share.out.find("\"runningGpus\":2"), std::string::npos) << share.out;
  CommandResult table = cluster().Baton({"share"});
  EXPECT_NE(table.out.find("vision"), std::string::npos) << table.out;
  // The kubectl-style formats, end to end (their text: tests/launcher/golden/).
  CommandResult names = cluster().Baton({"queue", "-o", "name"});
  EXPECT_NE(("\n" + names.out).find("\njob/" + std::to_string(id) + "\n"), std::string::npos)
      << names.out << names.err;
  CommandResult yaml = cluster().Baton({"status", std::to_string(id), "-o", "yaml"});
  EXPECT_EQ(yaml.out.rfind("---\nid: \"" + std::to_string(id) + "\"\n", 0), 0u) << yaml.out;
  CommandResult bad = cluster().Baton({"nodes", "-o", "xml"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'xml'"), std::string::npos) << bad.err;
  EXPECT_EQ(cluster().Baton({"cancel", std::to_string(id)}).exit_code, 0);
}

TEST(EndToEndShares, SharesOfOneUserRunTogetherOnAnMpsPoolUnderItsDaemon) {
  if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  // No agent at first: the one added offers its GPU 0 as an MPS pool, run by the fake
  // control program; inference may share.
  std::string policy = TestPolicyYaml("");
  policy.replace(policy.find("{name: inference, value: 900, service: true"),
                 std::string("{name: inference, value: 900, service: true").size(),
                 "{name: inference, value: 900, service: true, gpu_sharing: mps");
  LocalCluster cluster(/*agents=*/0, /*gpus=*/0, policy);
  ASSERT_TRUE(cluster.AddAgent(
      /*gpus=*/2, {"--mps-gpus", "0", "--mps-control",
                   std::string(BATON_SOURCE_DIR) + "/tests/launcher/fake_mps_control.sh"}));
  auto share = [&](const std::string& percent, const std::string& memory,
                   const std::string& sleep = "60") {
    return SubmittedId(cluster.Baton(
        {"submit", "-q", "--class", "inference", "--gpu-share", percent, "--gpu-mem", memory,
         "--cpus", "1", "--", "sh", "-c",
         "echo share=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE pipe=$CUDA_MPS_PIPE_DIRECTORY; sleep " +
             sleep},
        kBob));
  };
  const uint64_t a = share("60%", "20Gi", "61"), b = share("40%", "20Gi");
  ASSERT_TRUE(cluster.WaitForState(a, "JOB_STATE_RUNNING")) << cluster.Describe(a);
  ASSERT_TRUE(cluster.WaitForState(b, "JOB_STATE_RUNNING")) << cluster.Describe(b);
  std::optional<v1::Job> ja = cluster.GetJob(a), jb = cluster.GetJob(b);
  ASSERT_TRUE(ja && jb);
  const std::string gpu = ja->attempts(0).placement(0).gpu_ids(0);
  EXPECT_EQ(jb->attempts(0).placement(0).gpu_ids(0), gpu) << "one pool holds both";
  const uint64_t c = share("10%", "1Gi");
  ASSERT_NE(c, 0u);
  CommandResult why;
  for (int i = 0; i < 50; ++i) {  // until a pass has looked at it
    why = cluster.Baton({"explain", std::to_string(c)}, kBob);
    if (why.out.find("MPS pool") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(why.out.find("10% share with 1Gi of a GPU offered as an MPS pool"), std::string::npos)
      << why.out;
  CommandResult nodes = cluster.Baton({"nodes"});
  EXPECT_NE(nodes.out.find("gpu0 0% 40Gi free (baton-bob)"), std::string::npos) << nodes.out;
  std::string log;
  for (int i = 0; i < 50 && log.find("share=60") == std::string::npos; ++i) {
    log = cluster.Baton({"logs", std::to_string(a)}, kBob).out;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(log.find("share=60 pipe=" + cluster.dir() + "/n1/mps/" + gpu + "/pipe"),
            std::string::npos)
      << log;
  // An MPS server fault: the GPU's control daemon dies, and every client of the GPU with
  // it (here job a's process, killed after the daemon). The agent finds the daemon dead,
  // starts it again, and reports a's end as the fault's, not as the job's own failure.
  const std::string pidfile =
      cluster.dir() + "/n1/mps/" + gpu + "/pipe/nvidia-cuda-mps-control.pid";
  const std::string daemon = ReadFile(pidfile);
  ASSERT_FALSE(daemon.empty()) << pidfile;
  ASSERT_EQ(kill(std::stoi(daemon), SIGKILL), 0);
  ASSERT_EQ(testing::RunProcess({"pkill", "-KILL", "-f", "sleep 61"}, {}).exit_code, 0);
  CommandResult status;
  for (int i = 0; i < 100; ++i) {
    status = cluster.Baton({"status", std::to_string(a)}, kBob);
    if (status.out.find("MPS server of its GPU failed") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(status.out.find("the MPS server of its GPU failed"), std::string::npos) << status.out;
  bool again = false;  // the daemon was started again for the shares that remain
  for (int i = 0; i < 100 && !again; ++i) {
    const std::string now = ReadFile(pidfile);
    again = !now.empty() && now != daemon && kill(std::stoi(now), 0) == 0;
    if (!again) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(again) << "no new MPS daemon for b's share";
  for (uint64_t id : {a, b, c}) cluster.Baton({"cancel", std::to_string(id)}, kBob);
}

// A class whose policy names an MPS service user (baton-mallory here): shares of alice and
// bob run as that user and fill one pool together; training takes the whole GPUs only, and
// waits for them rather than take a pool. (Two services: each holds a core of its own, and
// this machine has two. Three on a pool and a fourth on the next are JobManagerShares'.)
TEST(EndToEndShares, AServiceUserThePolicyNamesRunsSeveralOwnersSharesOnOnePool) {
  if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  std::string policy = TestPolicyYaml("");
  policy.replace(policy.find("{name: inference, value: 900, service: true"),
                 std::string("{name: inference, value: 900, service: true").size(),
                 std::string("{name: inference, value: 900, service: true, gpu_sharing: mps, "
                             "mps_user: ") +
                     kMallory);
  // alice's tenant (vision) may use the class too: two owners of two tenants.
  const size_t tenants = policy.find("tenants: [serving]", policy.find("{name: inference, value"));
  ASSERT_NE(tenants, std::string::npos);
  policy.replace(tenants, std::string("tenants: [serving]").size(), "tenants: [serving, vision]");
  LocalCluster cluster(/*agents=*/0, /*gpus=*/0, policy);
  ASSERT_TRUE(cluster.AddAgent(
      /*gpus=*/4, {"--mps-gpus", "0,1", "--mps-control",
                   std::string(BATON_SOURCE_DIR) + "/tests/launcher/fake_mps_control.sh"}));
  auto share = [&](const std::string& user) {
    CommandResult r = cluster.Baton(
        {"submit", "-q", "--class", "inference", "--gpu-share", "30%", "--gpu-mem", "4Gi", "--cpus",
         "500m", "--", "sh", "-c", "echo runs-as=$(id -un); sleep 60"},
        user);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return SubmittedId(r);
  };
  std::vector<uint64_t> ids = {share(kAlice), share(kBob)};
  std::set<std::string> gpus;
  for (uint64_t id : ids) {
    ASSERT_TRUE(cluster.WaitForState(id, "JOB_STATE_RUNNING"))
        << cluster.Describe(id) << cluster.Baton({"explain", std::to_string(id)}).out
        << cluster.Baton({"nodes"}).out;
    std::optional<v1::Job> job = cluster.GetJob(id);
    ASSERT_TRUE(job);
    gpus.insert(job->attempts(0).placement(0).gpu_ids(0));
    EXPECT_EQ(job->attempts(0).run_as(), kMallory);
  }
  EXPECT_EQ(gpus.size(), 1u) << "two owners' shares on one pool";
  std::string log;
  for (int i = 0; i < 50 && log.find("runs-as=") == std::string::npos; ++i) {
    log = cluster.Baton({"logs", std::to_string(ids[1])}, kBob).out;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(log.find(std::string("runs-as=") + kMallory), std::string::npos) << log;
  EXPECT_NE(cluster.Baton({"status", std::to_string(ids[1])}, kBob)
                .out.find(std::string("ran as ") + kMallory),
            std::string::npos);
  CommandResult nodes = cluster.Baton({"nodes"});
  EXPECT_NE(nodes.out.find(std::string("40% 72Gi free (") + kMallory + ")"), std::string::npos)
      << nodes.out;
  ASSERT_EQ(cluster.Baton({"cancel", std::to_string(ids[0])}).exit_code, 0);
  ASSERT_EQ(cluster.Baton({"cancel", std::to_string(ids[1])}, kBob).exit_code, 0);
  for (uint64_t id : ids) ASSERT_TRUE(cluster.WaitForState(id, "JOB_STATE_CANCELLED"));
  // Then training (the services gone: each held one of this machine's two cores): of four
  // GPUs two are pools, so a 2-GPU job takes the whole ones, and a third GPU waits rather
  // than take a pool.
  const uint64_t train = SubmittedId(
      cluster.Baton({"submit", "-q", "--gpus", "2", "--cpus", "100m", "--", "sleep", "60"}));
  ASSERT_TRUE(cluster.WaitForState(train, "JOB_STATE_RUNNING")) << cluster.Describe(train);
  const std::optional<v1::Job> trained = cluster.GetJob(train);
  ASSERT_TRUE(trained && trained->attempts_size() == 1);
  for (const std::string& g : trained->attempts(0).placement(0).gpu_ids()) {
    EXPECT_TRUE(g == "GPU-fake-n1-2" || g == "GPU-fake-n1-3") << g << " is a pool";
  }
  const uint64_t waits =
      SubmittedId(cluster.Baton({"submit", "-q", "--gpus", "1", "--cpus", "100m", "--", "true"}));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(cluster.GetJob(waits)->state(), v1::JOB_STATE_PENDING)
      << "two empty pools are not whole GPUs";
  for (uint64_t id : {train, waits}) cluster.Baton({"cancel", std::to_string(id)});
}

TEST_F(EndToEnd, AnUnreachableCoordinatorIsUnavailableNotAHang) {
  std::map<std::string, std::string> env = cluster().ClientEnv();
  env["BATON_COORDINATOR"] = "127.0.0.1:1";
  CommandResult r = testing::RunProcess({Bin("baton"), "queue", "--timeout", "3s"}, env);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("unavailable"), std::string::npos) << r.err;
}

TEST_F(EndToEnd, JobsSurviveKillNineOfTheCoordinator) {
  CommandResult running =
      cluster().Baton({"submit", "-q", "--gpus", "2", "--", "sh", "-c", "sleep 2; echo done"});
  uint64_t run_id = SubmittedId(running);
  ASSERT_TRUE(cluster().WaitForState(run_id, "JOB_STATE_RUNNING"));
  uint64_t pending_id = SubmittedId(cluster().Baton({"submit", "-q", "--gpus", "2", "--", "true"}));
  EXPECT_EQ(cluster().StateOf(pending_id), "JOB_STATE_PENDING") << "no GPU left";

  cluster().KillCoordinator(SIGKILL);
  cluster().StartCoordinator();
  EXPECT_EQ(cluster().StateOf(pending_id), "JOB_STATE_PENDING") << "acknowledged, so kept";
  // The agent reconnects; the running job's end is recorded, then the pending job runs.
  EXPECT_TRUE(cluster().WaitForState(run_id, "JOB_STATE_SUCCEEDED"));
  EXPECT_TRUE(cluster().WaitForState(pending_id, "JOB_STATE_SUCCEEDED"));
  CommandResult logs = cluster().Baton({"logs", std::to_string(run_id)});
  EXPECT_EQ(logs.out, "[rank 0] done\n");
  CommandResult status = cluster().Baton({"status", std::to_string(run_id)});
  EXPECT_EQ(std::count(status.out.begin(), status.out.end(), '#'), 1)
      << "ran once, not twice: " << status.out;
}

}  // namespace
}  // namespace baton::testing
