// Hostile and careless requests against a real coordinator over gRPC: specs past every
// bound are refused by the coordinator itself (not only the CLI) with the field named,
// a spec at every bound launches and runs, a tenant's flood is throttled (exit 7, the
// retry hint) while another tenant submits, followed streams past the cap are refused
// with the coordinator's threads bounded, and over-long cancel reasons are refused.
#include <dirent.h>

#include <fstream>
#include <thread>

#include "common/munge.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/api.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"
#include "tests/integration/local_cluster.h"

namespace baton::testing {
namespace {

using ::testing::HasSubstr;

// The test policy, with a small submit budget per tenant: 3 at once, then one per 5 s.
std::string ThrottledPolicy() {
  return TestPolicyYaml() + "\nadmission:\n  submit_rate: 0.2\n  submit_burst: 3\n";
}

class HostileInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!MissingTestUsers().empty()) return;
    cluster_ = new LocalCluster(/*agents=*/1, /*gpus=*/0, ThrottledPolicy());
    files_ = new TempDir("baton-hostile");
    chmod(files_->path().c_str(), 0755);  // the CLI reads these as test users
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete files_;
  }
  void SetUp() override {
    if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  }

  static std::unique_ptr<v1::Coordinator::Stub> Coordinator() { return cluster_->ApiStub(); }
  // This process's credential (root, the admin) on `ctx`.
  static void Prove(grpc::ClientContext* ctx) {
    ctx->AddMetadata(kMungeKey, cluster_->MungeCredential());
  }
  static std::string File(const std::string& name, const std::string& text) {
    std::string path = files_->Sub(name);
    std::ofstream(path) << text;
    chmod(path.c_str(), 0644);
    return path;
  }
  // The thread count of this cluster's `binary` (its command line names the cluster's
  // directory), from /proc; -1 when it is not running. The agent's keepers are forks with
  // its command line and one thread: the daemon is the one with the most.
  static int Threads(const std::string& binary) {
    DIR* proc = opendir("/proc");
    int threads = -1;
    for (dirent* d; proc && (d = readdir(proc));) {
      std::string pid = d->d_name;
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream cmd("/proc/" + pid + "/cmdline");
      std::string argv((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      if (argv.find(binary) == std::string::npos ||
          argv.find(cluster_->dir()) == std::string::npos) {
        continue;
      }
      std::ifstream status("/proc/" + pid + "/status");
      for (std::string line; std::getline(status, line);) {
        if (line.rfind("Threads:", 0) == 0) threads = std::max(threads, std::stoi(line.substr(8)));
      }
    }
    if (proc) closedir(proc);
    return threads;
  }
  static int CoordinatorThreads() { return Threads("baton-coordinator"); }

  static inline LocalCluster* cluster_ = nullptr;
  static inline TempDir* files_ = nullptr;
};

TEST_F(HostileInput, OversizedSpecsAreRefusedByTheCoordinatorNamingTheField) {
  struct Case {
    const char* what;
    std::function<void(v1::JobSpec*)> grow;
    const char* field;
  } cases[] = {
      {"5 MiB of env",
       [](v1::JobSpec* s) {
         for (int i = 0; i < 40; ++i) {
           (*s->mutable_env())["BIG" + std::to_string(i)] = std::string(128 << 10, 'x');
         }
       },
       "spec.env"},
      {"100k selectors",
       [](v1::JobSpec* s) {
         for (int i = 0; i < 100'000; ++i)
           (*s->mutable_node_selector())["s" + std::to_string(i)] = "";
       },
       "spec.node_selector"},
      {"a 1 MiB name", [](v1::JobSpec* s) { s->set_name(std::string(1 << 20, 'n')); }, "spec.name"},
  };
  auto stub = Coordinator();
  for (const auto& c : cases) {
    v1::SubmitRequest req;
    req.mutable_spec()->add_command("true");
    c.grow(req.mutable_spec());
    grpc::ClientContext ctx;
    Prove(&ctx);
    v1::SubmitResponse resp;
    grpc::Status s = stub->Submit(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.what << ": " << s.error_message();
    EXPECT_EQ(s.error_message().rfind(c.field, 0), 0u) << c.what << ": " << s.error_message();
    EXPECT_LT(s.error_message().size(), 400u) << c.what;
  }
  // Nothing was stored for them, and listing everything still works for everyone.
  CommandResult q = cluster_->Baton({"queue", "--all"}, kBob);
  EXPECT_EQ(q.exit_code, 0) << q.err;
}

TEST_F(HostileInput, ASpecAtEveryBoundLaunchesAndRuns) {
  // 256 variables of 256 bytes (names, values, '=' and NUL): exactly 64 KiB; a command of
  // 64 KiB; 64 tolerations. The job checks that its last variable arrived whole.
  std::string yaml = "name: bounds\ncommand: [sh, -c, 'test ${#V0255} -eq 248 && echo whole', " +
                     std::string(64 * 1024 - 80, 'c') + "]\nenv:\n";
  for (int i = 0; i < 256; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "V%04d", i);
    yaml += std::string("  ") + name + ": " + std::string(248, 'v') + "\n";
  }
  yaml += "tolerations:\n";
  for (int i = 0; i < 64; ++i) yaml += "  - {key: t" + std::to_string(i) + "}\n";
  CommandResult r = cluster_->Baton({"submit", "-q", "--wait", "-f", File("bounds.yaml", yaml)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  uint64_t id = ClusterClient::SubmittedId(r.out);
  CommandResult logs = cluster_->Baton({"logs", std::to_string(id)});
  EXPECT_THAT(logs.out, HasSubstr("whole"));
}

TEST_F(HostileInput, AFloodIsThrottledWithExitSevenWhileAnotherTenantSubmits) {
  int throttled = 0, accepted = 0;
  std::string said;
  for (int i = 0; i < 8; ++i) {
    CommandResult r;
    // A CLI that never reached the coordinator (exit 5: on two busy cores a TLS handshake
    // can time out) sent nothing and took no token: it tries again, as a script would.
    for (int tries = 0; tries < 3; ++tries) {
      r = cluster_->Baton({"submit", "-q", "--", "true"});
      if (r.exit_code != 5) break;
    }
    if (r.exit_code == 7) {
      ++throttled;
      said = r.err;
    } else {
      EXPECT_EQ(r.exit_code, 0) << r.err;
      ++accepted;
    }
  }
  EXPECT_GE(throttled, 1) << "8 submits with a burst of 3 and one more per 5 s";
  EXPECT_LE(accepted, 3 + 3) << "never more than the bucket gives (8 CLI runs take < 15 s)";
  EXPECT_THAT(said, HasSubstr("throttled: tenant vision"));
  EXPECT_THAT(said, HasSubstr("retry in"));
  // bob's tenant has its own bucket.
  CommandResult bob = cluster_->Baton({"submit", "-q", "--", "true"}, kBob);
  EXPECT_EQ(bob.exit_code, 0) << bob.err;
  // The hint also travels as trailing metadata for programs.
  auto stub = Coordinator();
  bool hinted = false;
  for (int i = 0; i < 10 && !hinted; ++i) {
    v1::SubmitRequest req;
    req.mutable_spec()->add_command("true");
    req.mutable_spec()->set_tenant("made-up-tenant-" + std::to_string(i));  // not a way out
    grpc::ClientContext ctx;
    Prove(&ctx);
    v1::SubmitResponse resp;
    grpc::Status s = stub->Submit(&ctx, req, &resp);
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      auto it = ctx.GetServerTrailingMetadata().find(kRetryAfterKey);
      ASSERT_NE(it, ctx.GetServerTrailingMetadata().end()) << s.error_message();
      EXPECT_GT(std::stoi(std::string(it->second.data(), it->second.size())), 0);
      hinted = true;
    }
  }
  EXPECT_TRUE(hinted) << "root's refused submits spend its bucket too";
}

TEST_F(HostileInput, FollowersPastTheCapAreRefusedAndThreadsStayBounded) {
  auto stub = Coordinator();
  int before = CoordinatorThreads();
  ASSERT_GT(before, 0);
  struct Follower {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::Event>> reader;
  };
  std::vector<std::unique_ptr<Follower>> open;
  v1::EventsRequest req;
  req.set_follow(true);
  req.set_tail(1);
  for (int i = 0; i < 16; ++i) {
    auto f = std::make_unique<Follower>();
    Prove(&f->ctx);
    f->reader = stub->Events(&f->ctx, req);
    v1::Event ev;
    ASSERT_TRUE(f->reader->Read(&ev)) << "follower " << i << " is served";
    open.push_back(std::move(f));
  }
  for (int i = 0; i < 50; ++i) {
    grpc::ClientContext ctx;
    Prove(&ctx);
    auto reader = stub->Events(&ctx, req);
    v1::Event ev;
    EXPECT_FALSE(reader->Read(&ev));
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    if (i == 0) {
      EXPECT_THAT(s.error_message(), HasSubstr("already follows 16 streams"));
    }
  }
  // A thread per follower would add 16.
  EXPECT_LE(CoordinatorThreads(), before + 6) << "followers and refusals hold no thread";
  // A follower that ends gives its place back.
  open.back()->ctx.TryCancel();
  open.back()->reader->Finish();
  open.pop_back();
  bool again = false;
  for (int i = 0; i < 50 && !again; ++i) {
    auto f = std::make_unique<Follower>();
    Prove(&f->ctx);
    f->reader = stub->Events(&f->ctx, req);
    v1::Event ev;
    again = f->reader->Read(&ev);
    if (again) {
      open.push_back(std::move(f));
    } else {
      f->reader->Finish();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  EXPECT_TRUE(again);
  for (auto& f : open) f->ctx.TryCancel();
  for (auto& f : open) f->reader->Finish();
}

TEST_F(HostileInput, FollowedLogsHoldNoThreadInTheCoordinatorOrTheAgent) {
  // This cluster's submit budget is small (one per 5 s after 3): wait for it if need be.
  CommandResult sub;
  for (int i = 0; i < 20; ++i) {
    sub = cluster_->Baton(
        {"submit", "-q", "--", "sh", "-c", "echo started; while :; do echo tick; sleep 0.2; done"},
        kBob);
    if (sub.exit_code != 7) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  uint64_t job = std::stoull(sub.out);
  ASSERT_TRUE(cluster_->WaitForState(job, "JOB_STATE_RUNNING")) << cluster_->Describe(job);
  auto stub = Coordinator();
  struct Follower {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::LogChunk>> reader;
  };
  v1::LogsRequest req;
  req.set_job_id(job);
  req.set_follow(true);
  auto open_one = [&] {
    auto f = std::make_unique<Follower>();
    Prove(&f->ctx);
    f->reader = stub->Logs(&f->ctx, req);
    std::string seen;
    v1::LogChunk chunk;
    while (seen.find("started") == std::string::npos && f->reader->Read(&chunk)) {
      seen += chunk.data();
    }
    EXPECT_THAT(seen, HasSubstr("started"));
    return f;
  };
  open_one()->ctx.TryCancel();  // warm both sides' gRPC up before counting
  int coordinator_before = CoordinatorThreads();
  int agent_before = Threads("baton-agent");
  ASSERT_GT(agent_before, 0);
  std::vector<std::unique_ptr<Follower>> open;
  for (int i = 0; i < 16; ++i) open.push_back(open_one());
  // A thread per follower would add 16 to each.
  EXPECT_LE(CoordinatorThreads(), coordinator_before + 6);
  EXPECT_LE(Threads("baton-agent"), agent_before + 6);
  // They still follow: each gets lines written after it was counted.
  for (auto& f : open) {
    v1::LogChunk chunk;
    std::string seen;
    while (seen.find("tick") == std::string::npos && f->reader->Read(&chunk)) seen = chunk.data();
    EXPECT_THAT(seen, HasSubstr("tick"));
  }
  for (auto& f : open) f->ctx.TryCancel();
  for (auto& f : open) f->reader->Finish();
  CommandResult cancel = cluster_->Baton({"cancel", std::to_string(job)}, kBob);
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
}

TEST_F(HostileInput, AnOverlongCancelReasonIsRefused) {
  auto stub = Coordinator();
  v1::CancelRequest req;
  req.set_job_id(1);
  req.set_reason(std::string(2048, 'r'));
  grpc::ClientContext ctx;
  Prove(&ctx);
  v1::CancelResponse resp;
  grpc::Status s = stub->Cancel(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("reason"));
}

}  // namespace
}  // namespace baton::testing
