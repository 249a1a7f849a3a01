// baton-bench-submit: how much a researcher's `baton submit` costs and how fast the
// coordinator admits and runs jobs, each against a peer measured in the same run. Every
// call is authenticated as in production: TLS under a CA of the run's own, the CLI and
// its floor with a fresh MUNGE credential from a private munged, the API phases with a
// service token ("auth" in the JSON says so):
//   1. `baton submit` processes vs `baton-rpc-floor` processes (one empty RPC, linked the
//      same way, paying the same TLS handshake and MUNGE credential), interleaved:
//      p50/p99 and p50 ÷ floor p50;
//   2. durable submits through the API, --api-clients (512) calls in flight at all times
//      (gRPC's callback API over four connections): submits/s, with the per-tenant
//      fair-use limits on (far above the load) and off, and the API's empty authenticated
//      RPC (Ping) under the same clients, interleaved three times each:
//      throttle_overhead_ratio = on ÷ off (median of the pairs), api_vs_empty_rpc; the
//      coordinator's and the clients' CPU per call (they share the machine's cores); then
//      the group-commit limit: the store alone (Committer over RocksDB, synced) taking a
//      submit's batch from as many submitters, three times (api_vs_group_commit_limit);
//   3. 1,000 trivial jobs on 16 agents, submit to all SUCCEEDED: jobs/s, against its floor:
//      the same number of jobs' own processes (baton-keeper and `true`, started as the agent
//      starts them, Spawn in process.h) from 16 threads with no daemon at all, before and
//      after the end-to-end run; the better of the two is the floor;
//   4. arrays, on a coordinator with no agents (the tasks wait, as on a full cluster):
//      one Submit of a 10,000-task array against one Submit of a single job, interleaved
//      (--array-reps pairs): p50 of each and their ratio; then the coordinator's resident
//      memory (VmRSS, settled) per pending array task, with the arrays submitted
//      (--array-reps x 10,000 tasks of a typical spec: ten env vars, a five-word command);
//   5. accounting, on a coordinator whose store was filled directly (tests/util/history.h):
//      a year of usage rollups (100 tenants, 1,000 users in two classes each) and 1,000,000
//      finished jobs over the last 30 days (1,000 users). `baton usage --since 365d --by
//      user` and one user's `baton history --since 7d` as Usage and History RPCs,
//      interleaved with the API's empty RPC (Ping) as the floor, --accounting-reps times:
//      p50 of each and its ratio to the floor; and, once, the same history answer the way
//      it would come without the ended index (List of every job, filtered by the client).
// --phases picks the phases (default all). Ends with one JSON line of the phases run (keys
// in docs/benchmarks.md).
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "bench/bench_flags.h"
#include "bench/daemons.h"
#include "common/daemon.h"
#include "coordinator/committer.h"
#include "coordinator/store.h"
#include "coordinator/usage/rollup.h"
#include "launcher/agent/process.h"
#include "proto/api.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"
#include "tests/util/history.h"
#include "tests/util/security.h"
#include "tests/util/subprocess.h"

