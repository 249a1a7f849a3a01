#include "common/ids.h"

#include "gtest/gtest.h"

namespace baton {
namespace {

TEST(Ids, ParsesPositiveJobIdsOnly) {
  EXPECT_EQ(*ParseJobId("17"), 17u);
  EXPECT_FALSE(ParseJobId("0").ok());
  EXPECT_FALSE(ParseJobId("-3").ok());
  EXPECT_FALSE(ParseJobId("+3").ok());
  EXPECT_FALSE(ParseJobId("abc").ok());
  EXPECT_FALSE(ParseJobId("99999999999999999999999").ok());
  EXPECT_NE(ParseJobId("abc").status().message().find("abc"), std::string::npos);
}

TEST(Ids, PaddedKeysSortNumerically) {
  EXPECT_LT(PaddedKey(9), PaddedKey(10));
  EXPECT_LT(EventKey(9, 100), EventKey(10, 1));
  EXPECT_LT(EventKey(10, 9), EventKey(10, 10));
  EXPECT_EQ(PaddedKey(17).size(), 20u);
}

TEST(Ids, ValidatesNames) {
  EXPECT_TRUE(IsValidName("node-1.rack_2"));
  EXPECT_FALSE(IsValidName(""));
  EXPECT_FALSE(IsValidName("-lead"));
  EXPECT_FALSE(IsValidName("has space"));
  EXPECT_FALSE(IsValidName(std::string(64, 'a')));
}

}  // namespace
}  // namespace baton
