#include "launcher/agent/agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "launcher/agent/exit_plan.h"
#include "launcher/agent/job_files.h"
#include "launcher/agent/launch_env.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace baton {
namespace {

AttemptObserver* NoObserver() {
  static AttemptObserver none;
  return &none;
}

}  // namespace

Agent::Agent(AgentOptions options, v1::Inventory inventory, Clock* clock,
             std::unique_ptr<Isolator> isolator, AttemptObserver* observer, Spawner* spawner,
             CoordinatorLink* link)
    : options_(std::move(options)),
      inventory_(std::move(inventory)),
      clock_(clock),
      own_link_(link ? nullptr : GrpcCoordinatorLink(options_.coordinator, options_.tls)),
      link_(link ? link : own_link_.get()),
      own_reaper_(spawner ? nullptr : std::make_unique<Reaper>()),
      spawner_(spawner ? spawner : own_reaper_.get()),
      isolator_(isolator
                    ? std::move(isolator)
                    : std::make_unique<Isolator>(inventory_, ClassOptions(), nullptr, nullptr)),
      observer_(observer ? observer : NoObserver()),
      pump_(options_.max_log_bytes) {
  // The node's MPS pools: only where the inventory offers any (--mps-gpus).
  if (std::any_of(inventory_.gpus().begin(), inventory_.gpus().end(),
                  [](const v1::Gpu& g) { return g.mps_pool(); })) {
    mps_ = std::make_unique<MpsPools>(options_.data_dir + "/mps",
                                      std::make_unique<RealCommandRunner>(), options_.mps_control);
  }
}

absl::StatusOr<std::map<std::string, std::string>> Agent::AcquireShare(const v1::Launch& l) {
  const AttemptRequest r = IsolationRequest(l);
  const std::string gpu = r.gpu_ids.size() == 1 ? r.gpu_ids[0] : "";
  auto pool = std::find_if(inventory_.gpus().begin(), inventory_.gpus().end(),
                           [&](const v1::Gpu& g) { return g.uuid() == gpu && g.mps_pool(); });
  if (!mps_ || pool == inventory_.gpus().end()) {
    return absl::FailedPreconditionError("a " + std::to_string(l.spec().gpu_share_percent()) +
                                         "% share of GPU '" + gpu +
                                         "', which this node does not offer as an MPS pool");
  }
  return mps_->Acquire(l.job_id(), l.attempt(),
                       {gpu, l.spec().gpu_share_percent(), l.spec().gpu_memory_bytes()});
}

Agent::~Agent() { Stop(); }

void Agent::Start(const std::string& advertise_address) {
  advertise_address_ = advertise_address;
  exec_command_ = StageExecClient();
  RecoverAttempts();
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_contact_mono_ms_.store(clock_->MonotonicMs());
  }
  connection_ = std::thread([this] { ConnectionLoop(); });
  worker_ = std::thread([this] { WorkerLoop(); });
  effector_ = std::thread([this] { EffectsLoop(); });
  for (int i = 0; i < std::max(1, options_.launch_workers); ++i) {
    launchers_.emplace_back([this] { LaunchLoop(); });
  }
  janitor_.Start();
}

void Agent::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (options_.kill_jobs_on_stop) StopAllLocked("agent stopping", absl::Seconds(3));
  }
  if (options_.kill_jobs_on_stop) {
    // Give the ranks their short grace and report the ends while still connected.
    for (int i = 0; i < 50; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        bool live = false;
        for (const auto& [k, r] : attempts_) live |= r.busy() || r.finishing;
        if (!live) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (stream_) stream_->Cancel();
  }
  launch_cv_.notify_all();
  exits_cv_.notify_all();
  janitor_.Stop();
  if (connection_.joinable()) connection_.join();
  if (worker_.joinable()) worker_.join();
  effects_.Stop();  // the effects thread finishes what the worker handed it first
  if (effector_.joinable()) effector_.join();
  for (std::thread& t : launchers_) t.join();
  launchers_.clear();
}

bool Agent::connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stream_ != nullptr;
}

std::string Agent::JobDir(uint64_t job, uint32_t attempt) const {
  return options_.data_dir + "/jobs/" + std::to_string(job) + "/" + std::to_string(attempt);
}