namespace {

using baton::bench::Api;
using baton::bench::ApiSubmits;
using baton::bench::BinDir;
using baton::bench::Call;
using baton::bench::CountSucceeded;
using baton::bench::Daemons;
using baton::bench::NoneUnfinished;
using baton::bench::RssBytes;
using baton::bench::Stub;
using baton::bench::TrivialSpec;
using baton::testing::Subprocess;
using Clock = std::chrono::steady_clock;
namespace v1 = baton::v1;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// Runs argv to completion and returns its wall time in ms (-1 on failure).
double TimeProcess(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env) {
  auto start = Clock::now();
  Subprocess p(argv, env, "");
  auto code = p.Wait(std::chrono::seconds(30));
  double ms = Ms(Clock::now() - start);
  return code == 0 ? ms : -1;
}

// Jobs per second when only each job's own processes run: `jobs` times baton-keeper and
// `true` under it, as the agent starts them (exit record included), from `threads` threads.
double SpawnFloorJobsPerSec(const std::string& dir, int jobs, int threads) {
  std::filesystem::create_directories(dir);
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  std::atomic<int> next{0}, failed{0};
  auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      baton::SpawnOptions so;
      so.argv = {"true"};
      so.env = {"PATH=/usr/bin:/bin"};
      so.cwd = dir;
      so.output_fd = devnull;
      so.exit_dir = dir;
      while (next++ < jobs) {
        pid_t keeper = 0;
        int status = 0;
        if (!baton::Spawn(so, nullptr, &keeper).ok() || waitpid(keeper, &status, 0) != keeper ||
            status != 0) {
          ++failed;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  close(devnull);
  std::filesystem::remove_all(dir);
  if (failed > 0) std::fprintf(stderr, "spawn floor: %d of %d failed\n", failed.load(), jobs);
  return failed > 0 ? 0 : jobs / secs;
}

// Memory cgroups on this machine, dying ones included (/proc/cgroups); -1 without the
// memory controller. Each attempt's memory cgroup outlives its rmdir (dying) for as long
// as page cache charged to it remains; many dying ones slow the kernel's cgroup work, so
// runs report them at the start and end of the e2e phase.
int MemoryCgroups() {
  std::ifstream in("/proc/cgroups");
  std::string name;
  int hierarchy = 0, count = 0, enabled = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    if (fields >> name >> hierarchy >> count >> enabled && name == "memory") return count;
  }
  return -1;
}

// p50 of write(4 KiB) + fdatasync on the data dir's filesystem: what one durable,
// unbatched submit must wait for at least (the physical floor under the store).
double FsyncP50Ms(const std::string& dir) {
  std::string path = dir + "/fsync-probe";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<double> ms;
  char block[4096] = {};
  for (int i = 0; i < 200 && fd >= 0; ++i) {
    auto start = Clock::now();
    if (write(fd, block, sizeof block) != sizeof block || fdatasync(fd) != 0) break;
    ms.push_back(Ms(Clock::now() - start));
  }
  if (fd >= 0) close(fd);
  unlink(path.c_str());
  return Percentile(ms, 0.5);
}

}  // namespace

// A typical spec (as rss_bytes_per_pending_job's): ten env vars, a five-word command.
v1::JobSpec TypicalSpec() {
  v1::JobSpec spec = TrivialSpec();
  spec.clear_command();
  for (const char* word : {"python", "train.py", "--config", "configs/sweep.yaml", "--resume"}) {
    spec.add_command(word);
  }
  for (int i = 0; i < 10; ++i) {
    (*spec.mutable_env())["SWEEP_VARIABLE_" + std::to_string(i)] =
        "value-of-variable-" + std::to_string(i);
  }
  spec.set_name("sweep-%a");
  spec.set_checkpoint_dir("/shared/ckpt/%A/%a");
  return spec;
}

struct ArrayFigures {
  double array_ms = -1, single_ms = -1;  // p50 of each Submit
  double rss_per_task = -1;              // bytes per pending array task
};

ArrayFigures ArraySubmits(const std::string& dir, int reps) {
  ArrayFigures out;
  Daemons d(dir);
  std::string target = d.StartCoordinator();
  Api stub = Stub(d, target, d.Token());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a few ticks: a settled heap
  const uint64_t rss_empty = RssBytes(d.coordinator_pid());
  std::vector<double> array_ms, single_ms;
  for (int i = 0; i < reps; ++i) {
    v1::JobSpec array = TypicalSpec();
    array.mutable_array()->set_first(0);
    array.mutable_array()->set_last(9'999);
    uint64_t id = 0;
    auto began = Clock::now();
    grpc::Status s = Call(stub, array, &id);
    array_ms.push_back(Ms(Clock::now() - began));
    if (!s.ok()) {
      std::fprintf(stderr, "array submit: %s\n", s.error_message().c_str());
      return out;
    }
    v1::JobSpec single = TypicalSpec();
    single.set_name("single");
    single.set_checkpoint_dir("/shared/ckpt/single");
    began = Clock::now();
    s = Call(stub, single, &id);
    single_ms.push_back(Ms(Clock::now() - began));
    if (!s.ok()) {
      std::fprintf(stderr, "single submit: %s\n", s.error_message().c_str());
      return out;
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // passes make each array's window
  const uint64_t rss = RssBytes(d.coordinator_pid());
  const double tasks = reps * 10'000.0;
  out.array_ms = Percentile(array_ms, 0.5);
  out.single_ms = Percentile(single_ms, 0.5);
  out.rss_per_task = (static_cast<double>(rss) - static_cast<double>(rss_empty)) / tasks;
  std::printf(
      "array of 10,000 tasks: one Submit p50 %.2f ms (one job's: %.2f ms; %.2f x); coordinator "
      "RSS %.1f MiB empty, %.1f MiB with %.0f pending array tasks: %.1f bytes per task\n",
      out.array_ms, out.single_ms, out.array_ms / out.single_ms, rss_empty / 1048576.0,
      rss / 1048576.0, tasks, out.rss_per_task);
  return out;
}

// Waits (at most `limit`) until `pid` uses under 5% of a core over a second: a store filled
// in bulk is compacted at its first open, and queries measured beside that measure it.
void WaitSettled(pid_t pid, std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  double last = baton::bench::ProcessCpuSeconds(pid);
  while (Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double now = baton::bench::ProcessCpuSeconds(pid);
    if (now - last < 0.05) return;
    last = now;
  }
  std::fprintf(stderr, "the coordinator was still busy after %lld s\n",
               static_cast<long long>(limit.count()));
}

struct AccountingFigures {
  double usage_ms = -1, history_ms = -1, ping_ms = -1;  // p50 of each RPC
  double list_scan_ms = -1;                             // the history without its index
  int usage_lines = 0, history_jobs = 0, list_scan_jobs = 0;
};

AccountingFigures AccountingQueries(const std::string& dir, int reps, uint32_t classes) {
  AccountingFigures out;
  Daemons d(dir);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  {
    auto began = Clock::now();
    auto store = baton::Store::Open(dir + "/coordinator", {.sync = false, .bulk = true});
    if (!store.ok()) {
      std::fprintf(stderr, "accounting: %s\n", store.status().ToString().c_str());
      return out;
    }
    baton::testing::UsageOptions u;
    u.last_day = baton::usage::DayOf(now_ms);
    u.classes_per_user = classes;
    absl::Status s = baton::testing::WriteUsageRollup(**store, u);
    baton::testing::HistoryOptions h;
    h.jobs = 1'000'000;
    h.events_per_job = 2;
    h.users = 1000;
    h.tenants = 100;
    h.span_ms = 30LL * 86'400'000 - 3'600'000;  // ending an hour ago
    h.start_ms = now_ms - 30LL * 86'400'000;
    if (s.ok()) s = baton::testing::WriteFinishedHistory(**store, h);
    if (!s.ok()) {
      std::fprintf(stderr, "accounting: %s\n", s.ToString().c_str());
      return out;
    }
    std::printf("accounting: a year of rollups and 1,000,000 finished jobs written in %.1f s\n",
                Ms(Clock::now() - began) / 1000);
  }
  // Retention longer than the history, so that no deletion runs beside the queries.
  std::string target = d.StartCoordinator({"--retention", "40d"});
  Api api = Stub(d, target, d.Token(/*tenant=*/""));  // an admin's: every tenant's usage
  WaitSettled(d.coordinator_pid(), std::chrono::seconds(120));
  v1::UsageRequest usage;
  usage.set_since_ms(now_ms - 364LL * 86'400'000);
  usage.set_by(v1::USAGE_GROUP_USER);
  v1::HistoryRequest history;
  history.set_user("user-17");
  history.set_since_ms(now_ms - 7LL * 86'400'000);
  // One call, timed into `ms`; false (said on stderr) when it failed.
  auto timed = [&api](const char* what, std::vector<double>& ms, const auto& call) {
    grpc::ClientContext ctx;
    api.Prepare(&ctx);
    const auto began = Clock::now();
    const grpc::Status s = call(&ctx);
    ms.push_back(Ms(Clock::now() - began));
    if (!s.ok()) std::fprintf(stderr, "%s: %s\n", what, s.error_message().c_str());
    return s.ok();
  };
  std::vector<double> usage_ms, history_ms, ping_ms;
  for (int i = 0; i < reps; ++i) {
    v1::PingResponse pong;
    v1::UsageResponse lines;
    v1::HistoryResponse jobs;
    if (!timed(
            "ping", ping_ms,
            [&](grpc::ClientContext* c) { return api.stub->Ping(c, v1::PingRequest(), &pong); }) ||
        !timed("usage", usage_ms,
               [&](grpc::ClientContext* c) { return api.stub->Usage(c, usage, &lines); }) ||
        !timed("history", history_ms,
               [&](grpc::ClientContext* c) { return api.stub->History(c, history, &jobs); })) {
      return out;
    }
    out.usage_lines = lines.lines_size();
    out.history_jobs = jobs.jobs_size();
  }
  // The same answer without the ended index: every finished job listed, filtered here.
  {
    v1::ListRequest req;
    req.set_all(true);
    auto began = Clock::now();
    for (;;) {
      grpc::ClientContext ctx;
      api.Prepare(&ctx);
      v1::ListResponse page;
      grpc::Status s = api.stub->List(&ctx, req, &page);
      if (!s.ok()) {
        std::fprintf(stderr, "list: %s\n", s.error_message().c_str());
        break;
      }
      for (const auto& j : page.jobs()) {
        if (j.user() == history.user() && j.finished_ms() >= history.since_ms())
          ++out.list_scan_jobs;
      }
      if (page.next_page_token().empty()) break;
      req.set_page_token(page.next_page_token());
    }
    out.list_scan_ms = Ms(Clock::now() - began);
  }
  out.usage_ms = Percentile(usage_ms, 0.5);
  out.history_ms = Percentile(history_ms, 0.5);
  out.ping_ms = Percentile(ping_ms, 0.5);
  std::printf(
      "usage of a year by user (%d lines): p50 %.2f ms; history of one user's last 7 days among "
      "1,000,000 finished jobs (%d jobs): p50 %.2f ms; empty RPC p50 %.2f ms; the same history "
      "by listing every job: %.0f ms (%d jobs)\n",
      out.usage_lines, out.usage_ms, out.history_jobs, out.history_ms, out.ping_ms,
      out.list_scan_ms, out.list_scan_jobs);
  if (out.list_scan_jobs != out.history_jobs) {
    std::fprintf(stderr, "history found %d jobs, the full listing %d\n", out.history_jobs,
                 out.list_scan_jobs);
    out.history_ms = -1;
  }
  return out;
}

// Durable submits per second through the store alone: a Committer over RocksDB (synced,
// group commit) in `dir`, with `in_flight` submits' batches outstanding at all times, each
// completion enqueueing the next (as the API's clients do). A batch is what a submit
// writes: the job record (TrivialSpec, as submitted), its first event, the event's entry
// in the global log, the next job id. 0 when the store does not open.
double GroupCommitLimit(const std::string& dir, int in_flight, double seconds) {
  std::filesystem::create_directories(dir);
  auto store = baton::Store::Open(dir + "/store", baton::StoreOptions());
  if (!store.ok()) {
    std::fprintf(stderr, "group commit: %s\n", store.status().ToString().c_str());
    return 0;
  }
  std::atomic<uint64_t> next_id{1}, done{0};
  std::atomic<int> outstanding{in_flight};
  std::mutex mu;
  std::condition_variable cv;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  const auto begin = Clock::now();
  {
    baton::Committer committer(store->get());
    std::function<void()> submit = [&] {
      const uint64_t id = next_id++;
      baton::StoreBatch batch;
      v1::Job& job = batch.jobs.emplace_back();
      job.set_id(id);
      *job.mutable_spec() = baton::bench::TrivialSpec();
      job.mutable_spec()->set_tenant("bench");
      job.mutable_spec()->set_priority_class("batch");
      job.set_user("root");
      job.set_state(v1::JOB_STATE_PENDING);
      job.set_submitted_ms(absl::ToUnixMillis(absl::Now()));
      job.set_version(1);
      v1::Event& ev = batch.events.emplace_back();
      ev.set_job_id(id);
      ev.set_seq(1);
      ev.set_time_ms(job.submitted_ms());
      ev.set_to(v1::JOB_STATE_PENDING);
      ev.set_reason("submitted by root");
      ev.set_actor("root");
      ev.set_kind(v1::EVENT_KIND_TRANSITION);
      ev.set_tenant("bench");
      ev.set_priority_class("batch");
      ev.set_log_seq(id);
      batch.log.push_back(ev);
      batch.next_job_id = id + 1;
      committer.Enqueue(std::move(batch), [&] {
        ++done;
        if (Clock::now() < end) return submit();
        std::lock_guard<std::mutex> lock(mu);
        if (--outstanding == 0) cv.notify_all();
      });
    };
    for (int i = 0; i < in_flight; ++i) submit();
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return outstanding.load() == 0; });
  }
  const double rate = done / std::chrono::duration<double>(Clock::now() - begin).count();
  store->reset();
  std::filesystem::remove_all(dir);
  return rate;
}

int main(int argc, char** argv) {
  // The clients share the coordinator's two cores: no lock-order graph in them either.
  baton::DisableMutexDeadlockDetection();
  cxxopts::Options opts("baton-bench-submit", "submit cost and throughput");
  opts.add_options()("dir", "data dir (on the disk under test)",
                     cxxopts::value<std::string>()->default_value("/var/tmp"))(
      "cli-submits", "sequential baton submit processes",
      cxxopts::value<int>()->default_value("1000"))(
      "api-clients", "API submits in flight at all times (concurrent clients)",
      cxxopts::value<int>()->default_value("512"))("api-seconds", "duration of the API phase",
                                                   cxxopts::value<double>()->default_value("5"))(
      "agents", "agents for the end-to-end phase", cxxopts::value<int>()->default_value("16"))(
      "e2e-jobs", "trivial jobs for the end-to-end phase",
      cxxopts::value<int>()->default_value("1000"))(
      "array-reps", "10,000-task arrays submitted (each beside a single job)",
      cxxopts::value<int>()->default_value("10"))(
      "accounting-reps", "usage and history queries (each beside an empty RPC)",
      cxxopts::value<int>()->default_value("10"))(
      "usage-classes", "classes each user's rollup rows are in (rows = days x users x this)",
      cxxopts::value<uint32_t>()->default_value("2"))(
      "phases", "which phases to run: cli, api, e2e, arrays, accounting (comma-separated)",
      cxxopts::value<std::string>()->default_value("cli,api,e2e,arrays,accounting"));
  const cxxopts::ParseResult r = baton::bench::ParseFlags(opts, argc, argv);
  for (const char* name :
       {"cli-submits", "api-clients", "agents", "e2e-jobs", "array-reps", "accounting-reps"}) {
    baton::bench::FlagAtLeast(opts, r, name, 1);
  }
  std::set<std::string> phases;
  {
    std::stringstream list(r["phases"].as<std::string>());
    for (std::string p; std::getline(list, p, ',');) {
      if (p != "cli" && p != "api" && p != "e2e" && p != "arrays" && p != "accounting") {
        baton::bench::BadFlags(
            opts, "--phases: unknown phase '" + p + "' (cli, api, e2e, arrays, accounting)");
      }
      phases.insert(p);
    }
  }
  auto want = [&](const char* phase) { return phases.count(phase) > 0; };
  // The JSON line: "key":value for each figure of the phases run.
  std::string json = "{\"auth\":\"munge+tls\",\"api_auth\":\"token+tls\"";
  auto figure = [&json](const char* key, double v, int precision = 3) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ",\"%s\":%.*f", key, precision, v);
    json += buf;
  };
  if (!(r["api-seconds"].as<double>() > 0)) {
    baton::bench::BadFlags(opts, "--api-seconds must be above 0");
  }
  char tmpl[256];
  std::snprintf(tmpl, sizeof tmpl, "%s/baton-bench-submit.XXXXXX",
                r["dir"].as<std::string>().c_str());
  std::string dir = mkdtemp(tmpl);

