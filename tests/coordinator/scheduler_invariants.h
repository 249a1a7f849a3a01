// Checks one pass's Decisions against the rules every pass must keep, independently of
// how the scheduler reached them: no GPU, core or byte over-committed; inference on whole
// cores (every SMT sibling); whole gangs only;
// pools, taints, selectors and MIG kinds respected; no job in cooldown started; victims
// legal (strictly lower class, or a preemptible borrower reclaimed; never inference,
// never inside the minimum runtime). Used by the property and simulation tests.
#pragma once

#include <string>
#include <vector>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sched::testing {

// Every broken rule, one line each; empty when the decisions keep them all.
std::vector<std::string> CheckDecisions(const ClusterView& view, const Policy& policy, Time now,
                                        const Decisions& d);

// Field-by-field equality of two Decisions (gtest-friendly: names the first difference).
std::string DiffDecisions(const Decisions& a, const Decisions& b);

}  // namespace baton::sched::testing

namespace baton::sched::testing {

// The view and the decisions, one line per node, gang, job and decision: failure output.
std::string DescribePass(const ClusterView& view, const Decisions& d);

}  // namespace baton::sched::testing
