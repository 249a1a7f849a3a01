// The HTTP face of a daemon's Prometheus metrics: GET /metrics (the text exposition
// format of every registered prometheus::Collectable, gathered at each scrape) and GET
// /healthz ("ok", or 503 with the reason). Binds only loopback or private addresses, like
// every baton listener; port 0 picks a free port (address() tells which). Used by the
// coordinator and the agents behind --metrics-listen. Thread-safe; serves on a thread of
// its own until destroyed.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace httplib {
class Server;
}

namespace baton {

struct MetricsServerOptions {
  std::string listen;  // host:port; loopback or private only
  // Collected at every scrape, in order; their families are concatenated.
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  // /healthz: OK -> 200 "ok"; an error -> 503 with its message. Null: always OK.
  std::function<absl::Status()> health;
};

class MetricsServer {
 public:
  // InvalidArgument for a public or malformed address; Unavailable when it cannot bind.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(MetricsServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // host:port actually bound.
  const std::string& address() const { return address_; }

 private:
  explicit MetricsServer(MetricsServerOptions options);
  std::string Scrape() const;

  const MetricsServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::string address_;
  std::thread thread_;
};

// A collectable given later than the server started (an HA coordinator serves its replica
// metrics as a standby, its own once it leads): empty until Set. Thread-safe.
class LateCollectable : public prometheus::Collectable {
 public:
  void Set(std::shared_ptr<prometheus::Collectable> c) { inner_.store(std::move(c)); }
  std::vector<prometheus::MetricFamily> Collect() const override {
    auto c = inner_.load();
    return c ? c->Collect() : std::vector<prometheus::MetricFamily>();
  }

 private:
  std::atomic<std::shared_ptr<prometheus::Collectable>> inner_;
};

// The exposition text of `collectables` (what /metrics serves).
std::string SerializeMetrics(
    const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables);

}  // namespace baton