  double fsync_ms = FsyncP50Ms(dir);
  std::printf("fdatasync of 4 KiB on %s: p50 %.2f ms\n", dir.c_str(), fsync_ms);

  // 1. CLI vs floor, interleaved so that noise hits both alike.
  if (want("cli")) {
    std::vector<double> floor_ms, cli_ms;
    double cli_total_s = 0;
    Daemons d(dir + "/cli");
    std::string target = d.StartCoordinator();
    std::map<std::string, std::string> env = d.ClientEnv();
    int n = r["cli-submits"].as<int>();
    for (int i = 0; i < n; ++i) {
      floor_ms.push_back(TimeProcess({BinDir() + "/baton-rpc-floor", target}, env));
      double ms =
          TimeProcess({BinDir() + "/baton", "submit", "-q", "--cpus", "100m", "--", "true"}, env);
      cli_ms.push_back(ms);
      cli_total_s += ms / 1000;
    }
    if (std::count(cli_ms.begin(), cli_ms.end(), -1.0) ||
        std::count(floor_ms.begin(), floor_ms.end(), -1.0)) {
      std::fprintf(stderr, "some CLI or floor processes failed\n");
      return 1;
    }
    double floor_p50 = Percentile(floor_ms, 0.5), cli_p50 = Percentile(cli_ms, 0.5);
    double cli_p99 = Percentile(cli_ms, 0.99);
    std::printf("floor (one empty RPC per process): p50 %.2f ms  p99 %.2f ms\n", floor_p50,
                Percentile(floor_ms, 0.99));
    std::printf(
        "baton submit:                      p50 %.2f ms  p99 %.2f ms  (%.2f x floor, %.2f x "
        "floor + fsync)  %.0f submits/s\n",
        cli_p50, cli_p99, cli_p50 / floor_p50, cli_p50 / (floor_p50 + fsync_ms),
        cli_ms.size() / cli_total_s);
    figure("cli_submit_p50_vs_empty_rpc", cli_p50 / floor_p50);
    figure("cli_submits_per_s", cli_ms.size() / cli_total_s, 1);
    figure("cli_submit_p50_ms", cli_p50);
    figure("cli_submit_p99_ms", cli_p99);
    figure("empty_rpc_p50_ms", floor_p50);
    figure("cli_submit_p50_vs_empty_rpc_plus_fsync", cli_p50 / (floor_p50 + fsync_ms));
  }
  figure("fsync_p50_ms", fsync_ms);

