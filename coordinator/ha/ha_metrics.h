// Prometheus metrics of one HA replica, leader or standby (docs/ha.md), served on
// --metrics-listen from the moment it joins, so that standbys are scraped too:
//   baton_ha_leader                1 while this replica leads, else 0
//   baton_ha_epoch                 the epoch it leads in; 0 for a standby
//   baton_ha_applied_index         the last log entry in its own store
//   baton_ha_log_lag_entries       log entries it has not applied yet (a standby's lag)
//   baton_ha_leader_changes_total  leadership changes this process has seen (failovers,
//                                  hand-overs); it starts again at 0 when the process does
// Each carries the replica's name as `replica`. Thread-safe (reads atomics).
#pragma once

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace baton::ha {

class Replica;

class HaMetrics : public prometheus::Collectable {
 public:
  explicit HaMetrics(const Replica* replica) : replica_(replica) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Replica* replica_;
};

}  // namespace baton::ha
