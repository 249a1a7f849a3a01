#include "bench/isolation_workloads.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

namespace baton::bench {
namespace {

int64_t NowNs(clockid_t clock = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

void SleepUntilNs(int64_t t) {
  timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

// "--name value" pairs after the mode.
std::map<std::string, std::string> Flags(const std::vector<std::string>& args) {
  std::map<std::string, std::string> f;
  for (size_t i = 2; i + 1 < args.size(); i += 2) f[args[i]] = args[i + 1];
  return f;
}

int64_t Flag(const std::map<std::string, std::string>& f, const std::string& name, int64_t def) {
  auto it = f.find(name);
  return it == f.end() ? def : std::atoll(it->second.c_str());
}

// Requests every `period` µs, each `burst` µs of this thread's CPU time; latency from the
// request's scheduled arrival to its completion (open loop: queueing counts).
int Probe(const std::map<std::string, std::string>& f) {
  int64_t period = Flag(f, "--period-us", 2000) * 1000, burst = Flag(f, "--burst-us", 500) * 1000;
  int64_t n = Flag(f, "--requests", 1500);
  usleep(static_cast<useconds_t>(Flag(f, "--warmup-ms", 0) * 1000));
  std::vector<double> us;
  us.reserve(static_cast<size_t>(n));
  int64_t t0 = NowNs() + 1'000'000;
  volatile uint64_t sink = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t arrival = t0 + i * period;
    if (NowNs() < arrival) SleepUntilNs(arrival);
    int64_t cpu0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
    while (NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu0 < burst) {
      for (int k = 0; k < 200; ++k) sink = sink + static_cast<uint64_t>(k);
    }
    us.push_back(static_cast<double>(NowNs() - arrival) / 1000.0);
  }
  std::printf("%s\n", LatencyJson(us).c_str());
  return 0;
}

// `--threads` spinning threads (default: every CPU) for `--seconds`.
int Hog(const std::map<std::string, std::string>& f) {
  int64_t threads = Flag(f, "--threads", std::thread::hardware_concurrency());
  int64_t until = NowNs() + Flag(f, "--seconds", 5) * 1'000'000'000LL;
  std::vector<std::thread> pool;
  std::atomic<uint64_t> sink{0};  // keeps the spinning from being optimised away
  for (int64_t i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      uint64_t x = 0;
      while (NowNs() < until) {
        for (int k = 0; k < 10000; ++k) x = x * 6364136223846793005ULL + 1;
      }
      sink += x;
    });
  }
  for (auto& t : pool) t.join();
  std::printf("{\"cpu_s\":%.3f,\"threads\":%lld,\"sink\":%llu}\n",
              static_cast<double>(NowNs(CLOCK_PROCESS_CPUTIME_ID)) / 1e9,
              static_cast<long long>(threads), static_cast<unsigned long long>(sink.load() % 10));
  return 0;
}

// A TCP socket and the address --host:--port names (any address when no --host).
int TcpSocket(const std::map<std::string, std::string>& f, sockaddr_in* a) {
  *a = sockaddr_in{};
  a->sin_family = AF_INET;
  a->sin_port = htons(static_cast<uint16_t>(Flag(f, "--port", 7777)));
  if (f.count("--host")) inet_pton(AF_INET, f.at("--host").c_str(), &a->sin_addr);
  return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

int EchoServer(const std::map<std::string, std::string>& f) {
  sockaddr_in a;
  int s = TcpSocket(f, &a);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(s, 8) != 0) return 1;
  for (;;) {
    int c = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char buf[64];
    ssize_t n;
    while ((n = read(c, buf, sizeof buf)) > 0) {
      if (write(c, buf, static_cast<size_t>(n)) != n) break;
    }
    close(c);
  }
}

// 64-byte round trips every `--interval-us` to the echo server.
int RttProbe(const std::map<std::string, std::string>& f) {
  sockaddr_in a;
  int s = TcpSocket(f, &a);
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
  int64_t n = Flag(f, "--requests", 2000), interval = Flag(f, "--interval-us", 1000) * 1000;
  usleep(static_cast<useconds_t>(Flag(f, "--warmup-ms", 0) * 1000));
  std::vector<double> us;
  char buf[64] = {};
  int64_t t0 = NowNs();
  for (int64_t i = 0; i < n; ++i) {
    SleepUntilNs(t0 + i * interval);
    int64_t start = NowNs();
    if (write(s, buf, sizeof buf) != sizeof buf) return 1;
    size_t got = 0;
    while (got < sizeof buf) {
      ssize_t r = read(s, buf + got, sizeof buf - got);
      if (r <= 0) return 1;
      got += static_cast<size_t>(r);
    }
    us.push_back(static_cast<double>(NowNs() - start) / 1000.0);
  }
  // Every sample too, so that the bench can pool them over its rounds.
  std::string out = LatencyJson(us);
  out.pop_back();
  out += ",\"samples_us\":[";
  for (size_t i = 0; i < us.size(); ++i) {
    char v[32];
    std::snprintf(v, sizeof v, "%s%.1f", i ? "," : "", us[i]);
    out += v;
  }
  std::printf("%s]}\n", out.c_str());
  return 0;
}

}  // namespace

double Percentile(const std::vector<double>& sorted_us, double p) {
  if (sorted_us.empty()) return 0.0;
  return sorted_us[std::min(sorted_us.size() - 1, static_cast<size_t>(p * sorted_us.size()))];
}

std::string LatencyJson(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double p) { return Percentile(us, p); };
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "{\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,\"n\":%zu}",
                at(0.5), at(0.99), at(0.999), us.empty() ? 0.0 : us.back(), us.size());
  return buf;
}

int RunWorkload(const std::vector<std::string>& args) {
  if (args.size() < 2) return -1;
  auto f = Flags(args);
  if (args[1] == "--probe") return Probe(f);
  if (args[1] == "--hog") return Hog(f);
  if (args[1] == "--echo-server") return EchoServer(f);
  if (args[1] == "--rtt-probe") return RttProbe(f);
  return -1;
}

}  // namespace baton::bench