  // 2. Durable submits through the API, fair-use limits on (BenchPolicy: far above the
  // load) and off (no rate; the waiting-job cap cannot be off, it stays far above), each
  // repetition on fresh daemons, interleaved.
  std::string limits_off = baton::testing::BenchPolicy();
  size_t rate_at = limits_off.find("submit_rate: 1000000");
  if (rate_at == std::string::npos) {
    std::fprintf(stderr, "BenchPolicy() sets no submit_rate\n");
    return 1;
  }
  limits_off.replace(rate_at, std::string("submit_rate: 1000000").size(), "submit_rate: 0");
  const int clients = r["api-clients"].as<int>();
  std::vector<double> api_on, api_off, throttle_ratios, server_cpu, client_cpu;
  std::vector<double> pings, ping_server_cpu, ping_client_cpu;
  for (int rep = 0; rep < (want("api") ? 3 : 0); ++rep) {
    double rate[2] = {0, 0};
    for (int off = 0; off < 2; ++off) {
      Daemons d(dir + "/api" + std::to_string(rep) + (off ? "-off" : "-on"),
                off ? limits_off : baton::testing::BenchPolicy());
      std::string target = d.StartCoordinator();
      baton::bench::ApiRun run = baton::bench::ApiSubmitRun(
          d, target, clients, r["api-seconds"].as<double>(), d.coordinator_pid());
      rate[off] = run.per_s;
      if (off == 0) {
        server_cpu.push_back(run.server_cpu_us);
        client_cpu.push_back(run.client_cpu_us);
      }
    }
    {
      Daemons d(dir + "/api" + std::to_string(rep) + "-ping");
      std::string target = d.StartCoordinator();
      baton::bench::ApiRun run = baton::bench::ApiSubmitRun(
          d, target, clients, r["api-seconds"].as<double>(), d.coordinator_pid(), /*ping=*/true);
      pings.push_back(run.per_s);
      ping_server_cpu.push_back(run.server_cpu_us);
      ping_client_cpu.push_back(run.client_cpu_us);
    }
    api_on.push_back(rate[0]);
    api_off.push_back(rate[1]);
    throttle_ratios.push_back(rate[1] > 0 ? rate[0] / rate[1] : 0);
    std::printf(
        "API submits, repetition %d: limits on %.0f /s (coordinator %.0f us of CPU per submit, "
        "clients %.0f us), off %.0f /s (%.3f); empty RPC %.0f /s (coordinator %.0f us, clients "
        "%.0f us)\n",
        rep + 1, rate[0], server_cpu.back(), client_cpu.back(), rate[1], throttle_ratios.back(),
        pings.back(), ping_server_cpu.back(), ping_client_cpu.back());
  }
  if (want("api")) {
    // The group-commit limit: the store alone (RocksDB, synced, the committer's group
    // commit) taking each submit's batch from as many concurrent submitters, on the same
    // disk, measured between the API's repetitions' daemons (no daemon runs beside it).
    std::vector<double> limits;
    for (int rep = 0; rep < 3; ++rep) {
      limits.push_back(GroupCommitLimit(dir + "/commit" + std::to_string(rep), clients,
                                        r["api-seconds"].as<double>()));
    }
    double api_rate = Percentile(api_on, 0.5), group_limit = Percentile(limits, 0.5);
    std::printf(
        "API submits (%d in flight, token + TLS, each durable): %.0f /s; the group-commit "
        "limit (the store alone, %d submitters) %.0f /s (%.3f)\n",
        clients, api_rate, clients, group_limit, group_limit > 0 ? api_rate / group_limit : 0);
    figure("api_submits_per_s", api_rate, 1);
    figure("group_commit_submits_per_s", group_limit, 1);
    figure("api_vs_group_commit_limit", group_limit > 0 ? api_rate / group_limit : 0);
    figure("throttle_overhead_ratio", Percentile(throttle_ratios, 0.5));
    figure("api_submits_per_s_limits_off", Percentile(api_off, 0.5), 1);
    figure("api_clients", clients, 0);
    figure("api_server_cpu_us_per_submit", Percentile(server_cpu, 0.5), 1);
    figure("api_client_cpu_us_per_submit", Percentile(client_cpu, 0.5), 1);
    figure("api_empty_rpc_per_s", Percentile(pings, 0.5), 1);
    figure("api_vs_empty_rpc", Percentile(pings, 0.5) > 0 ? api_rate / Percentile(pings, 0.5) : 0);
    figure("api_empty_rpc_server_cpu_us", Percentile(ping_server_cpu, 0.5), 1);
    figure("api_empty_rpc_client_cpu_us", Percentile(ping_client_cpu, 0.5), 1);
  }

