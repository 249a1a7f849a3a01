// Service tokens: minted with 256 random bits, stored as a hash only, verified in
// constant time, refused once revoked or expired, reloaded from a real store.
#include "coordinator/tokens.h"

#include "coordinator/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

v1::CreateTokenRequest For(const std::string& user, const std::string& tenant = "",
                           int64_t ttl_seconds = 0) {
  v1::CreateTokenRequest req;
  req.set_user(user);
  req.set_tenant(tenant);
  req.set_ttl_seconds(ttl_seconds);
  return req;
}

TEST(Tokens, AMintedTokenVerifiesAsItsUserAndOnlyItsHashIsKept) {
  FakeClock clock;
  TokenRegistry tokens(&clock);
  auto minted = tokens.Mint(For("alice", "vision"), "root");
  ASSERT_TRUE(minted.ok()) << minted.status();
  EXPECT_THAT(minted->token, ::testing::StartsWith("btk_" + minted->record.id() + "_"));
  std::string secret = minted->token.substr(4 + 16 + 1);
  EXPECT_EQ(secret.size(), 43u) << "256 bits, base64url";
  EXPECT_EQ(minted->record.SerializeAsString().find(secret), std::string::npos)
      << "the stored record holds no secret";
  EXPECT_EQ(minted->record.secret_sha256().size(), 32u);
  EXPECT_FALSE(tokens.Verify(minted->token).ok()) << "usable only once added (stored)";
  tokens.Add(minted->record);
  auto record = tokens.Verify(minted->token);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->user(), "alice");
  EXPECT_EQ(record->tenant(), "vision");
  EXPECT_EQ(record->created_by(), "root");
  EXPECT_EQ(record->expires_ms() - record->created_ms(), 30ll * 24 * 3600 * 1000) << "30d";
  auto other = tokens.Mint(For("alice"), "root");
  EXPECT_NE(other->token, minted->token);
  EXPECT_NE(other->record.id(), minted->record.id());
}

TEST(Tokens, WrongMalformedAndUnknownTokensAreRefused) {
  FakeClock clock;
  TokenRegistry tokens(&clock);
  auto minted = tokens.Mint(For("alice"), "root");
  tokens.Add(minted->record);
  std::string wrong = minted->token;
  wrong.back() = wrong.back() == 'A' ? 'B' : 'A';
  for (const std::string& bad :
       {wrong, std::string("btk_") + minted->record.id(), std::string("hunter2"),
        std::string("btk_ffffffffffffffff_") + minted->token.substr(21), std::string(""),
        std::string("btk_") + std::string(200, 'a'), minted->token + "x"}) {
    auto v = tokens.Verify(bad);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kUnauthenticated) << bad;
  }
}

TEST(Tokens, RevokedTokensAreRefusedAtOnceAndExpiredOnesWhenTheirTimeComes) {
  FakeClock clock;
  TokenRegistry tokens(&clock);
  auto a = tokens.Mint(For("alice", "", /*ttl_seconds=*/3600), "root");
  auto b = tokens.Mint(For("bob"), "root");
  tokens.Add(a->record);
  tokens.Add(b->record);
  auto revoked = tokens.Revoke(b->record.id(), "root");
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(revoked->revoked_by(), "root");
  auto refused = tokens.Verify(b->token);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.status().message(), HasSubstr("revoked by root"));
  EXPECT_EQ(tokens.Revoke("0000000000000000", "root").status().code(), absl::StatusCode::kNotFound);

  EXPECT_TRUE(tokens.Verify(a->token).ok());
  clock.Advance(absl::Hours(1));
  auto expired = tokens.Verify(a->token);
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(expired.status().message(), HasSubstr("expired"));
  EXPECT_TRUE(tokens.List(/*all=*/false).empty());
  EXPECT_EQ(tokens.List(/*all=*/true).size(), 2u);
  v1::TokenInfo info = TokenRegistry::Info(*revoked);
  EXPECT_EQ(info.SerializeAsString().find(revoked->secret_sha256()), std::string::npos)
      << "admins never see even the hash";
}

TEST(Tokens, BadLifetimesAreRefused) {
  FakeClock clock;
  TokenRegistry tokens(&clock);
  EXPECT_EQ(tokens.Mint(For("alice", "", -5), "root").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tokens.Mint(For("alice", "", 3651ll * 24 * 3600), "root").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Tokens, RecordsSurviveARestartOfTheStore) {
  testing::TempDir dir;
  FakeClock clock;
  TokenRegistry tokens(&clock);
  auto kept = tokens.Mint(For("alice"), "root");
  auto gone = tokens.Mint(For("bob"), "root");
  {
    auto store = Store::Open(dir.Sub("db"), {});
    ASSERT_TRUE(store.ok());
    StoreBatch batch;
    batch.tokens = {kept->record, gone->record};
    ASSERT_TRUE((*store)->Commit(batch).ok());
    tokens.Add(gone->record);
    StoreBatch revoke;
    revoke.tokens = {*tokens.Revoke(gone->record.id(), "root")};
    ASSERT_TRUE((*store)->Commit(revoke).ok());
  }
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  auto loaded = (*store)->LoadTokens();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  TokenRegistry restarted(&clock);
  restarted.Load(*loaded);
  EXPECT_TRUE(restarted.Verify(kept->token).ok());
  EXPECT_FALSE(restarted.Verify(gone->token).ok()) << "a revocation is durable";
}

}  // namespace
}  // namespace baton
