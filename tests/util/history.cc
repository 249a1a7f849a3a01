#include "tests/util/history.h"

#include <algorithm>
#include <functional>
#include <string>

#include "coordinator/usage/rollup.h"

namespace baton::testing {

namespace {

// A transition of job ev.job_id() in its tenant and class, into the per-job family and the
// global log (numbered by `log_seq`).
void AddTransition(StoreBatch& batch, v1::Event ev, const std::string& tenant,
                   const std::string& priority_class, uint64_t* log_seq) {
  ev.set_kind(v1::EVENT_KIND_TRANSITION);
  ev.set_tenant(tenant);
  ev.set_priority_class(priority_class);
  ev.set_log_seq(++*log_seq);
  batch.events.push_back(ev);
  batch.log.push_back(std::move(ev));
}

// Jobs 1..jobs, `batch_jobs` to a commit, each added by `add`; then the next job id.
absl::Status WriteInBatches(Store& store, uint64_t jobs, uint64_t batch_jobs,
                            const std::function<void(uint64_t id, StoreBatch& batch)>& add) {
  for (uint64_t first = 1; first <= jobs; first += batch_jobs) {
    StoreBatch batch;
    const uint64_t last = std::min(jobs, first + batch_jobs - 1);
    for (uint64_t id = first; id <= last; ++id) add(id, batch);
    batch.next_job_id = last + 1;
    if (absl::Status s = store.Commit(batch); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFinishedHistory(Store& store, const HistoryOptions& options) {
  const uint32_t transitions = std::max<uint32_t>(options.events_per_job, 2);
  // The path every job takes; repeated RUNNING events stand for its progress notes.
  auto state_at = [transitions](uint32_t seq) {
    if (seq == 1) return v1::JOB_STATE_PENDING;
    if (seq == transitions) return v1::JOB_STATE_SUCCEEDED;
    return seq == 2 ? v1::JOB_STATE_SCHEDULED : v1::JOB_STATE_RUNNING;
  };
  uint64_t log_seq = 0;
  return WriteInBatches(
      store, options.jobs, options.batch_jobs, [&](uint64_t id, StoreBatch& batch) {
        const int64_t t =
            options.start_ms + (options.span_ms > 0
                                    ? static_cast<int64_t>(static_cast<double>(id) *
                                                           static_cast<double>(options.span_ms) /
                                                           static_cast<double>(options.jobs))
                                    : static_cast<int64_t>(id));
        const std::string user = "user-" + std::to_string(id % options.users);
        const std::string tenant = "team-" + std::to_string(id % options.tenants);
        v1::Job job;
        job.set_id(id);
        job.set_state(v1::JOB_STATE_SUCCEEDED);
        job.set_user(user);
        job.set_submitted_ms(t);
        job.set_finished_ms(t + 60'000);
        job.set_version(transitions);
        job.set_message("exited 0");
        v1::JobSpec* spec = job.mutable_spec();
        spec->set_name("history-" + std::to_string(id));
        spec->set_tenant(tenant);
        spec->set_priority_class("batch");
        spec->add_command("python3");
        spec->add_command("train.py");
        spec->set_nodes(1);
        spec->set_ranks_per_node(1);
        spec->set_gpus_per_node(1);
        v1::Attempt* a = job.add_attempts();
        a->set_scheduled_ms(t + 500);
        a->set_started_ms(t + 1000);
        a->set_ended_ms(t + 60'000);
        v1::NodeAssignment* p = a->add_placement();
        p->set_node("n" + std::to_string(id % 16));
        p->add_gpu_ids(std::to_string(id % 8));
        batch.jobs.push_back(std::move(job));
        for (uint32_t seq = 1; seq <= transitions; ++seq) {
          v1::Event ev;
          ev.set_job_id(id);
          ev.set_seq(seq);
          ev.set_time_ms(t + (seq == transitions ? 60'000 : seq * 100));
          ev.set_from(seq == 1 ? v1::JOB_STATE_UNSPECIFIED : state_at(seq - 1));
          ev.set_to(state_at(seq));
          ev.set_reason(seq == 1 ? "submitted by " + user : "step " + std::to_string(seq));
          ev.set_attempt(seq == 1 ? 0 : 1);
          ev.set_actor(seq == 1 ? user : "scheduler");
          AddTransition(batch, std::move(ev), tenant, "batch", &log_seq);
        }
      });
}

absl::Status WritePendingJobs(Store& store, const PendingOptions& options) {
  uint64_t log_seq = 0;
  return WriteInBatches(
      store, options.jobs, options.batch_jobs, [&](uint64_t id, StoreBatch& batch) {
        const int64_t t = options.start_ms + static_cast<int64_t>(id);
        const std::string user = "user-" + std::to_string(id % 13);
        const std::string& tenant =
            options.tenants.empty() ? options.tenant : options.tenants[id % options.tenants.size()];
        const std::string& cls =
            options.priority_classes.empty()
                ? options.priority_class
                : options.priority_classes[id % options.priority_classes.size()];
        v1::Job job;
        job.set_id(id);
        job.set_state(v1::JOB_STATE_PENDING);
        job.set_user(user);
        job.set_submitted_ms(t);
        job.set_version(1);
        v1::JobSpec* spec = job.mutable_spec();
        spec->set_name("sweep-" + std::to_string(id));
        spec->set_tenant(tenant);
        spec->set_priority_class(cls);
        for (const char* word :
             {"python3", "train.py", "--config", "configs/base.yaml", "--resume"}) {
          spec->add_command(word);
        }
        for (int e = 0; e < 10; ++e) {
          (*spec->mutable_env())["BATON_SWEEP_VAR_" + std::to_string(e)] =
              "value-" + std::to_string(id % 1000) + "-" + std::to_string(e);
        }
        spec->set_nodes(1);
        spec->set_ranks_per_node(1);
        spec->set_gpus_per_node(1);
        spec->set_cpu_millis_per_node(4000);
        spec->set_memory_bytes_per_node(16ull << 30);
        batch.jobs.push_back(std::move(job));
        v1::Event ev;
        ev.set_job_id(id);
        ev.set_seq(1);
        ev.set_time_ms(t);
        ev.set_from(v1::JOB_STATE_UNSPECIFIED);
        ev.set_to(v1::JOB_STATE_PENDING);
        ev.set_reason("submitted by " + user);
        ev.set_actor(user);
        AddTransition(batch, std::move(ev), tenant, cls, &log_seq);
      });
}

absl::Status WriteUsageRollup(Store& store, const UsageOptions& options) {
  const int64_t first_day = options.last_day - options.days + 1;
  for (int64_t day = first_day; day <= options.last_day; ++day) {
    StoreBatch batch;
    for (uint32_t t = 0; t < options.tenants; ++t) {
      usage::Cells cells;
      for (uint32_t u = 0; u < options.users_per_tenant; ++u) {
        const std::string user = "user-" + std::to_string(t * options.users_per_tenant + u);
        for (uint32_t c = 0; c < options.classes_per_user; ++c) {
          usage::Cell& cell = cells[{user, "class-" + std::to_string(c)}];
          cell.gpu_seconds = 3600.0 * (1 + (day + u + c) % 8);
          cell.lost_gpu_seconds = 60.0 * ((day + u) % 3);
          cell.succeeded = 1 + (day + u) % 5;
          cell.failed = (day + c) % 2;
          cell.cancelled = (day + u + c) % 3 == 0 ? 1 : 0;
          cell.evictions = (day + u) % 4 == 0 ? 1 : 0;
          cell.waits[usage::WaitBucket(5 + (day + u) % 30)] = 2;
          cell.waits[usage::WaitBucket(300 + 20 * (u + c))] = 1;
          cell.waits[usage::WaitBucket(7200)] = (day % 7 == 0) ? 1 : 0;
        }
      }
      v1::UsageDelta d;
      d.set_day(day);
      d.set_tenant("team-" + std::to_string(t));
      *d.mutable_record() = usage::ToRecord(cells);
      batch.usage_deltas.push_back(std::move(d));
    }
    if (absl::Status s = store.Commit(batch); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace baton::testing