std::string Agent::WorkDir(uint64_t job, uint32_t attempt) const {
  return JobDir(job, attempt) + "/work";
}

std::string Agent::PumpGroup(Key key) {
  return std::to_string(key.first) + "/" + std::to_string(key.second);
}

std::string Agent::LogPath(uint64_t job, uint32_t attempt) const {
  return JobDir(job, attempt) + "/output.log";
}

bool Agent::IsLive(uint64_t job, uint32_t attempt) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find({job, attempt});
  return it != attempts_.end() && (it->second.busy() || it->second.finishing);
}

// --- the coordinator stream -----------------------------------------------------------

void Agent::ConnectionLoop() {
  constexpr absl::Duration kFirstBackoff = absl::Milliseconds(100);
  absl::Duration backoff = kFirstBackoff;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    absl::Time started = clock_->Monotonic();
    Session();
    if (clock_->Monotonic() - started > absl::Seconds(5)) backoff = kFirstBackoff;  // a real one
    std::unique_lock<std::mutex> lock(exits_mu_);
    exits_cv_.wait_for(lock, absl::ToChronoMilliseconds(backoff));
    backoff = std::min(backoff * 2, options_.reconnect_max_backoff);
  }
}

void Agent::Session() {
  std::unique_ptr<CoordinatorStream> stream = link_->Connect();
  v1::NodeIsolation isolation = isolator_->Describe();  // its own lock, not ours
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    v1::AgentMessage msg;
    v1::Register* reg = msg.mutable_register_();
    reg->set_node(options_.node_name);
    reg->set_address(advertise_address_);
    *reg->mutable_inventory() = inventory_;
    reg->set_pool(options_.pool);
    reg->mutable_labels()->insert(options_.labels.begin(), options_.labels.end());
    for (const auto& t : options_.taints) *reg->add_taints() = t;
    for (const auto& [key, run] : attempts_) {
      if (!run.launching) *reg->add_attempts() = run.report;
    }
    reg->set_version("baton 0.1.0");
    *reg->mutable_isolation() = std::move(isolation);
    // The registration goes first; what is queued from now on follows it. Under mu_, so no
    // report can slip between the state it carries and the session's first message.
    stream_ = stream.get();
    outbox_.Open(std::move(msg));
  }
  std::thread writer([this, &stream] { outbox_.WriteLoop(*stream); });
  v1::CoordinatorCommand cmd;
  bool registered = false;
  while (stream->Read(&cmd)) {
    if (cmd.has_registered() && !registered) {
      registered = true;
      spdlog::info("registered with coordinator {} as {}", options_.coordinator,
                   options_.node_name);
    }
    Handle(cmd);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ = nullptr;
    outbox_.Close();  // the next registration carries every attempt's state
  }
  // A write blocked on a stream whose reads have ended returns once the call is torn
  // down; cancel it if it has not.
  if (!outbox_.WaitWriterDone(absl::Seconds(1))) stream->Cancel();
  writer.join();
  absl::Status status = stream->Finish();
  if (registered || !status.ok()) {
    spdlog::warn("coordinator stream ended: {} {}", static_cast<int>(status.code()),
                 std::string(status.message()));
  }
}

void Agent::SendLocked(v1::AgentMessage msg) {
  if (stream_ != nullptr) outbox_.Push(std::move(msg));
}

void Agent::ReportLocked(Run& run) {
  run.report.set_time_ms(clock_->NowMs());
  v1::AgentMessage msg;
  *msg.mutable_report() = run.report;
  SendLocked(std::move(msg));
}

