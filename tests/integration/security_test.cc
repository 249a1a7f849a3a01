// Proven callers, attacked: a real coordinator and two real agents on loopback, TLS under
// the cluster's own CA, a private munged, the CLI run as the test users. Each test is an
// attack that succeeds if its defence is removed: forged identity metadata, replayed,
// expired and foreign MUNGE credentials, revoked tokens, agents without (or with the
// wrong) certificate, log reads around the coordinator, non-admins changing the policy,
// tenants taking the service classes, other tenants' secrets, plaintext.
#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "common/munge.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/agent.grpc.pb.h"
#include "proto/api.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"
#include "tests/integration/local_cluster.h"

namespace baton::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class Security : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!MissingTestUsers().empty()) return;
    cluster_ = new LocalCluster(/*agents=*/2, /*gpus=*/2);
    files_ = new TempDir("baton-security");
    chmod(files_->path().c_str(), 0755);  // the CLI reads these as test users
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete files_;
  }
  void SetUp() override {
    if (std::string missing = MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  }

  static TlsMaterial Tls(const std::string& cert = "", const std::string& key = "") {
    auto tls = LoadTls({cluster_->security().ca(), cert, key}, /*need_cert=*/!cert.empty());
    EXPECT_TRUE(tls.ok()) << tls.status();
    return tls.ok() ? *tls : TlsMaterial{};
  }
  static std::unique_ptr<v1::Coordinator::Stub> Coordinator() { return cluster_->ApiStub(); }
  static std::string Credential(std::string_view payload = kMungeAudience, int ttl = 0) {
    return cluster_->MungeCredential(payload, ttl);
  }
  static grpc::Status Ping(const std::string& munge_credential) {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kMungeKey, munge_credential);
    v1::PingResponse resp;
    return Coordinator()->Ping(&ctx, v1::PingRequest(), &resp);
  }
  static std::string File(const std::string& name, const std::string& text) {
    std::string path = files_->Sub(name);
    std::ofstream(path) << text;
    return path;
  }
  static uint64_t Submit(const std::vector<std::string>& args, const std::string& user = kAlice) {
    std::vector<std::string> all = {"submit", "-q"};
    all.insert(all.end(), args.begin(), args.end());
    CommandResult r = cluster_->Baton(all, user);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ClusterClient::SubmittedId(r.out);
  }
  // `field` of node `name` in `baton nodes --json`.
  static std::string NodeJson(const std::string& name) {
    CommandResult r = cluster_->Baton({"nodes", "--json"}, kRoot);
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"name\":\"" + name + "\"") != std::string::npos) return line;
    }
    return "";
  }

  static inline LocalCluster* cluster_ = nullptr;
  static inline TempDir* files_ = nullptr;
};

TEST_F(Security, ClaimedIdentityWithoutACredentialIsRefused) {
  // What every caller could send before: who it says it is.
  for (auto call : {0, 1, 2}) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-baton-user", "root");
    ctx.AddMetadata("x-baton-tenant", "ops");
    ctx.AddMetadata("x-baton-role", "admin");
    auto stub = Coordinator();
    grpc::Status s;
    if (call == 0) {
      v1::ListResponse resp;
      s = stub->List(&ctx, v1::ListRequest(), &resp);
    } else if (call == 1) {
      v1::SetPolicyRequest req;
      req.set_yaml("admins: [mallory]\n");
      v1::PolicyVersion resp;
      s = stub->SetPolicy(&ctx, req, &resp);
    } else {
      v1::SubmitRequest req;
      req.mutable_spec()->add_command("true");
      v1::SubmitResponse resp;
      s = stub->Submit(&ctx, req, &resp);
    }
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << call;
    EXPECT_THAT(s.error_message(), HasSubstr("no credential")) << call;
  }
  // The issue's own attack, through the CLI: the claim is ignored, the proven uid wins.
  std::string policy = File("takeover.yaml", "admins: [baton-mallory]\n");
  std::map<std::string, std::string> claims = {{"BATON_ROLE", "admin"}, {"BATON_USER", "root"}};
  CommandResult mallory =
      cluster_->Baton({"admin", "policy", "set", policy, "--dry-run"}, kMallory, claims);
  EXPECT_EQ(mallory.exit_code, 4) << mallory.out;
  EXPECT_THAT(mallory.err, HasSubstr("baton-mallory is a member of no tenant"));
  CommandResult alice =
      cluster_->Baton({"admin", "policy", "set", policy, "--dry-run"}, kAlice, claims);
  EXPECT_EQ(alice.exit_code, 4) << alice.out;
  EXPECT_THAT(alice.err, HasSubstr("baton-alice is not an admin"));
}

