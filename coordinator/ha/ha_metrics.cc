#include "coordinator/ha/ha_metrics.h"

#include <string>

#include "coordinator/ha/replica.h"

namespace baton::ha {
namespace {

prometheus::MetricFamily One(const std::string& name, const std::string& help,
                             prometheus::MetricType type, const std::string& replica,
                             double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  m.label.push_back({"replica", replica});
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

std::vector<prometheus::MetricFamily> HaMetrics::Collect() const {
  using T = prometheus::MetricType;
  const std::string& name = replica_->name();
  uint64_t epoch = replica_->epoch();
  return {
      One("baton_ha_leader", "1 while this coordinator replica leads", T::Gauge, name,
          epoch != 0 ? 1 : 0),
      One("baton_ha_epoch", "the epoch this replica leads in (its fencing token); 0: a standby",
          T::Gauge, name, static_cast<double>(epoch)),
      One("baton_ha_applied_index", "the last replicated log entry in this replica's store",
          T::Gauge, name, static_cast<double>(replica_->applied())),
      One("baton_ha_log_lag_entries", "log entries this replica has not applied yet", T::Gauge,
          name, static_cast<double>(replica_->lag())),
      One("baton_ha_leader_changes_total",
          "leadership changes this replica's process has seen (failovers and hand-overs)",
          T::Counter, name, static_cast<double>(replica_->leader_changes())),
  };
}

}  // namespace baton::ha
