// MetricsServer over real HTTP on loopback: /metrics in the text format, /healthz, port
// 0, and the refusal of public addresses.
#include "common/metrics_server.h"

#include <httplib.h>

#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace baton {
namespace {

TEST(MetricsServer, ServesMetricsAndHealthOnAPickedPort) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("baton_test_things_total")
      .Help("things")
      .Register(*registry)
      .Add({{"kind", "a"}})
      .Increment(3);
  absl::Status health = absl::OkStatus();
  auto server = MetricsServer::Start({"127.0.0.1:0", {registry}, [&] { return health; }});
  ASSERT_TRUE(server.ok()) << server.status();
  std::string addr = (*server)->address();
  ASSERT_EQ(addr.rfind("127.0.0.1:", 0), 0u) << addr;
  int port = std::stoi(addr.substr(addr.rfind(':') + 1));
  ASSERT_GT(port, 0);
  httplib::Client client("127.0.0.1", port);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("# TYPE baton_test_things_total counter"), std::string::npos);
  EXPECT_NE(metrics->body.find("baton_test_things_total{kind=\"a\"} 3"), std::string::npos)
      << metrics->body;
  auto ok = client.Get("/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "ok\n");
  health = absl::UnavailableError("store is gone");
  auto bad = client.Get("/healthz");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 503);
  EXPECT_EQ(bad->body, "store is gone\n");
}

TEST(MetricsServer, RefusesPublicAndMalformedAddresses) {
  for (const char* addr : {"0.0.0.0:0", "8.8.8.8:9100", "localhost", ""}) {
    auto server = MetricsServer::Start({addr, {}, nullptr});
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << addr;
  }
}

TEST(MetricsServer, APortInUseIsUnavailable) {
  auto first = MetricsServer::Start({"127.0.0.1:0", {}, nullptr});
  ASSERT_TRUE(first.ok());
  auto second = MetricsServer::Start({(*first)->address(), {}, nullptr});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace baton