TEST_F(Security, AMungeCredentialIsGoodForOneCallWithinItsTtlAndForBatonOnly) {
  std::string cred = Credential();
  EXPECT_TRUE(Ping(cred).ok());
  grpc::Status replayed = Ping(cred);
  EXPECT_EQ(replayed.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(replayed.error_message(), HasSubstr("replayed"));

  std::string foreign = Credential("slurm");  // made for another service that uses MUNGE
  grpc::Status refused = Ping(foreign);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(refused.error_message(), HasSubstr("not made for baton"));

  std::string short_lived = Credential(kMungeAudience, /*ttl=*/1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));  // MUNGE counts seconds
  grpc::Status expired = Ping(short_lived);
  EXPECT_EQ(expired.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(expired.error_message(), HasSubstr("expired"));
}

TEST_F(Security, AServiceTokenActsAsItsUserUntilRevokedAndOnlyAdminsManageThem) {
  CommandResult denied = cluster_->Baton({"admin", "token", "create", "--user", kAlice}, kAlice);
  EXPECT_EQ(denied.exit_code, 4) << "a researcher may not mint tokens: " << denied.out;
  EXPECT_EQ(cluster_->Baton({"admin", "token", "list"}, kAlice).exit_code, 4);
  CommandResult unknown =
      cluster_->Baton({"admin", "token", "create", "--user", "no-such-user"}, kRoot);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("no-such-user"));
  CommandResult not_member =
      cluster_->Baton({"admin", "token", "create", "--user", kAlice, "--tenant", "serving"}, kRoot);
  EXPECT_EQ(not_member.exit_code, 2);
  EXPECT_THAT(not_member.err, HasSubstr("not a member of 'serving'"));

  CommandResult made = cluster_->Baton(
      {"admin", "token", "create", "--user", kAlice, "--ttl", "1h", "-m", "ci"}, kRoot);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string token = made.out.substr(0, made.out.find('\n'));
  ASSERT_THAT(token, ::testing::StartsWith("btk_"));
  std::string id = token.substr(4, 16);
  std::map<std::string, std::string> bearer = {{"BATON_TOKEN", token}};

  // Whoever holds it acts as its user: here a process of root's, which proves nothing else.
  CommandResult who = cluster_->Baton({"whoami"}, kRoot, bearer);
  ASSERT_EQ(who.exit_code, 0) << who.err;
  EXPECT_THAT(who.out, HasSubstr("baton-alice"));
  EXPECT_THAT(who.out, HasSubstr("proven by token " + id));
  EXPECT_THAT(who.out, HasSubstr("admin:   no"));
  uint64_t job = Submit({"--", "true"});
  CommandResult sub = cluster_->Baton({"submit", "-q", "--", "true"}, kRoot, bearer);
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  uint64_t by_token = ClusterClient::SubmittedId(sub.out);
  ASSERT_NE(job, 0u);
  EXPECT_EQ(cluster_->GetJob(by_token)->user(), kAlice) << "its jobs are its user's";
  EXPECT_EQ(cluster_->GetJob(by_token)->spec().tenant(), "vision");

  CommandResult listed = cluster_->Baton({"admin", "token", "list", "--json"}, kRoot);
  EXPECT_THAT(listed.out, HasSubstr(id));
  EXPECT_THAT(listed.out, Not(HasSubstr(token.substr(21)))) << "never the secret";

  CommandResult revoke = cluster_->Baton({"admin", "token", "revoke", id}, kRoot);
  ASSERT_EQ(revoke.exit_code, 0) << revoke.err;
  CommandResult after = cluster_->Baton({"whoami"}, kRoot, bearer);
  EXPECT_EQ(after.exit_code, 4) << "refused from the moment revoke returned";
  EXPECT_THAT(after.err, HasSubstr("revoked by root"));
  std::map<std::string, std::string> forged = {{"BATON_TOKEN", "btk_" + id + "_guess"}};
  EXPECT_EQ(cluster_->Baton({"whoami"}, kRoot, forged).exit_code, 4);
  CommandResult audit = cluster_->Baton({"events", "--kind", "policy"}, kRoot);
  EXPECT_THAT(audit.out, HasSubstr("service token " + id + " created for baton-alice"));
  EXPECT_THAT(audit.out, HasSubstr("service token " + id + " of baton-alice revoked"));
  EXPECT_THAT(audit.out, Not(HasSubstr(token.substr(21)))) << "the audit log holds no secret";
}