void Agent::Handle(const v1::CoordinatorCommand& cmd) {
  if (!fence_.Accept(cmd.epoch())) return;
  last_contact_mono_ms_.store(clock_->MonotonicMs());
  if (cmd.has_heartbeat_ack()) {
    // Without the lock: an ack is never late for what the agent is doing meanwhile. It
    // carries the heartbeat's own time (this agent's wall clock).
    observer_->OnHeartbeatAck(
        absl::Milliseconds(std::max<int64_t>(0, clock_->NowMs() - cmd.heartbeat_ack().time_ms())));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  switch (cmd.cmd_case()) {
    case v1::CoordinatorCommand::kRegistered:
      heartbeat_interval_ = std::max(absl::Milliseconds(50),
                                     absl::Milliseconds(cmd.registered().heartbeat_interval_ms()));
      lease_ = std::max(2 * heartbeat_interval_, absl::Milliseconds(cmd.registered().lease_ms()));
      break;
    case v1::CoordinatorCommand::kLaunch:
      AcceptLaunchLocked(cmd.launch());
      break;
    case v1::CoordinatorCommand::kKill: {
      const v1::Kill& k = cmd.kill();
      auto it = attempts_.find({k.job_id(), k.attempt()});
      if (it == attempts_.end() || !it->second.busy()) break;
      spdlog::info("job {} attempt {}: signal {} ({}), SIGKILL in {} s", k.job_id(), k.attempt(),
                   k.signal(), k.reason(), k.grace_seconds());
      StopRun(it->first, it->second, k.signal() ? k.signal() : SIGKILL,
              clock_->Monotonic() + absl::Seconds(k.grace_seconds()),
              /*ranks_only=*/k.signal() == SIGUSR1);
      break;
    }
    case v1::CoordinatorCommand::kPreempt: {
      const v1::Preempt& p = cmd.preempt();
      auto it = attempts_.find({p.job_id(), p.attempt()});
      if (it == attempts_.end() || !it->second.busy()) break;
      // The deadline is the coordinator's wall clock; what is left of it, on ours.
      absl::Duration left =
          std::max(absl::ZeroDuration(), absl::FromUnixMillis(p.deadline_ms()) - clock_->Now());
      PreemptRun(it->first, it->second, clock_->Monotonic() + left);
      break;
    }
    case v1::CoordinatorCommand::kSignal: {
      const v1::SignalRanks& sr = cmd.signal();
      auto it = attempts_.find({sr.job_id(), sr.attempt()});
      if (it == attempts_.end() || (sr.signal() != SIGUSR1 && sr.signal() != SIGUSR2)) break;
      // Ranks (mpirun in mpi mode) only: a daemon or relay would die of it.
      for (const auto& [pid, rank] : it->second.ranks) spawner_->Signal(pid, sr.signal());
      break;
    }
    case v1::CoordinatorCommand::kAck: {
      auto it = attempts_.find({cmd.ack().job_id(), cmd.ack().attempt()});
      if (it != attempts_.end() && !it->second.busy() && !it->second.finishing) {
        attempts_.erase(it);
      }
      break;
    }
    default:
      break;
  }
}

// --- attempts ---------------------------------------------------------------------------

void Agent::StopRun(Key key, Run& run, int signal, absl::Time kill_at, bool ranks_only) {
  if (!BeginStopLocked(key, run)) return;
  CarryOutLocked(key, run, run.stop.Stop(signal, kill_at, ranks_only, clock_->Monotonic()));
}

bool Agent::BeginStopLocked(Key key, Run& run) {
  run.stop_ordered = true;
  run.report.set_killed(true);
  if (run.launching) {
    auto queued = std::find_if(launches_.begin(), launches_.end(), [&](const v1::Launch& l) {
      return l.job_id() == key.first && l.attempt() == key.second;
    });
    if (queued != launches_.end()) {
      // No launch worker has taken it: nothing is started, and its end is reported now.
      launches_.erase(queued);
      run.launching = false;
      launched_cv_.notify_all();
      spdlog::info("job {} attempt {}: stopped before it started", key.first, key.second);
      FinishRunLocked(key, run);
      return false;
    }
  }
  if (run.awaiting_exec && run.ranks.empty() && run.daemons.empty() && run.execs_starting == 0) {
    // A gang node whose daemon never came: nothing runs, so the attempt ends here.
    run.awaiting_exec = false;
    FinishRunLocked(key, run);
    return false;
  }
  run.awaiting_exec = false;
  return true;
}

void Agent::CarryOutLocked(Key key, Run& run, const StopPlan::Now& now) {
  if (now.kill) return KillNowLocked(key, run);
  if (now.signal && now.ranks_only) {
    for (const auto& [pid, rank] : run.ranks) spawner_->Signal(pid, now.signal);
  } else if (now.signal && run.pgid) {
    spawner_->Signal(-run.pgid, now.signal);
  }
  if (now.due && run.live()) KillNowLocked(key, run);
}

void Agent::PreemptRun(Key key, Run& run, absl::Time deadline) {
  const absl::Duration left = deadline - clock_->Monotonic();
  if (!run.stop.preempted()) {
    spdlog::info("job {} attempt {}: evicted, SIGUSR1; SIGKILL in {}", key.first, key.second,
                 absl::FormatDuration(left));
    if (!BeginStopLocked(key, run)) return;
  } else {
    spdlog::info("job {} attempt {}: eviction deadline now in {}", key.first, key.second,
                 absl::FormatDuration(left));
  }
  CarryOutLocked(key, run, run.stop.Preempt(deadline, clock_->Monotonic()));
}

void Agent::StopDisconnectedLocked(absl::Duration silent) {
  for (auto& [key, run] : attempts_) {
    if (!run.live() || !run.stop.StopForDisconnect(silent, run.stop_after_disconnect)) continue;
    // A graceful eviction decided here: the coordinator replaces the attempt only after
    // this bound + its grace + a margin, so the two never overlap.
    run.report.set_stopped_disconnected(true);
    run.report.set_message("stopped on " + options_.node_name + " after " +
                           std::to_string(absl::ToInt64Seconds(silent)) +
                           " s without the coordinator (stop_after_disconnect): checkpoint and "
                           "exit");
    spdlog::warn("job {} attempt {}: {}", key.first, key.second, run.report.message());
    PreemptRun(key, run, clock_->Monotonic() + run.grace);
  }
}

void Agent::KillNowLocked(Key key, Run& run) {
  if (run.pgid) spawner_->Signal(-run.pgid, SIGKILL);
  if (isolator_->enabled()) sweeps_.push_back(key);  // descendants that left the group too
  run.stop.Clear();
}

void Agent::StopAllLocked(const std::string& why, absl::Duration grace) {
  for (auto& [key, run] : attempts_) {
    if (!run.busy()) continue;
    spdlog::warn("job {} attempt {}: stopping ({})", key.first, key.second, why);
    if (run.report.message().empty()) run.report.set_message(why);
    StopRun(key, run, SIGTERM, clock_->Monotonic() + grace, /*ranks_only=*/false);
  }
}

void Agent::ReadNotesOutsideLock(const std::vector<NoteRead>& reads) {
  for (const NoteRead& r : reads) {
    // The end is reported once the output is in the log, so `baton logs` after the job
    // shows all of it.
    if (r.finishing) pump_.Drain(PumpGroup(r.key), std::chrono::seconds(2));
    absl::StatusOr<std::string> note = r.path.empty()
                                           ? absl::StatusOr<std::string>(absl::NotFoundError(""))
                                           : ReadUntrustedFile(r.path, r.owner);
    // An attempt that ended: its final figures, then what is left in its cgroups dies and
    // the cgroups and its network class go.
    std::optional<v1::AttemptIsolation> final_iso;
    if (r.finishing && isolator_->enabled()) {
      final_iso = IsolationOf(r.key);
      if (auto s = isolator_->Release(r.key.first, r.key.second); !s.ok()) {
        spdlog::error("job {} attempt {}: cleaning up its isolation: {}", r.key.first, r.key.second,
                      s.ToString());
      }
    }
    std::vector<Key> mps_faulted;
    if (r.finishing && mps_) {  // its MPS share: the pool's daemon stops after its last
      // Its GPU's daemon found dead now: the fault ended it, and every client of that GPU.
      // (Shares are inference; other ends leave the pools to the stats interval.)
      if (r.inference) mps_faulted = mps_->Check();
      if (auto s = mps_->Release(r.key.first, r.key.second); !s.ok()) {
        spdlog::error("job {} attempt {}: releasing its MPS share: {}", r.key.first, r.key.second,
                      s.ToString());
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    NoteMpsFaultsLocked(mps_faulted);
    if (r.finishing) {
      observer_->OnAttemptEnded(r.key.first, r.key.second);
      limits_changed_ |= r.inference;  // training widened again when inference left
    }
    auto it = attempts_.find(r.key);
    if (it == attempts_.end()) continue;
    Run& run = it->second;
    if (final_iso) *run.report.mutable_isolation() = std::move(*final_iso);
    bool changed = ApplyProgressNote(note, run.progress, run.report);
    if (r.finishing && run.finishing) {
      run.finishing = false;
      if (run.report.phase() != v1::AttemptReport::PHASE_REJECTED) {
        run.report.set_phase(v1::AttemptReport::PHASE_EXITED);
      }
      if (run.mps_fault && (run.report.exit_code() != 0 || run.report.term_signal() != 0)) {
        const std::string how = run.report.message();
        run.report.set_message(
            "the MPS server of its GPU failed (the agent found the GPU's MPS control daemon "
            "dead and started it again); every client of that GPU ended" +
            (how.empty() ? std::string() : ": " + how));
      }
      spdlog::info("job {} attempt {}: exited (code {}, signal {})", r.key.first, r.key.second,
                   run.report.exit_code(), run.report.term_signal());
      ReportLocked(run);
    } else if (changed && run.live()) {
      ReportLocked(run);
    }
  }
}

void Agent::ProcessExitLocked(const Exit& e) {
  auto it = attempts_.find(e.key);
  if (it == attempts_.end()) return;
  Run& run = it->second;
  ExitView v;
  v.launching = run.launching;
  v.execs_starting = run.execs_starting;
  v.awaiting_exec = run.awaiting_exec;
  v.is_rank = run.ranks.count(e.pid) > 0;
  auto daemon = run.daemons.find(e.pid);
  v.is_daemon = daemon != run.daemons.end();
  v.ranks = run.ranks.size();
  v.daemons = run.daemons.size();
  v.failed = run.failed;
  v.stop_ordered = run.stop_ordered;
  v.has_message = !run.report.message().empty();
  bool hung_up = false;
  if (v.is_daemon && !v.launching) {
    std::lock_guard<std::mutex> lock(hung_up_mu_);
    hung_up = hung_up_.erase(e.pid) > 0;
  }
  const ExitDecision d = DecideExit(v, e.status, hung_up);
  switch (d.action) {
    case ExitDecision::Action::kWait:
      return run.early_exits.push_back(e);
    case ExitDecision::Action::kIgnore:
      return;
    case ExitDecision::Action::kDaemon:
      if (daemon->second) daemon->second(e.status);  // the exec stream reports the exit
      run.daemons.erase(daemon);
      break;
    case ExitDecision::Action::kRank:
      run.ranks.erase(e.pid);
      break;
  }
  if (d.first_failure) {
    run.failed = true;
    run.report.set_exit_code(e.status.exit_code);
    run.report.set_term_signal(e.status.term_signal);
    if (!d.message.empty()) run.report.set_message(d.message);
  }
  if (d.stop_others) {
    StopRun(e.key, run, SIGTERM, clock_->Monotonic() + options_.local_failure_grace,
            /*ranks_only=*/false);
    run.report.set_killed(false);
  }
  if (d.ended) FinishRunLocked(e.key, run);
}

void Agent::FinishRunLocked(Key key, Run& run) {
  if (run.pgid)
    spawner_->Signal(-run.pgid, SIGKILL);  // leftovers of the group die with the attempt
  run.stop.Clear();
  // Its output drained, its last progress note read and its isolation released, the
  // worker reports the end (ReadNotesOutsideLock): none of it happens under the lock.
  run.finishing = true;
  finishing_.push_back(key);
}

// --- isolation -------------------------------------------------------------------------

AttemptRequest Agent::IsolationRequest(const v1::Launch& l) const {
  AttemptRequest r;
  r.job_id = l.job_id();
  r.attempt = l.attempt();
  r.spec = &l.spec();
  const auto& classes = options_.inference_classes;
  r.inference =
      l.kind() == v1::WORKLOAD_KIND_INFERENCE ||
      (l.kind() == v1::WORKLOAD_KIND_UNSPECIFIED &&
       std::find(classes.begin(), classes.end(), l.spec().priority_class()) != classes.end());
  r.cpu_millis = l.spec().cpu_millis_per_node();
  r.memory_bytes = l.spec().memory_bytes_per_node();
  r.pids_limit = l.pids_limit();
  r.keep_nccl_transport = l.keep_nccl_transport_under_cap();
  if (l.node_rank() < static_cast<uint32_t>(l.placement_size())) {
    const v1::NodeAssignment& me = l.placement(l.node_rank());
    if (me.cpu_millis()) r.cpu_millis = me.cpu_millis();
    if (me.memory_bytes()) r.memory_bytes = me.memory_bytes();
    r.gpu_ids.assign(me.gpu_ids().begin(), me.gpu_ids().end());
    r.ranks.assign(me.ranks().begin(), me.ranks().end());
  }
  r.local_ranks = l.spec().ranks_per_node();
  return r;
}

v1::AttemptIsolation Agent::IsolationOf(Key key) const {
  v1::AttemptIsolation iso;
  iso.set_node(options_.node_name);
  iso.set_job_id(key.first);
  iso.set_attempt(key.second);
  *iso.mutable_limits() = isolator_->Limits(key.first, key.second);
  auto stats = isolator_->Stats(key.first, key.second);
  if (stats.ok()) {
    stats->set_time_ms(clock_->NowMs());
    *iso.mutable_stats() = *stats;
  }
  return iso;
}

void Agent::ReportLimitChanges() {
  if (!isolator_->enabled()) return;
  std::vector<std::pair<Key, std::string>> reported;  // each live attempt's last limits
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, run] : attempts_) {
      if (run.live())
        reported.emplace_back(key, run.report.isolation().limits().SerializeAsString());
    }
  }
  // The Isolator's lock may be held by a launch setting up cgroups: asked without ours.
  std::vector<std::pair<Key, v1::AttemptIsolation>> changed;
  for (const auto& [key, before] : reported) {
    if (isolator_->Limits(key.first, key.second).SerializeAsString() != before) {
      changed.emplace_back(key, IsolationOf(key));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, iso] : changed) {
    auto it = attempts_.find(key);
    if (it == attempts_.end() || !it->second.live()) continue;
    Run& run = it->second;
    *run.report.mutable_isolation() = std::move(iso);
    if (run.report.isolation().has_stats()) observer_->OnAttemptStats(run.report.isolation());
    if (!run.stop_ordered) ReportLocked(run);
  }
}

