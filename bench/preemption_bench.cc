// baton-bench-preemption: on a full 2-node x 2-GPU namespace cluster (a train_mlp gang
// holds every GPU), the time from a high-priority inference submit to its process
// running, split into decision (submit -> Preempt sent), signal (-> the ranks heard
// SIGUSR1), step (-> every rank agreed to stop at a step boundary), checkpoint (-> the
// eviction's checkpoint committed), exit (-> the coordinator saw the attempt end) and
// launch (-> the inference process started). Then the victim resumes and the steps it
// redid are counted (0 for a job that honours the signal). Keys:
// preempt_s_excl_checkpoint (everything but the victim's checkpoint write, seconds; target
// <= 1) and lost_steps (summed over rounds; target 0). Needs root (namespace cluster).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "bench/bench_flags.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace {

using namespace baton::testing;  // NOLINT: the test cluster's helpers

// Unix ms of each phase's end, one eviction.
struct Round {
  int64_t submit = 0, decision = 0, signal = 0, agreed = 0, saved = 0, exit = 0, running = 0;
  int64_t lost_steps = 0;
  double excl_checkpoint_s() const { return (running - submit - (saved - agreed)) / 1000.0; }
};

std::string Log(NetnsCluster& c, uint64_t job, const std::string& attempt) {
  return c.Baton({"logs", std::to_string(job), "--attempt", attempt}).out;
}

// The last "step N loss" in a log, -1 if none.
int64_t LastStep(const std::string& log) {
  static const std::regex step("step (\\d+) loss");
  int64_t last = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), step); it != std::sregex_iterator();
       ++it) {
    last = std::max<int64_t>(last, std::stoll((*it)[1]));
  }
  return last;
}

