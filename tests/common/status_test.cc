#include "common/status.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace baton {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  BATON_ASSIGN_OR_RETURN(int h, Half(x));
  BATON_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Status, ErrnoMapsToWhatTheCallerDoesNext) {
  EXPECT_EQ(ErrnoToStatus(ENOSPC, "write x").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoToStatus(ENOENT, "open x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoToStatus(EACCES, "open x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(ErrnoToStatus(ENOENT, "open /x").message().find("open /x"), std::string::npos);
}

}  // namespace
}  // namespace baton
