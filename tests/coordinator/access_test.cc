// Authorization from the policy: who is an admin, who is in which tenant, which tenants
// may use which class, who may act on a job and who sees its env values; and the policy
// file's access keys, checked whole.
#include "coordinator/access.h"

#include "coordinator/policy_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

Caller Who(const std::string& user, std::vector<std::string> groups = {},
           const std::string& token_tenant = "") {
  Caller c;
  c.user = user;
  c.uid = user == "root" ? 0 : 1000;
  c.groups = std::move(groups);
  c.method = token_tenant.empty() ? "munge" : "token";
  c.token_id = token_tenant.empty() ? "" : "0123456789abcdef";
  c.token_tenant = token_tenant;
  return c;
}

Policy Parsed(const std::string& yaml) {
  absl::StatusOr<Policy> p = ParsePolicy(yaml);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Policy::Default();
}

// vision: alice and the ml group; serving: bob; inference open to serving only.
Policy TeamPolicy() {
  return Parsed(R"(
admins: [root, "@ops"]
classes:
  - {name: inference-critical, value: 1000, service: true, tenants: [serving]}
  - {name: inference, value: 900, service: true}
  - {name: training, value: 300}
  - {name: experiment, value: 100, tenants: [vision]}
tenants:
  - {name: vision, members: [alice, "@ml"]}
  - {name: serving, members: [bob, alice]}
  - {name: idle}
)");
}

v1::Job JobOf(const std::string& user, const std::string& tenant) {
  v1::Job job;
  job.set_id(7);
  job.set_user(user);
  job.mutable_spec()->set_tenant(tenant);
  (*job.mutable_spec()->mutable_env())["TOKEN"] = "hunter2";
  (*job.mutable_spec()->mutable_env())["LR"] = "3e-4";
  return job;
}

TEST(Access, TheBuiltInPolicyMakesRootTheAdminAndEveryoneAMemberOfDefault) {
  Policy p = Policy::Default();
  EXPECT_TRUE(access::IsAdmin(p.access, Who("root")));
  EXPECT_FALSE(access::IsAdmin(p.access, Who("alice")));
  EXPECT_EQ(access::TenantsOf(p.access, Who("alice")), std::vector<std::string>{"default"});
  EXPECT_EQ(*access::SubmitTenant(p.access, Who("alice"), ""), "default");
  EXPECT_TRUE(access::CheckClassAllowed(p, "default", "training").ok());
  absl::Status takeover = access::CheckClassAllowed(p, "default", "inference-critical");
  EXPECT_EQ(takeover.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(takeover.message(), HasSubstr("classes[].tenants"));
}

TEST(Access, AdminsAreNamedUsersAndGroupsOnly) {
  Policy p = TeamPolicy();
  EXPECT_TRUE(access::IsAdmin(p.access, Who("root")));
  EXPECT_TRUE(access::IsAdmin(p.access, Who("carol", {"ops"})));
  EXPECT_FALSE(access::IsAdmin(p.access, Who("alice", {"ml", "operators"})));
  EXPECT_FALSE(access::IsAdmin(p.access, Who("")));
  absl::Status s = access::CheckAdmin(p.access, Who("alice"), "change the policy");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("alice is not an admin"));
  EXPECT_THAT(s.message(), HasSubstr("root, @ops"));
}