void Agent::CheckMpsDaemons() {
  if (!mps_) return;
  // A dead control daemon took its server and every client of the pool with it; it is
  // started again for the shares that remain (their attempts end as their processes do).
  std::vector<Key> faulted = mps_->Check();
  if (faulted.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  NoteMpsFaultsLocked(faulted);
}

void Agent::NoteMpsFaultsLocked(const std::vector<Key>& attempts) {
  for (const Key& key : attempts) {
    spdlog::error("job {} attempt {}: the MPS daemon of its GPU had died; started again", key.first,
                  key.second);
    auto it = attempts_.find(key);
    if (it != attempts_.end()) it->second.mps_fault = true;
  }
}

void Agent::SampleGpus() {
  if (!options_.gpu_usage) return;
  std::vector<v1::GpuUtilization> sample = options_.gpu_usage->Sample();  // NVML, no lock
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  gpu_usage_ = std::move(sample);
  gpu_usage_ms_ = now;
}

void Agent::RefreshStats() {
  if (!isolator_->enabled()) return;
  std::vector<Key> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, run] : attempts_) {
      // A stopping attempt is not re-reported: each report would re-send its stop.
      if (run.live() && !run.stop_ordered) keys.push_back(key);
    }
  }
  std::vector<v1::AttemptIsolation> read;
  read.reserve(keys.size());
  for (const Key& key : keys) read.push_back(IsolationOf(key));  // cgroup reads, no lock
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = attempts_.find(keys[i]);
    if (it == attempts_.end() || !it->second.live() || it->second.stop_ordered) continue;
    *it->second.report.mutable_isolation() = std::move(read[i]);
    if (it->second.report.isolation().has_stats()) {
      observer_->OnAttemptStats(it->second.report.isolation());
    }
    ReportLocked(it->second);
  }
}

