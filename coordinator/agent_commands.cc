#include "coordinator/agent_commands.h"

namespace baton {

LaunchTerms LaunchTermsOf(const Policy& policy, const v1::JobSpec& spec) {
  LaunchTerms t;
  const PriorityClass* c = policy.Find(spec.priority_class());
  t.kind = c && c->service ? v1::WORKLOAD_KIND_INFERENCE : v1::WORKLOAD_KIND_TRAINING;
  t.allow_root = policy.access.root_tenants.count(spec.tenant()) > 0;
  t.pids_limit = policy.PidsLimit(spec.priority_class());
  t.keep_nccl_transport_under_cap = !policy.steer_capped_training_to_sockets;
  const int64_t stop_s = policy.StopAfterDisconnectS(spec.priority_class());
  t.stop_after_disconnect_ms = stop_s == Policy::kNever ? 0 : uint64_t(stop_s) * 1000;
  return t;
}

const std::string& RunAsOf(const v1::Job& job, const v1::Attempt& a) {
  return a.run_as().empty() ? job.user() : a.run_as();
}

v1::CoordinatorCommand LaunchCommand(const v1::Job& job, uint32_t node_rank,
                                     const std::string& exec_secret, const LaunchTerms& terms,
                                     const std::vector<std::string>& agent_addresses) {
  const v1::Attempt& a = *job.attempts().rbegin();
  v1::CoordinatorCommand cmd;
  v1::Launch* l = cmd.mutable_launch();
  l->set_job_id(job.id());
  l->set_attempt(a.number());
  *l->mutable_spec() = job.spec();
  *l->mutable_placement() = a.placement();
  l->set_node_rank(node_rank);
  l->set_master_port(a.master_port());
  l->set_user(RunAsOf(job, a));
  l->set_exec_secret(exec_secret);
  l->set_kind(terms.kind);
  l->set_allow_root(terms.allow_root);
  l->set_pids_limit(terms.pids_limit);
  l->set_keep_nccl_transport_under_cap(terms.keep_nccl_transport_under_cap);
  l->set_stop_after_disconnect_ms(terms.stop_after_disconnect_ms);
  for (const std::string& address : agent_addresses) l->add_agent_addresses(address);
  return cmd;
}

v1::CoordinatorCommand PreemptCommand(uint64_t job_id, uint32_t attempt, absl::Time deadline,
                                      const std::string& reason) {
  v1::CoordinatorCommand cmd;
  v1::Preempt* p = cmd.mutable_preempt();
  p->set_job_id(job_id);
  p->set_attempt(attempt);
  p->set_deadline_ms(absl::ToUnixMillis(deadline));
  p->set_reason(reason);
  return cmd;
}

v1::CoordinatorCommand KillCommand(uint64_t job_id, uint32_t attempt, int signal,
                                   uint32_t grace_seconds, const std::string& reason) {
  v1::CoordinatorCommand cmd;
  v1::Kill* k = cmd.mutable_kill();
  k->set_job_id(job_id);
  k->set_attempt(attempt);
  k->set_signal(signal);
  k->set_grace_seconds(grace_seconds);
  k->set_reason(reason);
  return cmd;
}

v1::CoordinatorCommand AckCommand(uint64_t job_id, uint32_t attempt) {
  v1::CoordinatorCommand cmd;
  cmd.mutable_ack()->set_job_id(job_id);
  cmd.mutable_ack()->set_attempt(attempt);
  return cmd;
}

}  // namespace baton