TEST_F(Security, ConnectNeedsTheNodesOwnCertificateAndTheRealNodeKeepsItsLink) {
  // Both nodes run a job that holds all their GPUs.
  uint64_t a = Submit({"--gpus", "2", "--", "sleep", "600"});
  uint64_t b = Submit({"--gpus", "2", "--", "sleep", "600"});
  ASSERT_TRUE(cluster_->WaitForState(a, "JOB_STATE_RUNNING")) << cluster_->Describe(a);
  ASSERT_TRUE(cluster_->WaitForState(b, "JOB_STATE_RUNNING")) << cluster_->Describe(b);
  uint64_t on_n2 = cluster_->GetJob(a)->attempts(0).placement(0).node() == "n2" ? a : b;

  auto [n1_cert, n1_key] = cluster_->security().NodeCert("n1");
  std::string dir = cluster_->dir() + "/tls";
  struct Attempt {
    TlsMaterial tls;
    grpc::StatusCode want;
    std::string says;
  } attempts[] = {
      {Tls(), grpc::StatusCode::UNAUTHENTICATED, "needs a node certificate"},
      {Tls(n1_cert, n1_key), grpc::StatusCode::PERMISSION_DENIED,
       "node n1 may not register as node n2"},
      {Tls(dir + "/coordinator.crt", dir + "/coordinator.key"), grpc::StatusCode::PERMISSION_DENIED,
       "is not a node's"},
  };
  for (auto& at : attempts) {
    auto creds = ChannelCredentials(at.tls, cluster_->coordinator());
    auto stub = v1::AgentControl::NewStub(grpc::CreateChannel(cluster_->coordinator(), *creds));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = stub->Connect(&ctx);
    v1::AgentMessage reg;
    reg.mutable_register_()->set_node("n2");
    reg.mutable_register_()->set_address("127.0.0.1:1");
    reg.mutable_register_()->mutable_inventory()->set_cpus(64);
    stream->Write(reg);
    stream->WritesDone();
    v1::CoordinatorCommand cmd;
    bool launched = false;
    while (stream->Read(&cmd)) launched |= cmd.has_launch() || cmd.has_registered();
    grpc::Status s = stream->Finish();
    EXPECT_FALSE(launched) << at.says;
    EXPECT_EQ(s.error_code(), at.want) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(at.says));
  }
  EXPECT_THAT(NodeJson("n2"), HasSubstr("NODE_STATE_READY"));
  EXPECT_THAT(NodeJson("n2"), Not(HasSubstr("\"address\":\"127.0.0.1:1\"")))
      << "not the impostor's address";
  CommandResult node_events = cluster_->Baton({"events", "--kind", "node", "--json"}, kRoot);
  EXPECT_EQ(node_events.out.find("\"code\":\"disconnected\""), std::string::npos)
      << node_events.out;
  auto job = cluster_->GetJob(on_n2);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job->attempts_size(), 1) << "its job was never touched";
  for (uint64_t id : {a, b})
    EXPECT_EQ(cluster_->Baton({"cancel", std::to_string(id)}).exit_code, 0);
}

