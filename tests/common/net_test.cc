#include "common/net.h"

#include "gtest/gtest.h"

namespace baton {
namespace {

TEST(Net, SplitsHostAndPort) {
  auto hp = SplitHostPort("127.0.0.1:7070");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->first, "127.0.0.1");
  EXPECT_EQ(hp->second, 7070);
  EXPECT_EQ(SplitHostPort("[::1]:0")->first, "::1");
  EXPECT_FALSE(SplitHostPort("nohost").ok());
  EXPECT_FALSE(SplitHostPort("h:70000").ok());
  EXPECT_FALSE(SplitHostPort("h:x").ok());
}

TEST(Net, ListensOnlyOnLoopbackOrPrivateNetworks) {
  EXPECT_TRUE(CheckListenAddress("--listen", "127.0.0.1:0").ok());
  EXPECT_TRUE(CheckListenAddress("--listen", "10.200.0.1:7070").ok());
  EXPECT_TRUE(CheckListenAddress("--listen", "172.20.1.1:7070").ok());
  EXPECT_TRUE(CheckListenAddress("--listen", "192.168.1.1:7070").ok());
  EXPECT_TRUE(CheckListenAddress("--listen", "[::1]:7070").ok());
  EXPECT_FALSE(CheckListenAddress("--listen", "0.0.0.0:7070").ok());
  EXPECT_FALSE(CheckListenAddress("--listen", "8.8.8.8:7070").ok());
  EXPECT_FALSE(CheckListenAddress("--listen", "172.32.0.1:7070").ok());
  auto s = CheckListenAddress("--listen", "0.0.0.0:7070");
  EXPECT_NE(std::string(s.message()).find("--listen"), std::string::npos);
}

}  // namespace
}  // namespace baton