  // 3. End to end on many agents, between two runs of its floor.
  double e2e_rate = 0;
  int memcgs_start = -1, memcgs_end = -1;
  const int floor_threads = r["agents"].as<int>();
  double spawn_floor =
      want("e2e") ? SpawnFloorJobsPerSec(dir + "/floor", r["e2e-jobs"].as<int>(), floor_threads)
                  : 0;
  if (want("e2e")) {
    Daemons d(dir + "/e2e");
    std::string target = d.StartCoordinator();
    int agents = r["agents"].as<int>(), jobs = r["e2e-jobs"].as<int>();
    for (int i = 0; i < agents; ++i) d.StartAgent(target, "n" + std::to_string(i));
    Api stub = Stub(d, target, d.Token());
    baton::testing::WaitFor(
        [&] {
          grpc::ClientContext ctx;
          stub.Prepare(&ctx);
          v1::ListNodesResponse resp;
          if (!stub.stub->ListNodes(&ctx, v1::ListNodesRequest(), &resp).ok()) return false;
          return resp.nodes_size() == agents;
        },
        std::chrono::seconds(30));
    memcgs_start = MemoryCgroups();
    auto start = Clock::now();
    std::vector<std::thread> pool;
    std::atomic<int> next{0};
    for (int t = 0; t < 8; ++t) {
      pool.emplace_back([&] {
        uint64_t id;
        while (next++ < jobs) Call(stub, TrivialSpec(), &id);
      });
    }
    for (auto& th : pool) th.join();
    // Polled cheaply (a listing of every finished job, 50 times a second, would load the
    // coordinator and this process more with each job done); the outcomes counted once.
    bool ok = baton::testing::WaitFor([&] { return NoneUnfinished(stub).value_or(false); },
                                      std::chrono::seconds(300));
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    memcgs_end = MemoryCgroups();
    ok = ok && CountSucceeded(stub) >= static_cast<size_t>(jobs);
    if (!ok) std::fprintf(stderr, "end to end: not every job succeeded\n");
    e2e_rate = ok ? jobs / secs : 0;
    std::printf("end to end: %d trivial jobs on %d agents in %.2f s: %.0f jobs/s\n", jobs, agents,
                secs, e2e_rate);
    std::printf(
        "memory cgroups on the machine (dying ones included): %d at the start, %d at "
        "the end\n",
        memcgs_start, memcgs_end);
  }
  if (want("e2e")) {
    spawn_floor = std::max(
        spawn_floor, SpawnFloorJobsPerSec(dir + "/floor", r["e2e-jobs"].as<int>(), floor_threads));
    std::printf("floor: the jobs' own processes alone (keeper + true, %d threads): %.0f jobs/s\n",
                floor_threads, spawn_floor);
    figure("e2e_jobs_per_s", e2e_rate, 1);
    figure("e2e_spawn_floor_jobs_per_s", spawn_floor, 1);
    figure("e2e_vs_spawn_floor", spawn_floor > 0 ? e2e_rate / spawn_floor : 0);
    figure("memcgs_at_e2e_start", memcgs_start, 0);
    figure("memcgs_at_e2e_end", memcgs_end, 0);
  }
  // 4. Arrays.
  if (want("arrays")) {
    const ArrayFigures arrays = ArraySubmits(dir + "/arrays", r["array-reps"].as<int>());
    figure("array_submit_ms_10k_tasks", arrays.array_ms);
    figure("single_submit_ms", arrays.single_ms);
    figure("array_submit_vs_single", arrays.single_ms > 0 ? arrays.array_ms / arrays.single_ms : 0);
    figure("rss_bytes_per_pending_array_task", arrays.rss_per_task, 1);
  }
  // 5. Accounting.
  if (want("accounting")) {
    const AccountingFigures a = AccountingQueries(
        dir + "/accounting", r["accounting-reps"].as<int>(), r["usage-classes"].as<uint32_t>());
    figure("usage_query_ms_year", a.usage_ms);
    figure("usage_query_vs_empty_rpc", a.ping_ms > 0 ? a.usage_ms / a.ping_ms : 0);
    figure("history_query_ms_1m_jobs", a.history_ms);
    figure("history_query_vs_empty_rpc", a.ping_ms > 0 ? a.history_ms / a.ping_ms : 0);
    figure("history_vs_full_listing", a.list_scan_ms > 0 ? a.history_ms / a.list_scan_ms : 0, 5);
    figure("usage_query_empty_rpc_ms", a.ping_ms);
  }
  std::filesystem::remove_all(dir);
  std::printf("%s}\n", json.c_str());
  return 0;
}
