#include "common/resources.h"

#include <cstdio>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace baton {
namespace {

TEST(Resources, ParsesCpuInCoresAndMillicores) {
  EXPECT_EQ(*ParseCpuMillis("2"), 2000u);
  EXPECT_EQ(*ParseCpuMillis("0.5"), 500u);
  EXPECT_EQ(*ParseCpuMillis("250m"), 250u);
  EXPECT_FALSE(ParseCpuMillis("-1").ok());
  EXPECT_FALSE(ParseCpuMillis("two").ok());
  EXPECT_FALSE(ParseCpuMillis("2 cores").ok());
  EXPECT_FALSE(ParseCpuMillis("").ok());
}

TEST(Resources, ParsesBinaryAndDecimalSizes) {
  EXPECT_EQ(*ParseBytes("1024"), 1024u);
  EXPECT_EQ(*ParseBytes("4Ki"), 4096u);
  EXPECT_EQ(*ParseBytes("16Gi"), 16ull << 30);
  EXPECT_EQ(*ParseBytes("16GiB"), 16ull << 30);
  EXPECT_EQ(*ParseBytes("1.5Gi"), 3ull << 29);
  EXPECT_EQ(*ParseBytes("2G"), 2'000'000'000u);
  EXPECT_FALSE(ParseBytes("12Q").ok());
  EXPECT_FALSE(ParseBytes("-4Gi").ok());
  EXPECT_FALSE(ParseBytes("99999999999Ti").ok());
}

TEST(Resources, ParsesDurationsAndRates) {
  EXPECT_EQ(*ParseDurationSeconds("90"), 90u);
  EXPECT_EQ(*ParseDurationSeconds("15m"), 900u);
  EXPECT_EQ(*ParseDurationSeconds("2h"), 7200u);
  EXPECT_FALSE(ParseDurationSeconds("2 weeks").ok());
  // One grammar everywhere: absl's units, a `d` for days, composites.
  EXPECT_EQ(*ParseDurationSeconds("30d"), 30u * 86400);
  EXPECT_EQ(*ParseDurationSeconds("1d12h"), 36u * 3600);
  EXPECT_EQ(*ParseDurationSeconds("1h30m"), 5400u);
  EXPECT_EQ(*ParseDurationSeconds("1.5m"), 90u);
  EXPECT_EQ(*ParseDurationSeconds("0"), 0u);
  EXPECT_EQ(*ParseDuration("500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDuration("1.5s"), absl::Milliseconds(1500));
  EXPECT_EQ(*ParseDuration("2"), absl::Seconds(2));
  EXPECT_FALSE(ParseDurationSeconds("500ms").ok()) << "a field of seconds";
  for (const char* bad : {"", "-5s", "inf", "1w", "d", "1dd", "5 s", "1e400s", "100000000d"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
  EXPECT_EQ(*ParseMbps("100mbit"), 100u);
  EXPECT_EQ(*ParseMbps("1.5gbit"), 1500u);
  EXPECT_FALSE(ParseMbps("10kbit").ok());
}

TEST(Resources, FormatsForPeople) {
  EXPECT_EQ(FormatCpuMillis(2000), "2");
  EXPECT_EQ(FormatCpuMillis(500), "500m");
  EXPECT_EQ(FormatBytes(16ull << 30), "16Gi");
  EXPECT_EQ(FormatBytes(3ull << 29), "1.5Gi");
  EXPECT_EQ(FormatBytes(100), "100");
  EXPECT_EQ(FormatDurationMs(93'000), "1m33s");
  EXPECT_EQ(FormatDurationMs(1'500), "1.5s");
  EXPECT_EQ(FormatDurationMs(60'000), "1m00s");
  EXPECT_EQ(FormatDurationMs(3'900'000), "1h05m");
  EXPECT_EQ(FormatDurationMs(183'600'000), "2d03h");
  EXPECT_EQ(FormatDurationMs(-5), "0.0s");
}

// Minutes, hours and days are written without printf: the same text as printf's.
TEST(Resources, DurationsAsPrintfWritesThem) {
  auto printf_way = [](int64_t ms) {
    long long s = ms / 1000;
    char buf[48];
    if (s < 3600) {
      std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
    } else if (s < 86400) {
      std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    } else {
      std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
    }
    return std::string(buf);
  };
  for (int64_t ms = 60'000; ms < 400LL * 86'400'000; ms = ms * 5 / 4 + 997) {
    ASSERT_EQ(FormatDurationMs(ms), printf_way(ms)) << ms;
  }
}

TEST(Resources, FitAndArithmeticSaturate) {
  Resources free{/*cpu_millis=*/4000, /*memory_bytes=*/1 << 30, /*gpus=*/2};
  Resources ask{/*cpu_millis=*/2000, /*memory_bytes=*/1 << 29, /*gpus=*/2};
  EXPECT_TRUE(ask.Fits(free));
  ask.gpus = 3;
  EXPECT_FALSE(ask.Fits(free));
  free -= ask;
  EXPECT_EQ(free.gpus, 0u);
  EXPECT_EQ(free.cpu_millis, 2000u);
}

// One doubling backoff serves evictions, service restarts and failure retries.
TEST(DoublingBackoff, DoublesFromTheBaseUpToTheCapAndSaturates) {
  const absl::Duration base = absl::Seconds(5), cap = absl::Seconds(30);
  EXPECT_EQ(DoublingBackoff(base, cap, 0), absl::ZeroDuration());
  EXPECT_EQ(DoublingBackoff(base, cap, 1), absl::Seconds(5));
  EXPECT_EQ(DoublingBackoff(base, cap, 3), absl::Seconds(20));
  EXPECT_EQ(DoublingBackoff(base, cap, 4), absl::Seconds(30));
  EXPECT_EQ(DoublingBackoff(base, cap, 4000), absl::Seconds(30));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(DoublingBackoff(absl::Seconds(kMax / 2), absl::Seconds(kMax), 60), absl::Seconds(kMax));
}

TEST(DeadlineMs, AddsAndNeverWrapsIntoThePast) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(DeadlineMs(1000, absl::Seconds(2)), 3000);
  EXPECT_EQ(DeadlineMs(1000, absl::ZeroDuration()), 1000);
  EXPECT_EQ(DeadlineMs(kMax - 5, absl::Milliseconds(10)), kMax);
  EXPECT_EQ(DeadlineMs(1000, absl::Seconds(kMax)), kMax);
}

}  // namespace
}  // namespace baton