TEST_F(Security, AnAgentServesLogsToTheCoordinatorsCertificateOnly) {
  uint64_t id = Submit({"--", "sh", "-c", "echo private output; sleep 600"});
  ASSERT_TRUE(cluster_->WaitForState(id, "JOB_STATE_RUNNING")) << cluster_->Describe(id);
  auto job = cluster_->GetJob(id);
  std::string node = job->attempts(0).placement(0).node();
  std::string line = NodeJson(node);
  size_t at = line.find("\"address\":\"");
  ASSERT_NE(at, std::string::npos) << line;
  std::string address = line.substr(at + 11, line.find('"', at + 11) - at - 11);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", std::to_string(id)}).out.find("private output") !=
               std::string::npos;
      },
      std::chrono::seconds(10)))
      << "through the coordinator, its owner reads it";

  std::string other = node == "n1" ? "n2" : "n1";
  auto [other_cert, other_key] = cluster_->security().NodeCert(other);
  std::string dir = cluster_->dir() + "/tls";
  struct Reader {
    TlsMaterial tls;
    grpc::StatusCode want;
  } readers[] = {
      {Tls(), grpc::StatusCode::UNAUTHENTICATED},
      {Tls(other_cert, other_key), grpc::StatusCode::PERMISSION_DENIED},
      {Tls(dir + "/coordinator.crt", dir + "/coordinator.key"), grpc::StatusCode::OK},
  };
  for (auto& r : readers) {
    grpc::ChannelArguments args;
    VerifyServerAs(node, &args);
    auto creds = ChannelCredentials(r.tls, address);
    auto stub = v1::Agent::NewStub(grpc::CreateCustomChannel(address, *creds, args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ReadLogsRequest req;
    req.set_job_id(id);
    req.set_attempt(1);
    auto reader = stub->ReadLogs(&ctx, req);
    std::string got;
    for (v1::LogChunk chunk; reader->Read(&chunk);) got += chunk.data();
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), r.want) << s.error_message();
    EXPECT_EQ(got.find("private output") != std::string::npos, r.want == grpc::StatusCode::OK);
  }
  EXPECT_EQ(cluster_->Baton({"cancel", std::to_string(id)}).exit_code, 0);
}

TEST_F(Security, OnlyAdminsChangeThePolicyEvenInADryRun) {
  std::string policy = File("policy.yaml", TestPolicyYaml());
  CommandResult alice = cluster_->Baton({"admin", "policy", "set", policy, "--dry-run"}, kAlice);
  EXPECT_EQ(alice.exit_code, 4);
  EXPECT_THAT(alice.err, HasSubstr("only admins change the policy"));
  CommandResult root = cluster_->Baton({"admin", "policy", "set", policy, "--dry-run"}, kRoot);
  EXPECT_EQ(root.exit_code, 0) << root.err;
  EXPECT_THAT(root.out, HasSubstr("checks"));
}

TEST_F(Security, AServiceClassIsOpenOnlyToTheTenantsThePolicyLists) {
  CommandResult alice =
      cluster_->Baton({"submit", "--class", "inference-critical", "--", "true"}, kAlice);
  EXPECT_EQ(alice.exit_code, 4);
  EXPECT_THAT(alice.err,
              HasSubstr("tenant vision may not submit into class inference-critical (policy "
                        "classes[].tenants allows serving)"));
  uint64_t bob = Submit({"--class", "inference-critical", "--", "true"}, kBob);
  EXPECT_NE(bob, 0u);
  EXPECT_EQ(cluster_->Baton({"cancel", std::to_string(bob)}, kBob).exit_code, 0);
}