TEST(Access, MembershipByNameAndGroupAndAUserInNoTenantIsRefused) {
  Policy p = TeamPolicy();
  EXPECT_EQ(access::TenantsOf(p.access, Who("alice")),
            (std::vector<std::string>{"serving", "vision"}));
  EXPECT_EQ(access::TenantsOf(p.access, Who("dave", {"ml"})), std::vector<std::string>{"vision"});
  absl::Status mallory = access::CheckMayUseCluster(p.access, Who("mallory"));
  EXPECT_EQ(mallory.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(mallory.message(), HasSubstr("member of no tenant"));
  EXPECT_THAT(mallory.message(), HasSubstr("tenants[].members"));
  EXPECT_TRUE(access::CheckMayUseCluster(p.access, Who("root")).ok()) << "admins need no tenant";
  EXPECT_TRUE(access::TenantsOf(p.access, Who("eve")).empty())
      << "once any tenant lists members, nobody is in 'default' by default";
}

TEST(Access, SubmitGoesToTheOnlyTenantOrTheOneChosenAmongTheCallersOwn) {
  Policy p = TeamPolicy();
  EXPECT_EQ(*access::SubmitTenant(p.access, Who("bob"), ""), "serving");
  absl::StatusOr<std::string> several = access::SubmitTenant(p.access, Who("alice"), "");
  EXPECT_EQ(several.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(several.status().message(), HasSubstr("serving, vision; pick one with --tenant"));
  EXPECT_EQ(*access::SubmitTenant(p.access, Who("alice"), "vision"), "vision");
  absl::StatusOr<std::string> other = access::SubmitTenant(p.access, Who("bob"), "vision");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(other.status().message(), HasSubstr("not a member"));
  EXPECT_EQ(*access::SubmitTenant(p.access, Who("root"), "idle"), "idle") << "admins: any";
  EXPECT_EQ(access::SubmitTenant(p.access, Who("mallory"), "").status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(Access, ServiceClassesAreClosedUntilListedAndListsAreExact) {
  Policy p = TeamPolicy();
  EXPECT_TRUE(access::CheckClassAllowed(p, "serving", "inference-critical").ok());
  absl::Status s = access::CheckClassAllowed(p, "vision", "inference-critical");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(),
              HasSubstr("tenant vision may not submit into class inference-critical (policy "
                        "classes[].tenants allows serving)"));
  EXPECT_EQ(access::CheckClassAllowed(p, "serving", "inference").code(),
            absl::StatusCode::kPermissionDenied)
      << "a service class nobody listed is open to no tenant";
  EXPECT_TRUE(access::CheckClassAllowed(p, "serving", "training").ok()) << "unlisted: open";
  EXPECT_TRUE(access::CheckClassAllowed(p, "vision", "experiment").ok());
  EXPECT_FALSE(access::CheckClassAllowed(p, "serving", "experiment").ok());
}

TEST(Access, OwnersTenantMembersAndAdminsActOnAJobOthersSeeItRedacted) {
  Policy p = TeamPolicy();
  v1::Job job = JobOf("dave", "vision");
  EXPECT_TRUE(access::MayActOn(p.access, Who("dave"), job)) << "its owner";
  EXPECT_TRUE(access::MayActOn(p.access, Who("alice"), job)) << "a member of its tenant";
  EXPECT_TRUE(access::MayActOn(p.access, Who("root"), job)) << "an admin";
  EXPECT_FALSE(access::MayActOn(p.access, Who("bob"), job));
  absl::Status s = access::CheckMayActOn(p.access, Who("bob"), job, "read the logs of");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("bob may not read the logs of job 7 of tenant vision"));

  v1::Job seen = access::ForViewer(p.access, Who("bob"), job);
  EXPECT_EQ(seen.spec().env().at("TOKEN"), access::kRedacted);
  EXPECT_EQ(seen.spec().env().at("LR"), access::kRedacted);
  EXPECT_EQ(seen.SerializeAsString().find("hunter2"), std::string::npos);
  EXPECT_EQ(seen.spec().tenant(), "vision") << "the rest of the job is visible, as in squeue";
  EXPECT_EQ(access::ForViewer(p.access, Who("alice"), job).spec().env().at("TOKEN"), "hunter2");
}

TEST(Access, ATokenBoundToATenantActsThereOnlyAndIsNeverAnAdmins) {
  Policy p = TeamPolicy();
  Caller bound = Who("alice", {}, "serving");
  EXPECT_EQ(access::TenantsOf(p.access, bound), std::vector<std::string>{"serving"});
  EXPECT_EQ(*access::SubmitTenant(p.access, bound, ""), "serving");
  EXPECT_FALSE(access::SubmitTenant(p.access, bound, "vision").ok());
  EXPECT_FALSE(access::MayActOn(p.access, bound, JobOf("alice", "vision")))
      << "not even its user's own jobs elsewhere";
  Caller root_bound = Who("root", {}, "idle");
  EXPECT_FALSE(access::IsAdmin(p.access, root_bound));
  EXPECT_FALSE(access::CheckMayUseCluster(p.access, root_bound).ok())
      << "root is no member of idle: a token bound there acts nowhere";
}

TEST(AccessPolicyFile, ParsesAdminsMembersAndClassTenants) {
  Policy p = TeamPolicy();
  EXPECT_EQ(p.access.admins, (std::vector<std::string>{"root", "@ops"}));
  EXPECT_EQ(p.access.members.at("vision"), (std::vector<std::string>{"alice", "@ml"}));
  EXPECT_EQ(p.access.members.count("idle"), 0u) << "no members key: none listed";
  EXPECT_EQ(p.access.class_tenants.at("inference-critical"), std::vector<std::string>{"serving"});
  EXPECT_EQ(p.access.class_tenants.count("inference"), 0u);
  Policy defaults = Parsed("tenants:\n  - {name: vision, weight: 2}\n");
  EXPECT_EQ(defaults.access.admins, std::vector<std::string>{"root"}) << "admins left out: root";
  EXPECT_TRUE(defaults.access.members.empty());
}

TEST(AccessPolicyFile, RootJobsAndPidsLimitsAreTheTenantsAndClassesToSay) {
  Policy p = Parsed(R"(
defaults: {pids_limit: 2048}
classes:
  - {name: training, value: 300}
  - {name: experiment, value: 100, pids_limit: 64}
tenants:
  - {name: ops, members: [root], allow_root: true}
  - {name: vision, members: [alice], allow_root: false}
)");
  EXPECT_EQ(p.access.root_tenants, std::set<std::string>{"ops"});
  EXPECT_EQ(p.PidsLimit("experiment"), 64u);
  EXPECT_EQ(p.PidsLimit("training"), 2048u);
  EXPECT_EQ(Policy::Default().PidsLimit("training"), 16384u);
  EXPECT_TRUE(
      Parsed("tenants:\n  - {name: vision, members: [alice]}\n").access.root_tenants.empty())
      << "no tenant runs root jobs unless its policy says so";
  EXPECT_FALSE(ParsePolicy("tenants:\n  - {name: v, allow_root: maybe}\n").ok());
  EXPECT_FALSE(ParsePolicy("defaults: {pids_limit: -1}\n").ok());
}

TEST(AccessPolicyFile, BadAccessKeysAreRefusedWholeEachNamed) {
  absl::StatusOr<Policy> p = ParsePolicy(R"(
admins: []
classes:
  - {name: inference, value: 900, service: true, tenants: [servng]}
  - {name: training, value: 300, tenants: vision}
tenants:
  - {name: vision, members: ["alice smith", "@"]}
  - {name: serving, members: [bob]}
)");
  ASSERT_FALSE(p.ok());
  std::string why(p.status().message());
  EXPECT_THAT(why, HasSubstr("admins: at least one admin"));
  EXPECT_THAT(why, HasSubstr("'servng' is not a tenant of this policy"));
  EXPECT_THAT(why, HasSubstr("classes[1].tenants: expected a list of names"));
  EXPECT_THAT(why, HasSubstr("'alice smith' is not a user, @group or *"));
  EXPECT_THAT(why, HasSubstr("'@' is not a user, @group or *"));
  EXPECT_FALSE(ParsePolicy("default_tenant: {members: [x]}\n").ok())
      << "the default tenant's quota settings have no members";
}

TEST(AccessPolicyFile, AccessChangesAreDescribedForTheAuditLog) {
  Policy before = TeamPolicy();
  Policy after = before;
  after.access.admins = {"root"};
  after.access.members["vision"] = {"alice"};
  after.access.class_tenants["inference"] = {"serving"};
  std::string what = DescribePolicyChange(before, after);
  EXPECT_THAT(what, HasSubstr("admins changed"));
  EXPECT_THAT(what, HasSubstr("tenant vision: members changed"));
  EXPECT_THAT(what, HasSubstr("which tenants may use which classes changed"));
}

}  // namespace
}  // namespace baton
