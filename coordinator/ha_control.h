// What the services see of HA (docs/ha.md): the leader's status and its step-down.
// Implemented by ha::Replica; absent (nullptr) on a coordinator that runs alone, so the
// services link nothing of etcd. Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "proto/api.pb.h"

namespace baton {

class HaControl {
 public:
  virtual ~HaControl() = default;
  // Read from etcd now: the replicas' applied indexes, the log, the etcd endpoints.
  virtual absl::StatusOr<v1::HaStatusResponse> Status() = 0;
  // Gives up leadership (the election key goes now, so a standby takes over at once);
  // the process rejoins as a standby shortly after, once the answer has gone out.
  virtual absl::StatusOr<v1::HaStepDownResponse> StepDown(const std::string& by) = 0;
};

}  // namespace baton
