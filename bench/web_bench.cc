// baton-bench-web: the web dashboard's cost to the coordinator (issue 48), on a real
// coordinator process (TLS, the bench policy) with its dashboard on loopback:
// 1. With --jobs pending jobs in the queue: the whole queue read through the queue
//    endpoint (GET /api/v1/jobs, every page), p99 over --reads reads
//    (queue_json_ms_p99, target <= 100 ms), and beside it the same jobs through gRPC List
//    (grpc_list_ms_p99), interleaved, after one untimed read of each.
// 2. The API's latency (a gRPC Get of one job, p99 over --calls calls) while jobs are
//    submitted and cancelled so that events flow, first with no event stream open, then
//    with --streams live views (GET /api/v1/events/stream, each following every event):
//    api_p99_ms_no_streams, api_p99_ms_with_streams, their ratio (target <= 2), and the
//    coordinator's extra resident memory per open stream (rss_bytes_per_stream, VmRSS
//    settled before and after they open).
// The streams' readers run at nice 19: browsers are not on the coordinator's host, and
// here they would compete with it for its two cores.
// The streams come from one service token of root (the bench policy's admin), so the
// coordinator runs with --max-follows-per-user and --max-follows above --streams: the
// limits are what a site running this many dashboards would set. Ends with one JSON line.
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_flags.h"
#include "bench/daemons.h"
#include "tests/util/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using baton::bench::Api;
using baton::bench::Daemons;
using baton::bench::RssBytes;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double P99(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(v.size() * 0.99))];
}

// VmRSS once it stops moving (two readings 300 ms apart within 1%), at most 5 s.
uint64_t SettledRss(pid_t pid) {
  uint64_t last = RssBytes(pid);
  for (int i = 0; i < 16; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    uint64_t now = RssBytes(pid);
    if (now > 0 && (now > last ? now - last : last - now) * 100 < now) return now;
    last = now;
  }
  return last;
}

struct Web {
  std::string host;
  int port = 0;
  std::string ca;
  std::string token;
  std::unique_ptr<httplib::SSLClient> Client() const {
    auto c = std::make_unique<httplib::SSLClient>(host, port);
    c->set_ca_cert_path(ca.c_str());
    c->enable_server_certificate_verification(true);
    c->set_read_timeout(120, 0);
    return c;
  }
  httplib::Headers Auth() const { return {{"Authorization", "Bearer " + token}}; }
};

// The whole queue through the dashboard's endpoint, page by page; jobs read (0: failed).
size_t ReadQueueJson(const Web& web, httplib::SSLClient& c) {
  size_t jobs = 0;
  std::string token;
  for (;;) {
    std::string path = "/api/v1/jobs?limit=5000";
    if (!token.empty()) path += "&page_token=" + httplib::detail::encode_query_param(token);
    auto res = c.Get(path.c_str(), web.Auth());
    if (!res || res->status != 200) return 0;
    for (size_t pos = 0; (pos = res->body.find("\"id\":\"", pos)) != std::string::npos; ++pos) {
      ++jobs;
    }
    const size_t at = res->body.find("\"nextPageToken\":\"");
    if (at == std::string::npos) return jobs;
    const size_t start = at + 17;
    token = res->body.substr(start, res->body.find('"', start) - start);
  }
}

// The same jobs through gRPC List.
size_t ReadQueueGrpc(const Api& api) {
  size_t jobs = 0;
  std::string token;
  for (;;) {
    grpc::ClientContext ctx;
    api.Prepare(&ctx);
    baton::v1::ListRequest req;
    req.set_limit(5000);
    req.set_page_token(token);
    baton::v1::ListResponse resp;
    if (!api.stub->List(&ctx, req, &resp).ok()) return 0;
    jobs += resp.jobs_size();
    if (resp.next_page_token().empty()) return jobs;
    token = resp.next_page_token();
  }
}

