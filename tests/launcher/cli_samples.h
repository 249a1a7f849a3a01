// Jobs as the coordinator could return them, for the CLI's formatting tests: fixed ids,
// names and times relative to kNow, which the tests pass as the current time.
#pragma once

#include "proto/api.pb.h"

namespace baton::cli {

inline constexpr int64_t kNow = 1'700'000'100'000;

// Job 17 of alice (tenant vision, 2 nodes x 8 GPUs), failed after one attempt on node-a
// and node-b; with its two events.
inline v1::Job SampleJob() {
  v1::Job job;
  job.set_id(17);
  job.set_user("alice");
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_exit_code(3);
  job.set_message("rank 2 exited with code 3");
  job.set_submitted_ms(kNow - 600'000);
  job.set_failures(1);
  v1::JobSpec* s = job.mutable_spec();
  s->set_name("llama-ft");
  s->set_tenant("vision");
  s->set_priority_class("research");
  s->set_nodes(2);
  s->set_ranks_per_node(8);
  s->set_gpus_per_node(8);
  s->set_cpu_millis_per_node(32000);
  s->set_memory_bytes_per_node(256ull << 30);
  s->set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
  s->set_max_restarts(1);
  s->add_command("torchrun");
  s->add_command("train.py");
  v1::Attempt* a = job.add_attempts();
  a->set_number(1);
  a->set_scheduled_ms(kNow - 500'000);
  a->set_started_ms(kNow - 490'000);
  a->set_ended_ms(kNow - 10'000);
  a->set_end_reason("failed: rank 2 exited with code 3");
  a->set_checkpoint_step(1200);
  v1::NodeAssignment* p = a->add_placement();
  p->set_node("node-a");
  p->add_gpu_ids("GPU-1");
  p->add_gpu_ids("GPU-2");
  a->add_placement()->set_node("node-b");
  v1::Event* e = job.add_events();
  e->set_time_ms(kNow - 600'000);
  e->set_from(v1::JOB_STATE_UNSPECIFIED);
  e->set_to(v1::JOB_STATE_PENDING);
  e->set_reason("submitted by alice");
  e->set_actor("alice");
  e = job.add_events();
  e->set_time_ms(kNow - 10'000);
  e->set_from(v1::JOB_STATE_RUNNING);
  e->set_to(v1::JOB_STATE_FAILED);
  e->set_reason("rank 2 exited with code 3");
  e->set_actor("agent:node-a");
  return job;
}

}  // namespace baton::cli
