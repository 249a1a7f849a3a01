#include "common/metrics_server.h"

#include <httplib.h>

#include <chrono>
#include <sstream>

#include "common/net.h"
#include "prometheus/text_serializer.h"

namespace baton {

std::string SerializeMetrics(
    const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& c : collectables) {
    auto some = c->Collect();
    families.insert(families.end(), std::make_move_iterator(some.begin()),
                    std::make_move_iterator(some.end()));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

MetricsServer::MetricsServer(MetricsServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(MetricsServerOptions options) {
  if (absl::Status s = CheckListenAddress("--metrics-listen", options.listen); !s.ok()) return s;
  auto hp = SplitHostPort(options.listen);
  if (!hp.ok()) return hp.status();
  std::unique_ptr<MetricsServer> server(new MetricsServer(std::move(options)));
  httplib::Server& http = *server->http_;
  // Scrapes are rare and small: two threads, not httplib's default of one per core.
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // httplib's default is SO_REUSEPORT, which lets a second daemon share a busy port
  // silently; SO_REUSEADDR alone refuses it and still rebinds right after a restart.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  MetricsServer* self = server.get();
  http.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->Scrape(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/healthz", [self](const httplib::Request&, httplib::Response& res) {
    absl::Status s = self->options_.health ? self->options_.health() : absl::OkStatus();
    res.status = s.ok() ? 200 : 503;
    res.set_content(s.ok() ? "ok\n" : std::string(s.message()) + "\n", "text/plain");
  });
  const std::string& bind_host = hp->first;  // without the brackets of "[::1]:0"
  int port = hp->second;
  if (port == 0) {
    port = http.bind_to_any_port(bind_host);
  } else if (!http.bind_to_port(bind_host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError("--metrics-listen: cannot listen on " + server->options_.listen);
  }
  bool v6 = bind_host.find(':') != std::string::npos;
  server->address_ = (v6 ? "[" + bind_host + "]" : bind_host) + ":" + std::to_string(port);
  server->thread_ = std::thread([self] { self->http_->listen_after_bind(); });
  return server;
}

MetricsServer::~MetricsServer() {
  if (!thread_.joinable()) return;  // never bound
  // stop() is a no-op until the accept loop runs: give a just-started thread its moment.
  for (int i = 0; i < 200 && !http_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  http_->stop();
  thread_.join();
}

std::string MetricsServer::Scrape() const { return SerializeMetrics(options_.collectables); }

}  // namespace baton