// Submits and cancels jobs on a thread until stopped, so that events flow.
class Churn {
 public:
  explicit Churn(const Api& api) : api_(api) {
    thread_ = std::thread([this] {
      while (!stop_) {
        uint64_t id = 0;
        if (!baton::bench::Call(api_, baton::bench::TrivialSpec(), &id).ok()) continue;
        grpc::ClientContext ctx;
        api_.Prepare(&ctx);
        baton::v1::CancelRequest req;
        req.set_job_id(id);
        baton::v1::CancelResponse resp;
        api_.stub->Cancel(&ctx, req, &resp);
        ++cycles_;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  ~Churn() {
    stop_ = true;
    thread_.join();
  }
  uint64_t cycles() const { return cycles_; }

 private:
  const Api& api_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> cycles_{0};
  std::thread thread_;
};

// p99 of `calls` gRPC Gets of job `id`, one at a time, while Churn makes events.
double ApiP99(const Api& api, uint64_t id, int calls, uint64_t* events_made) {
  Churn churn(api);
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    grpc::ClientContext ctx;
    api.Prepare(&ctx);
    baton::v1::GetRequest req;
    req.set_job_id(id);
    baton::v1::Job job;
    auto t0 = Clock::now();
    grpc::Status s = api.stub->Get(&ctx, req, &job);
    if (s.ok()) ms.push_back(Ms(Clock::now() - t0));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  *events_made = churn.cycles() * 2;  // submitted, cancelled
  return P99(ms);
}

// One live view, as a browser holds it: an event stream read on a thread of its own.
struct Stream {
  std::unique_ptr<httplib::SSLClient> client;
  std::thread reader;
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> open{false};
  void Start(const Web& web) {
    client = web.Client();
    reader = std::thread([this, &web] {
      // The browsers are not on the coordinator's host; here they share its cores, so
      // they read at the lowest priority to stand in for being elsewhere.
      setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
      client->Get(
          "/api/v1/events/stream", web.Auth(),
          [this](const httplib::Response& r) {
            open = r.status == 200;
            return r.status == 200;
          },
          [this](const char*, size_t n) {
            bytes += n;
            return true;
          });
    });
  }
  void Stop() {
    client->stop();
    if (reader.joinable()) reader.join();
  }
};

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options opts("baton-bench-web", "the web dashboard's cost to the coordinator");
  opts.add_options()("jobs", "pending jobs in the queue",
                     cxxopts::value<int>()->default_value("10000"))(
      "reads", "whole-queue reads timed per interface", cxxopts::value<int>()->default_value("30"))(
      "streams", "live views open in the second round",
      cxxopts::value<int>()->default_value("500"))("calls", "API calls timed per round",
                                                   cxxopts::value<int>()->default_value("2000"));
  const cxxopts::ParseResult flags = baton::bench::ParseFlags(opts, argc, argv);
  using baton::bench::FlagAtLeast;
  const int jobs = FlagAtLeast(opts, flags, "jobs", 1);
  const int reads = FlagAtLeast(opts, flags, "reads", 1);
  const int streams = FlagAtLeast(opts, flags, "streams", 0);
  const int calls = FlagAtLeast(opts, flags, "calls", 10);

  signal(SIGPIPE, SIG_IGN);  // a stream closed under a TLS write: EPIPE, not the end
  baton::testing::TempDir dir("baton-bench-web");
  Daemons d(dir.path());
  const std::string web_ready = dir.path() + "/web.addr";
  const std::string limit = std::to_string(streams + 64);
  d.StartCoordinator({"--web-listen", "127.0.0.1:0", "--web-ready-file", web_ready,
                      "--max-follows-per-user", limit, "--max-follows", limit});
  baton::testing::WaitFor([&] { return !baton::testing::ReadFile(web_ready).empty(); },
                          std::chrono::seconds(20));
  std::string addr = baton::testing::ReadFile(web_ready);
  addr = addr.substr(0, addr.find('\n'));
  Web web;
  web.host = addr.substr(0, addr.rfind(':'));
  web.port = std::stoi(addr.substr(addr.rfind(':') + 1));
  web.ca = d.ClientEnv().at("BATON_CA");
  web.token = d.Token("");  // root unbound: the admin, who sees every tenant's queue
  Api api = baton::bench::Stub(d, d.ClientEnv().at("BATON_COORDINATOR"), web.token);

  // The queue: --jobs pending jobs (no agent: they wait), submitted from 8 threads.
  std::atomic<int> next{0};
  std::atomic<uint64_t> first_id{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 8; ++t) {
    submitters.emplace_back([&] {
      Api own = baton::bench::Stub(d, d.ClientEnv().at("BATON_COORDINATOR"), web.token);
      while (next++ < jobs) {
        uint64_t id = 0;
        if (baton::bench::Call(own, baton::bench::TrivialSpec(), &id).ok()) {
          uint64_t none = 0;
          first_id.compare_exchange_strong(none, id);
        }
      }
    });
  }
  for (auto& t : submitters) t.join();

  std::vector<double> json_ms, grpc_ms;
  size_t json_jobs = 0, grpc_jobs = 0;
  auto client = web.Client();
  // One read of each, untimed: the first after the submits also faults in the
  // coordinator's memory for the pages (some 40 ms more, on these machines).
  ReadQueueJson(web, *client);
  ReadQueueGrpc(api);
  for (int i = 0; i < reads; ++i) {  // interleaved: the same queue, the same moment
    auto t0 = Clock::now();
    json_jobs = ReadQueueJson(web, *client);
    json_ms.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    grpc_jobs = ReadQueueGrpc(api);
    grpc_ms.push_back(Ms(Clock::now() - t0));
  }
  const double queue_p99 = P99(json_ms), list_p99 = P99(grpc_ms);
  std::printf(
      "whole queue of %zu jobs: dashboard JSON p99 %.1f ms (target <= 100), gRPC List "
      "p99 %.1f ms (%zu jobs), JSON / gRPC %.2f\n",
      json_jobs, queue_p99, list_p99, grpc_jobs, list_p99 > 0 ? queue_p99 / list_p99 : 0);

  uint64_t events_none = 0, events_with = 0;
  const double none_p99 = ApiP99(api, first_id, calls, &events_none);
  std::printf("API Get p99 with no stream open: %.2f ms (%llu events made meanwhile)\n", none_p99,
              static_cast<unsigned long long>(events_none));

  const pid_t pid = d.coordinator_pid();
  const uint64_t rss_before = SettledRss(pid);
  std::vector<std::unique_ptr<Stream>> open;
  for (int i = 0; i < streams; ++i) {
    open.push_back(std::make_unique<Stream>());
    open.back()->Start(web);
  }
  baton::testing::WaitFor(
      [&] {
        for (const auto& s : open)
          if (!s->open) return false;
        return true;
      },
      std::chrono::seconds(60));
  int opened = 0;
  for (const auto& s : open) opened += s->open ? 1 : 0;
  const uint64_t rss_after = SettledRss(pid);
  const double per_stream =
      opened > 0 ? (static_cast<double>(rss_after) - static_cast<double>(rss_before)) / opened : 0;
  uint64_t bytes_before = 0;
  for (const auto& s : open) bytes_before += s->bytes;
  const double with_p99 = ApiP99(api, first_id, calls, &events_with);
  uint64_t bytes_after = 0;
  for (const auto& s : open) bytes_after += s->bytes;
  std::printf(
      "API Get p99 with %d streams open: %.2f ms (%llu events made, %.0f bytes of them "
      "per stream); with / without %.2f (target <= 2)\n",
      opened, with_p99, static_cast<unsigned long long>(events_with),
      opened > 0 ? static_cast<double>(bytes_after - bytes_before) / opened : 0,
      none_p99 > 0 ? with_p99 / none_p99 : 0);
  std::printf("coordinator VmRSS %.1f MiB -> %.1f MiB with the streams: %.0f bytes per stream\n",
              rss_before / 1048576.0, rss_after / 1048576.0, per_stream);
  for (auto& s : open) s->Stop();

  std::printf(
      "{\"queue_json_ms_p99\":%.2f,\"grpc_list_ms_p99\":%.2f,\"queue_jobs\":%zu,"
      "\"api_p99_ms_no_streams\":%.3f,\"api_p99_ms_with_streams\":%.3f,"
      "\"api_p99_with_streams_vs_none\":%.2f,\"rss_bytes_per_stream\":%.0f,\"streams\":%d}\n",
      queue_p99, list_p99, json_jobs, none_p99, with_p99, none_p99 > 0 ? with_p99 / none_p99 : 0,
      per_stream, opened);
  const bool ok =
      json_jobs == static_cast<size_t>(jobs) && grpc_jobs == json_jobs && opened == streams;
  if (!ok) std::fprintf(stderr, "baton-bench-web: a round did not complete (see above)\n");
  return ok ? 0 : 1;
}