// --- worker: exits, deadlines, heartbeats, lease ---------------------------------------

void Agent::WorkerLoop() {
  for (;;) {
    std::deque<Exit> exits;
    {
      std::unique_lock<std::mutex> lock(exits_mu_);
      exits_cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return !exits_.empty(); });
      exits.swap(exits_);
    }
    std::vector<Exit> adopted = PollAdopted();
    std::vector<NoteRead> reads;  // done after the lock is released
    std::unique_lock<std::mutex> lock(mu_);
    for (const Exit& e : exits) ProcessExitLocked(e);
    for (Exit& e : adopted) AdoptedExitLocked(std::move(e));
    absl::Time now = clock_->Monotonic();
    for (auto& [key, run] : attempts_) {
      if (run.stop.KillDue(now) && run.live()) {
        spdlog::warn("job {} attempt {}: grace over, SIGKILL", key.first, key.second);
        KillNowLocked(key, run);
      }
    }
    bool refresh_stats = now >= next_stats_;
    if (refresh_stats) next_stats_ = now + options_.stats_interval;
    if (now >= next_progress_) {
      // The checkpoint library's committed step travels with the attempt's reports.
      for (auto& [key, run] : attempts_) {
        if (run.live()) reads.push_back({key, run.progress_file, run.user.uid, false});
      }
      next_progress_ = now + absl::Milliseconds(500);
    }
    if (stream_ && now >= next_heartbeat_) {
      v1::AgentMessage hb;
      hb.mutable_heartbeat()->set_time_ms(clock_->NowMs());
      if (gpu_usage_ms_ != gpu_usage_sent_ms_) {  // each sample once, not every heartbeat
        *hb.mutable_heartbeat()->mutable_gpus() = {gpu_usage_.begin(), gpu_usage_.end()};
        hb.mutable_heartbeat()->set_gpus_sampled_ms(gpu_usage_ms_);
        gpu_usage_sent_ms_ = gpu_usage_ms_;
      }
      SendLocked(std::move(hb));
      next_heartbeat_ = now + heartbeat_interval_;
    }
    // "Cut off" is measured by what we hear (every heartbeat is acknowledged): a cut link
    // leaves the stream looking open for a long time, and writes into it still succeed.
    absl::Duration silent = now - absl::FromUnixMillis(last_contact_mono_ms_.load());
    if (silent > lease_) {
      if (!lease_expired_) {
        lease_expired_ = true;
        spdlog::warn("no contact with the coordinator for {}: reconnecting; jobs keep running",
                     absl::FormatDuration(silent));
        if (stream_) stream_->Cancel();  // reconnect and register afresh
      }
      StopDisconnectedLocked(silent);
    } else {
      lease_expired_ = false;  // heard from it again
    }
    for (const Key& key : finishing_) {
      auto it = attempts_.find(key);
      if (it != attempts_.end())
        reads.push_back(
            {key, it->second.progress_file, it->second.user.uid, true, it->second.inference});
    }
    finishing_.clear();
    std::vector<Key> sweeps;
    sweeps.swap(sweeps_);
    bool limits_changed = limits_changed_;
    limits_changed_ = false;
    if (stopping_ && reads.empty() && sweeps.empty()) {
      bool live = false;
      for (const auto& [k, r] : attempts_) live |= r.busy() || r.finishing;
      if (!live || !options_.kill_jobs_on_stop) return;
    }
    lock.unlock();
    effects_.Post(std::move(reads), sweeps, limits_changed, refresh_stats);
  }
}

void Agent::EffectsLoop() {
  for (;;) {
    Effects work = effects_.Take();
    if (work.empty()) return;  // stopping, and nothing is left
    // Killed attempts: whatever of theirs left the process group dies with their cgroup.
    for (const Key& key : work.sweeps) (void)isolator_->Kill(key.first, key.second);
    if (work.limits_changed) ReportLimitChanges();
    if (work.refresh_stats) {
      RefreshStats();
      SampleGpus();
      CheckMpsDaemons();
    }
    std::vector<NoteRead> reads;
    reads.reserve(work.reads.size());
    for (auto& [key, r] : work.reads) reads.push_back(std::move(r));
    ReadNotesOutsideLock(reads);
  }
}

}  // namespace baton
