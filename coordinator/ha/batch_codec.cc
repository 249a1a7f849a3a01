#include "coordinator/ha/batch_codec.h"

#include "proto/store.pb.h"

namespace baton::ha {
namespace {

template <typename T>
void CopyAll(const std::vector<T>& from, google::protobuf::RepeatedPtrField<T>* to) {
  to->Reserve(static_cast<int>(from.size()));
  for (const auto& x : from) *to->Add() = x;
}

template <typename T>
void MoveAll(google::protobuf::RepeatedPtrField<T>* from, std::vector<T>* to) {
  to->reserve(from->size());
  for (auto& x : *from) to->push_back(std::move(x));
}

}  // namespace

std::string EncodeBatch(const StoreBatch& batch) {
  v1::StoredBatch b;
  CopyAll(batch.jobs, b.mutable_jobs());
  CopyAll(batch.events, b.mutable_events());
  CopyAll(batch.log, b.mutable_log());
  CopyAll(batch.nodes, b.mutable_nodes());
  if (batch.next_job_id) b.set_next_job_id(*batch.next_job_id);
  if (batch.policy) *b.mutable_policy() = *batch.policy;
  if (batch.usage) *b.mutable_usage() = *batch.usage;
  CopyAll(batch.tokens, b.mutable_tokens());
  CopyAll(batch.secrets, b.mutable_secrets());
  CopyAll(batch.arrays, b.mutable_arrays());
  for (uint64_t id : batch.deleted_arrays) b.add_deleted_arrays(id);
  CopyAll(batch.usage_deltas, b.mutable_usage_deltas());
  b.set_usage_before_day(batch.usage_before_day);
  for (uint64_t id : batch.deleted_jobs) b.add_deleted_jobs(id);
  return b.SerializeAsString();
}

absl::StatusOr<StoreBatch> DecodeBatch(std::string_view bytes) {
  v1::StoredBatch b;
  if (!b.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("HA log: a batch of " + std::to_string(bytes.size()) +
                               " bytes does not parse");
  }
  StoreBatch out;
  MoveAll(b.mutable_jobs(), &out.jobs);
  MoveAll(b.mutable_events(), &out.events);
  MoveAll(b.mutable_log(), &out.log);
  MoveAll(b.mutable_nodes(), &out.nodes);
  if (b.next_job_id() != 0) out.next_job_id = b.next_job_id();
  if (b.has_policy()) out.policy = std::move(*b.mutable_policy());
  if (b.has_usage()) out.usage = std::move(*b.mutable_usage());
  MoveAll(b.mutable_tokens(), &out.tokens);
  MoveAll(b.mutable_secrets(), &out.secrets);
  MoveAll(b.mutable_arrays(), &out.arrays);
  out.deleted_arrays.assign(b.deleted_arrays().begin(), b.deleted_arrays().end());
  MoveAll(b.mutable_usage_deltas(), &out.usage_deltas);
  out.usage_before_day = b.usage_before_day();
  out.deleted_jobs.assign(b.deleted_jobs().begin(), b.deleted_jobs().end());
  return out;
}

}  // namespace baton::ha