TEST_F(Security, AnotherTenantSeesNoEnvValuesAndNoLogsAndANonMemberNothing) {
  uint64_t id = Submit({"-e", "API_KEY=hunter2", "--", "sh", "-c", "echo key $API_KEY; sleep 600"});
  ASSERT_TRUE(cluster_->WaitForState(id, "JOB_STATE_RUNNING")) << cluster_->Describe(id);
  std::string job = std::to_string(id);
  CommandResult bob = cluster_->Baton({"status", job, "--json"}, kBob);
  ASSERT_EQ(bob.exit_code, 0) << "every job is visible: " << bob.err;
  EXPECT_THAT(bob.out, HasSubstr("\"API_KEY\":\"\\u003credacted\\u003e\""));  // JSON escapes <>
  EXPECT_THAT(bob.out, Not(HasSubstr("hunter2")));
  CommandResult bob_queue = cluster_->Baton({"queue", "--json"}, kBob);
  EXPECT_THAT(bob_queue.out, Not(HasSubstr("hunter2")));
  CommandResult bob_logs = cluster_->Baton({"logs", job}, kBob);
  EXPECT_EQ(bob_logs.exit_code, 4);
  EXPECT_THAT(bob_logs.err, HasSubstr("may not read the logs of job " + job));
  EXPECT_THAT(bob_logs.out, Not(HasSubstr("hunter2")));
  EXPECT_THAT(cluster_->Baton({"status", job, "--json"}, kAlice).out, HasSubstr("hunter2"));
  EXPECT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", job}, kAlice).out.find("key hunter2") != std::string::npos;
      },
      std::chrono::seconds(10)));
  CommandResult mallory = cluster_->Baton({"queue"}, kMallory);
  EXPECT_EQ(mallory.exit_code, 4);
  EXPECT_THAT(mallory.err, HasSubstr("member of no tenant"));
  EXPECT_EQ(cluster_->Baton({"cancel", job}, kBob).exit_code, 4);
  EXPECT_EQ(cluster_->Baton({"cancel", job}).exit_code, 0);
}

TEST_F(Security, PlaintextIsRefusedOffLoopbackAndFailsAgainstTls) {
  CommandResult plain = cluster_->Baton({"queue", "--insecure", "--timeout", "3s"}, kAlice);
  EXPECT_EQ(plain.exit_code, 5);
  EXPECT_THAT(plain.err, HasSubstr("plaintext"));
  CommandResult off =
      cluster_->Baton({"queue", "--insecure"}, kAlice, {{"BATON_COORDINATOR", "10.1.2.3:7070"}});
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_THAT(off.err, HasSubstr("loopback only"));

  // A raw plaintext client with a valid credential never reaches authentication.
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(cluster_->coordinator(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata(kMungeKey, Credential());
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  v1::PingResponse resp;
  EXPECT_EQ(stub->Ping(&ctx, v1::PingRequest(), &resp).error_code(), grpc::StatusCode::UNAVAILABLE);

  // Another cluster's CA does not vouch for this coordinator.
  TestSecurity elsewhere(files_->Sub("other"));
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.why();
  CommandResult wrong_ca =
      cluster_->Baton({"queue", "--timeout", "3s"}, kAlice, {{"BATON_CA", elsewhere.ca()}});
  EXPECT_EQ(wrong_ca.exit_code, 5);
  EXPECT_THAT(wrong_ca.err, HasSubstr("TLS"));

  CommandResult daemon = RunProcess({Bin("baton-coordinator"), "--insecure", "--listen",
                                     "10.9.9.9:0", "--data-dir", files_->Sub("plain")},
                                    {});
  EXPECT_EQ(daemon.exit_code, 2);
  EXPECT_THAT(daemon.err + daemon.out, HasSubstr("loopback"));
  CommandResult agent = RunProcess(
      {Bin("baton-agent"), "--insecure", "--name", "x", "--coordinator", "10.9.9.9:7070",
       "--listen", "127.0.0.1:0", "--data-dir", files_->Sub("plain-agent"), "--isolation", "none"},
      {});
  EXPECT_EQ(agent.exit_code, 2);
  EXPECT_THAT(agent.err + agent.out, HasSubstr("loopback"));
}

}  // namespace
}  // namespace baton::testing
