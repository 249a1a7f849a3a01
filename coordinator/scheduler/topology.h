// Internal to the scheduler: gangs placed by the network's switch tree (docs/topology.md).
// PickDomains is the pure choice over candidate nodes already in best-fit order: one
// domain of the request's level when one holds the gang (the one with the fewest
// candidates that still suffices, so that small gangs do not splinter the domains a big
// one needs); else, for a preferred request, the fewest domains under the lowest common
// domain above, largest first and the last one the smallest that covers the rest.
// The helpers apply it to a pass: placement, reservations, preemption and the texts.
// Not thread-safe: one pass, one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {

// `domains[k][i]`: candidate i's domain k levels above the request's (k = 0: its own
// level); kNone where the candidate's node lacks that label. Candidates without a domain
// at the request's level never serve a required request and are domains of their own for a
// preferred one. Returns the chosen candidates' indices (n of them), or empty.
std::vector<uint32_t> PickDomains(const std::vector<std::vector<uint32_t>>& domains, uint32_t n,
                                  bool required);

// The spreading step of PickDomains over domains of `sizes` (in their order): under the
// lowest common parent that holds n (parent(k, d): domain d's parent k levels up, kNone
// when unlabelled; `levels` of them, the whole cluster after the last), the fewest
// domains, largest first and the last the smallest that covers the rest. Pairs of
// (domain, nodes taken); empty when even the whole cluster does not hold n.
std::vector<std::pair<uint32_t, uint32_t>> SpreadOver(
    const std::vector<uint32_t>& sizes, const std::function<uint32_t(size_t, uint32_t)>& parent,
    size_t levels, uint32_t n);

// The shape's nodes among `nodes` (eligible and fitting, best fit first), or empty.
std::vector<uint32_t> ChooseByTopology(const Pass& pass, const Shape& s,
                                       const std::vector<uint32_t>& nodes);

// The domain of a node at `level`, kNone when unlabelled.
inline uint32_t DomainOf(const Pass& pass, int32_t level, uint32_t node) {
  return pass.topo[level].group_domain[pass.hw[node].group];
}

// The domains (by name, in node order, each once) that `nodes` span at the shape's level;
// an unlabelled node is named "<node> (no <level>)".
std::vector<std::string> DomainNames(const Pass& pass, const Shape& s,
                                     const std::vector<uint32_t>& nodes);

// The most nodes one labelled domain of the shape's level has that could hold a member
// (eligible, schedulable, the hardware); 0 when none does.
uint32_t LargestDomain(Pass& pass, const Shape& s);

// The fewest domains of its level the gang could ever span: ceil(nodes / the most nodes
// of one domain that could hold a member), 1 for a required request.
uint32_t MinDomains(Pass& pass, const Shape& s);

}  // namespace baton::sched::internal
