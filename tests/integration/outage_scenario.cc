#include "tests/integration/outage_scenario.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/eviction_jobs.h"
#include "tests/integration/witness.h"

namespace baton::testing {
std::vector<std::string> OutageTrainingFlags(int seconds) {
  return {"--steps", std::to_string(seconds * 10), "--save-every", "20"};
}

OutageReport StartOutageJobs(NetnsCluster& cluster, const std::string& dir, int train_seconds) {
  OutageReport r;
  r.ckpt = dir + "/ckpt";
  r.heartbeat = dir + "/heartbeat";
  r.training_flags = OutageTrainingFlags(train_seconds);
  std::vector<std::string> args = TrainMlpGangSubmit(r.ckpt, "10s", r.training_flags);
  args.insert(args.end(), {"--step-ms", "100"});
  r.training = ClusterClient::SubmittedId(cluster.Baton(args).out);
  r.service = ClusterClient::SubmittedId(
      cluster
          .Baton({"submit", "-q", "--class", "inference", "--gpus", "2", "--cpus", "1", "--", "sh",
                  "-c",
                  "while :; do echo \"$$ $(date +%s%3N)\" >> " + r.heartbeat + "; sleep 1; done"},
                 kBob)
          .out);
  if (r.training == 0 || r.service == 0) {
    r.error = "submit failed";
    return r;
  }
  const bool running = WaitFor(
      [&] {
        auto t = cluster.GetJob(r.training);
        auto s = cluster.GetJob(r.service);
        const std::string beats = ReadFile(r.heartbeat);
        return t && s && s->state() == v1::JOB_STATE_RUNNING && t->attempts_size() == 1 &&
               t->attempts(0).checkpoint_step() >= 20 &&
               std::count(beats.begin(), beats.end(), '\n') >= 2;
      },
      std::chrono::seconds(90));
  if (!running) {
    r.error =
        "the jobs did not start: " + cluster.Describe(r.training) + cluster.Describe(r.service);
  }
  return r;
}

void MeasureService(OutageReport& r) {
  std::istringstream in(ReadFile(r.heartbeat));
  std::set<std::string> pids;
  std::string pid;
  int64_t t = 0, last = 0;
  r.service_max_gap_ms = 0;
  double silent_s = 0;
  while (in >> pid >> t) {
    pids.insert(pid);
    if (last != 0) {
      r.service_max_gap_ms = std::max(r.service_max_gap_ms, t - last);
      if (t - last > 2000) silent_s += (t - last - 1000) / 1000.0;
    }
    last = t;
  }
  // Still silent now counts too.
  if (last != 0 && UnixNowMs() - last > 2000) {
    r.service_max_gap_ms = std::max(r.service_max_gap_ms, UnixNowMs() - last);
    silent_s += (UnixNowMs() - last - 1000) / 1000.0;
  }
  r.service_pids = static_cast<int>(pids.size());
  r.work_lost_s += silent_s;
}

OutageReport RunCoordinatorOutage(NetnsCluster& cluster, const std::string& dir,
                                  std::chrono::seconds outage) {
  const int train_s = static_cast<int>(outage.count()) + 30;
  OutageReport r = StartOutageJobs(cluster, dir, train_s);
  if (!r.error.empty()) return r;
  r.down_ms = UnixNowMs();
  if (!cluster.StopCoordinator("KILL")) {
    r.error = "could not kill the coordinator";
    return r;
  }
  std::this_thread::sleep_for(outage);
  if (!cluster.StartCoordinator()) {
    r.error = "could not start the coordinator again";
    return r;
  }
  r.up_ms = UnixNowMs();
  FinishOutage(cluster, r, std::chrono::seconds(train_s + 60));
  return r;
}

void FinishOutage(NetnsCluster& cluster, OutageReport& r, std::chrono::seconds wait) {
  cluster.WaitForState(r.training, "JOB_STATE_SUCCEEDED", wait);
  MeasureService(r);
  r.training_log = cluster.Baton({"logs", std::to_string(r.training)}).out;
  r.training_max_gap_ms = MaxRankGapMs(ReadFile(r.ckpt + "/WITNESS"));

  const std::optional<v1::Job> t = cluster.GetJob(r.training);
  const std::optional<v1::Job> s = cluster.GetJob(r.service);
  if (!t || !s) {
    r.error = "the coordinator does not answer after the outage";
    return;
  }
  if (t->attempts_size() != 1 || t->state() != v1::JOB_STATE_SUCCEEDED) ++r.jobs_killed;
  if (s->attempts_size() != 1 || s->state() != v1::JOB_STATE_RUNNING) ++r.jobs_killed;
  for (int i = 0; i + 1 < t->attempts_size(); ++i) {
    const v1::Attempt& a = t->attempts(i);
    const int64_t since = std::max(a.checkpoint_time_ms(), a.started_ms());
    if (a.ended_ms() > since) r.work_lost_s += (a.ended_ms() - since) / 1000.0;
  }
}

}  // namespace baton::testing