// One eviction and resume; false (with a message) when something did not happen.
bool RunRound(NetnsCluster& c, const TempDir& dir, int index, Round* r) {
  std::string ckpt = dir.Sub("ckpt" + std::to_string(index));
  std::vector<std::string> args =
      TrainMlpGangSubmit(ckpt, "30s", {"--steps", "100000", "--save-every", "1000000"});
  args.insert(args.end(), {"--step-ms", "20"});
  uint64_t train = ClusterClient::SubmittedId(c.Baton(args).out);
  auto fail = [&](const std::string& what, uint64_t job) {
    std::fprintf(stderr, "round %d: %s%s\n", index, what.c_str(), c.Describe(job).c_str());
    return false;
  };
  if (!c.WaitForState(train, "JOB_STATE_RUNNING")) return fail("training never ran", train);
  if (!WaitFor([&] { return LastStep(Log(c, train, "1")) >= 50; }, std::chrono::seconds(60))) {
    return fail("training made no progress", train);
  }

  std::string probe = dir.Sub("serving" + std::to_string(index));
  r->submit = UnixNowMs();
  uint64_t serve = ClusterClient::SubmittedId(
      c.Baton({"submit", "-q", "--class", "inference", "--gpus", "2", "--cpus", "1", "--", "sh",
               "-c", "date +%s%3N > " + probe + "; exec sleep 600"},
              baton::testing::kBob)
          .out);
  if (!WaitFor([&] { return !ReadFile(probe).empty(); }, std::chrono::seconds(60))) {
    return fail("inference never started", serve);
  }
  r->running = std::stoll(ReadFile(probe));
  if (!c.WaitForState(train, "JOB_STATE_COOLDOWN")) return fail("no cooldown", train);
  auto job = c.GetJob(train);
  if (!job || job->attempts_size() < 1) return fail("no attempt record", train);
  r->decision = job->attempts(0).preempted_ms();
  r->exit = job->attempts(0).ended_ms();
  std::string log1 = Log(c, train, "1");
  std::smatch m;
  if (!std::regex_search(log1, m,
                         std::regex("evicted: saved step \\d+ \\(signal (\\d+) agreed (\\d+) "
                                    "saved (\\d+)\\)"))) {
    return fail("no eviction timeline in the log", train);
  }
  r->signal = std::stoll(m[1]);
  r->agreed = std::stoll(m[2]);
  r->saved = std::stoll(m[3]);

  // Room again: the victim resumes; the steps it ran twice are the work lost.
  c.Baton({"cancel", std::to_string(serve)}, baton::testing::kRoot);
  std::smatch restored;
  std::string log2;
  if (!WaitFor(
          [&] {
            log2 = Log(c, train, "2");
            return std::regex_search(log2, restored, std::regex("restored step (\\d+)"));
          },
          std::chrono::seconds(60))) {
    return fail("the victim did not resume", train);
  }
  r->lost_steps = std::max<int64_t>(0, LastStep(log1) - std::stoll(restored[1]));
  c.Baton({"cancel", std::to_string(train)}, baton::testing::kRoot);
  return c.WaitForState(train, "JOB_STATE_CANCELLED") || fail("cancel did not end it", train);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options opts("baton-bench-preemption", "preemption on a full namespace cluster");
  opts.add_options()("reps", "rounds", cxxopts::value<int>()->default_value("3"));
  const cxxopts::ParseResult flags = baton::bench::ParseFlags(opts, argc, argv);
  const int reps = baton::bench::FlagAtLeast(opts, flags, "reps", 1);
  TempDir dir("baton-bench-preempt");
  baton::testing::MakeShared(dir.path());  // the jobs (test users') write here
  NetnsCluster cluster(/*nodes=*/2, /*gpus=*/2, EvictAtOncePolicy(dir.Sub("policy.yaml"), "1s"),
                       "bp");
  if (!cluster.ok()) {
    std::fprintf(stderr, "baton-bench-preemption: %s\n", cluster.why().c_str());
    return 1;
  }
  std::vector<Round> rounds;
  for (int i = 0; i < reps; ++i) {
    Round r;
    if (!RunRound(cluster, dir, i, &r)) return 1;
    rounds.push_back(r);
  }
  auto median = [&](auto f) {
    std::vector<double> v;
    for (const Round& r : rounds) v.push_back(f(r));
    return Median(v);
  };
  struct Phase {
    const char* name;
    double ms;
  };
  std::vector<Phase> phases = {
      {"decision (submit -> Preempt)",
       median([](const Round& r) { return r.decision - r.submit; })},
      {"signal (-> SIGUSR1 heard)", median([](const Round& r) { return r.signal - r.decision; })},
      {"step (-> all ranks stop)", median([](const Round& r) { return r.agreed - r.signal; })},
      {"checkpoint (-> committed)", median([](const Round& r) { return r.saved - r.agreed; })},
      {"exit (-> attempt ended)", median([](const Round& r) { return r.exit - r.saved; })},
      {"launch (-> inference runs)", median([](const Round& r) { return r.running - r.exit; })},
  };
  double total = median([](const Round& r) { return r.running - r.submit; });
  std::printf("preemption on a full 2-node namespace cluster, median of %d round(s):\n", reps);
  for (const Phase& p : phases) {
    std::printf("  %-30s %8.0f ms  %5.1f%%\n", p.name, p.ms, total > 0 ? 100 * p.ms / total : 0);
  }
  std::printf("  %-30s %8.0f ms\n", "total", total);
  double excl = median([](const Round& r) { return r.excl_checkpoint_s(); });
  int64_t lost = 0;
  for (const Round& r : rounds) lost += r.lost_steps;
  std::printf("everything but the checkpoint write: %.3f s = %.2f x the 1 s target\n", excl,
              excl / 1.0);
  std::printf("steps redone after resuming: %lld over %d eviction(s) (target 0)\n",
              static_cast<long long>(lost), reps);
  std::printf(
      "{\"preempt_s_excl_checkpoint\": %.3f, \"lost_steps\": %lld, \"total_ms\": %.0f, "
      "\"decision_ms\": %.0f, \"signal_ms\": %.0f, \"step_ms\": %.0f, \"checkpoint_ms\": %.0f, "
      "\"exit_ms\": %.0f, \"launch_ms\": %.0f, \"rounds\": %d}\n",
      excl, static_cast<long long>(lost), total, phases[0].ms, phases[1].ms, phases[2].ms,
      phases[3].ms, phases[4].ms, phases[5].ms, reps);
  return 0;
}
