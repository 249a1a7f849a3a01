// baton-bench-scheduler: one full scheduling pass (ordering, quotas, placement, the
// preemption search, reservations, outcome texts) on a synthetic cluster that is 50%
// busy with mixed classes, tenants and gang sizes:
//   small  1,000 nodes × 8 GPUs,  10,000 pending jobs
//   large 10,000 nodes × 8 GPUs, 100,000 pending jobs
// Issue 50's tree: the large cluster labelled as 1,250 leaves of 8 nodes under 40 spines
// of 32 leaves (the last one partial), once with every multi-node gang of the queue asking
// for a leaf (half of them required) and once, the same cluster and queue, without:
// `topology_vs_plain` is the price of the topology.
// Reports the median pass time of each (repetitions interleaved), µs per pending job, and the
// growth ratio large ÷ small (a pass that is n log n grows about 11.5× for 10× the input). The
// pending jobs come in id order, which is submission order, as the coordinator keeps its queue.
// Ends with one JSON line (keys in docs/benchmarks.md).
//   baton-bench-scheduler [--reps=7]   (flags for other benchmarks are ignored)
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/bench_flags.h"
#include "coordinator/scheduler/plan.h"
#include "coordinator/scheduler/scheduler.h"

namespace baton::sched {
namespace {

constexpr uint64_t kGi = 1ull << 30;
constexpr Time kNow = 1'000'000'000'000;
struct Gen {
  explicit Gen(uint32_t t) : tenants(t) {}
  uint32_t tenants;  // batch tenants "team0".., besides "serve"
  std::mt19937_64 rng{42};
  uint64_t Int(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng); }
};

Policy BenchPolicy(uint32_t nodes, uint32_t tenants) {
  Policy p;
  auto cls = [](const char* name, int32_t value, bool service) {
    PriorityClass c;
    c.name = name;
    c.value = value;
    c.preemptible = !service;
    c.service = service;
    c.min_runtime_s = service ? 0 : 600;
    return c;
  };
  p.classes = {cls("inference-critical", 1000, true), cls("inference", 900, true),
               cls("labeling", 500, false), cls("training", 300, false),
               cls("experiment", 100, false)};
  // Nominal quotas share 80% of the default pool's GPUs; serving lends nothing.
  uint32_t per = nodes * 8 * 9 / 10 * 8 / 10 / tenants;
  for (uint32_t t = 0; t < tenants; ++t) {
    TenantPolicy tp;
    tp.name = "team" + std::to_string(t);
    tp.weight = 1 + t % 4;
    tp.nominal = Resources{uint64_t{per} * 8000, uint64_t{per} * 64 * kGi, per};
    tp.lending_limit = Resources{uint64_t{per} * 4000, uint64_t{per} * 32 * kGi, per / 2};
    p.tenants.push_back(tp);
  }
  TenantPolicy serve;
  serve.name = "serve";
  serve.nominal = Resources{uint64_t{nodes} * 128'000, uint64_t{nodes} * 2048 * kGi, nodes * 8};
  serve.lending_limit = Resources{0, 0, 0};
  p.tenants.push_back(serve);
  return p;
}

// 128 CPUs on 2 NUMA nodes. With `smt`, as Linux numbers a 2-way SMT machine of 64 cores:
// core c is CPUs c and c + 64, and NUMA node k holds cores 32k .. 32k + 31.
enum class Tree { kNone, kPlain, kTopology };

NodeInfo BenchNode(uint32_t i, bool smt, Tree tree) {
  NodeInfo n;
  n.name = "node-" + std::to_string(i);
  n.cpu_millis = 128'000;
  n.memory_bytes = 2048 * kGi;
  n.smt = smt ? 2 : 1;
  for (int32_t k = 0; k < 2; ++k) {
    NumaInfo m;
    m.id = k;
    if (smt) {
      for (uint32_t sibling = 0; sibling < 2; ++sibling) {
        for (uint32_t c = 32u * k; c < 32u * k + 32; ++c) {
          m.cpus.push_back(c + 64 * sibling);
          m.core.push_back(c);
        }
      }
    } else {
      for (uint32_t c = 0; c < 64; ++c) m.cpus.push_back(k * 64 + c);
    }
    m.memory_bytes = 1024 * kGi;
    n.numa.push_back(m);
  }
  for (uint32_t g = 0; g < 8; ++g) {
    n.gpus.push_back(GpuInfo{n.name + "-gpu" + std::to_string(g), "NVIDIA H200",
                             static_cast<int32_t>(g / 4), "", ""});
  }
  n.labels = {{"zone", "z" + std::to_string(i % 4)}};
  if (tree != Tree::kNone) {
    n.labels["topology.baton.io/leaf"] = "leaf-" + std::to_string(i / 8);
    n.labels["topology.baton.io/spine"] = "spine-" + std::to_string(i / (8 * 32));
  }
  if (i % 10 == 0) {
    n.pool = "inference";
    n.taints = {Taint{"dedicated", "inference", "NoSchedule"}};
  }
  return n;
}

HeldNode Hold(const NodeInfo& n, uint32_t first_gpu, uint32_t gpus) {
  HeldNode h;
  h.node = n.name;
  for (uint32_t g = first_gpu; g < first_gpu + gpus; ++g) {
    h.gpu_uuids.push_back(n.gpus[g].uuid);
    h.ranks.push_back(HeldRank{n.gpus[g].numa, {}});
  }
  h.cpu_millis = gpus * 8000ull;
  h.memory_bytes = gpus * 64 * kGi;
  return h;
}

RunningGang Gang(Gen& g, JobId id, bool inference) {
  static const char* kBatch[] = {"labeling", "training", "training", "experiment", "experiment"};
  RunningGang r;
  r.id = id;
  r.tenant = inference ? "serve" : "team" + std::to_string(g.Int(0, g.tenants - 1));
  r.priority_class = inference ? "inference" : kBatch[g.Int(0, 4)];
  r.started = kNow - static_cast<Time>(g.Int(0, 6 * 3'600'000));
  if (g.Chance(0.7)) r.last_checkpoint = r.started + static_cast<Time>(g.Int(0, kNow - r.started));
  return r;
}

// About half the GPUs busy: each node b ∈ [0, 8] GPUs, in gangs of 4, 2 and 1 GPUs on
// one NUMA node each; a third of the full nodes form 2–4 node gangs.
void FillRunning(Gen& g, ClusterView& v) {
  JobId id = 1;
  for (uint32_t i = 0; i < v.nodes.size(); ++i) {
    const NodeInfo& n = v.nodes[i];
    bool inference = !n.pool.empty();
    uint32_t busy = static_cast<uint32_t>(g.Int(0, 8));
    if (busy == 8 && !inference && g.Chance(0.3) && i + 1 < v.nodes.size()) {
      RunningGang r = Gang(g, id++, false);
      uint32_t span = static_cast<uint32_t>(g.Int(2, 4));
      for (uint32_t k = i; k < v.nodes.size() && r.nodes.size() < span; ++k) {
        if (v.nodes[k].pool.empty()) r.nodes.push_back(Hold(v.nodes[k], 0, 8));
      }
      i += span - 1;
      v.running.push_back(std::move(r));
      continue;
    }
    for (uint32_t numa = 0; numa < 2; ++numa) {
      uint32_t left = std::min(4u, busy > numa * 4 ? busy - numa * 4 : 0), at = numa * 4;
      while (left > 0) {
        uint32_t size = left >= 4 && g.Chance(0.5) ? 4 : (left >= 2 && g.Chance(0.6) ? 2 : 1);
        RunningGang r = Gang(g, id++, inference);
        r.nodes.push_back(Hold(n, at, size));
        v.running.push_back(std::move(r));
        at += size;
        left -= size;
      }
    }
  }
}

PendingJob Pending(Gen& g, JobId id, Tree tree) {
  static const std::vector<std::pair<uint32_t, uint32_t>> kShapes = {
      {1, 1}, {1, 1}, {1, 1}, {1, 2}, {1, 2}, {1, 4}, {1, 4}, {1, 8}, {2, 8}, {4, 8}};
  PendingJob j;
  j.id = id;
  double cls = static_cast<double>(g.Int(0, 999)) / 1000;
  bool inference = cls < 0.05;
  j.priority_class = inference    ? (cls < 0.01 ? "inference-critical" : "inference")
                     : cls < 0.15 ? "labeling"
                     : cls < 0.7  ? "training"
                                  : "experiment";
  j.tenant = inference ? "serve" : "team" + std::to_string(g.Int(0, g.tenants - 1));
  auto [nodes, gpus] = g.Chance(0.01) ? std::pair{16u, 8u} : kShapes[g.Int(0, kShapes.size() - 1)];
  if (inference) nodes = 1;
  JobRequest& r = j.request;
  r.nodes = nodes;
  r.gpus_per_node = gpus;
  r.ranks_per_node = gpus;
  r.cpu_millis_per_node = gpus * 8000ull;
  r.memory_bytes_per_node = gpus * 64 * kGi;
  r.mpi = nodes > 1;
  if (inference) {
    r.pool = "inference";
    r.tolerations = {Toleration{"dedicated", "inference", "NoSchedule", false}};
  }
  if (g.Chance(0.1)) r.selector = {{"zone", "z" + std::to_string(g.Int(0, 3))}};
  if (tree != Tree::kNone) {  // the same draws with and without, so the queues match
    bool required = g.Chance(0.5);
    if (tree == Tree::kTopology && nodes > 1) r.topology = {"leaf", required, 0};
  }
  // Ids are handed out at submission, and the queue comes over in id order.
  j.submitted = kNow - 48 * 3'600'000 + static_cast<Time>(id % 100'000'000) * 1'000;
  if (g.Chance(0.05)) j.cooldown_until = kNow + static_cast<Time>(g.Int(1, 600'000));
  return j;
}

ClusterView MakeCluster(uint32_t nodes, uint32_t pending, bool smt, Tree tree, uint32_t tenants) {
  Gen g(tenants);
  ClusterView v;
  for (uint32_t i = 0; i < nodes; ++i) v.nodes.push_back(BenchNode(i, smt, tree));
  FillRunning(g, v);
  for (JobId id = 0; id < pending; ++id) v.pending.push_back(Pending(g, 10'000'000 + id, tree));
  for (uint32_t t = 0; t < tenants; ++t) {
    v.usage["team" + std::to_string(t)] = static_cast<double>(g.Int(0, 10'000'000));
  }
  return v;
}

struct Case {
  const char* label;
  uint32_t nodes, pending;
  ClusterView view;
  Policy policy;
  std::vector<double> ms;
  Decisions decisions;
};

Case MakeCase(const char* label, uint32_t nodes, uint32_t pending, bool smt = false,
              Tree tree = Tree::kNone, uint32_t tenants = 8) {
  Policy policy = BenchPolicy(nodes, tenants);
  if (tree != Tree::kNone) {
    policy.topology_levels = {{"leaf", "topology.baton.io/leaf"},
                              {"spine", "topology.baton.io/spine"}};
  }
  return Case{label,  nodes, pending, MakeCluster(nodes, pending, smt, tree, tenants),
              policy, {},    {}};
}

// Placed topology-bound gangs, and those spread over more leaves than they need.
std::pair<size_t, size_t> Spread(const Case& c) {
  size_t bound = 0, spread = 0;
  for (const Placement& p : c.decisions.placements) {
    if (p.topology_domains.empty()) continue;
    ++bound;
    spread += p.topology_domains.size() > p.topology_min_domains;
  }
  return {bound, spread};
}

void TimePass(Case& c) {
  c.decisions = Decisions{};  // freeing the last pass's decisions is not part of a pass
  auto t0 = std::chrono::steady_clock::now();
  Decisions d = Plan(c.view, c.policy, kNow);
  c.ms.push_back(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  c.decisions = std::move(d);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Report(const Case& c) {
  uint64_t busy = 0;
  for (const auto& g : c.view.running) {
    for (const auto& h : g.nodes) busy += h.gpu_uuids.size();
  }
  std::map<Outcome, uint64_t> outcomes;
  for (const auto& o : c.decisions.outcomes) ++outcomes[o.outcome];
  std::printf("%s: %u nodes x 8 GPUs (%.0f%% busy, %zu running gangs), %u pending\n", c.label,
              c.nodes, 100.0 * static_cast<double>(busy) / (c.nodes * 8.0), c.view.running.size(),
              c.pending);
  std::printf("  pass %.1f ms (median of %zu): %zu placed, %zu evictions, %zu reservations\n",
              Median(c.ms), c.ms.size(), c.decisions.placements.size(),
              c.decisions.evictions.size(), c.decisions.reservations.size());
  std::printf("  outcomes:");
  for (const auto& [o, n] : outcomes) {
    std::printf(" %s %lu,", std::string(OutcomeName(o)).c_str(), static_cast<unsigned long>(n));
  }
  std::printf("\n");
}

double Ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

// The Scheduler (the world kept between passes) on a case's world: its state built from
// the world (Prepare: the node tables, every job interned, every gang's names looked up);
// its first pass over that fresh state (nothing of an earlier pass to reuse); then, each
// pass's decisions applied as the coordinator applies them (placed jobs run, victims
// leave, preemption reservations go back to their jobs): the next pass (which takes in
// the thousands of gangs the first started), the pass after the stated change (1% of the
// jobs: half of them end, as many arrive; 0.1% of the nodes disconnect), and the pass
// after that, with a change of jobs alone. Each timed pass is checked against Plan on
// the same world where asked.
struct Incremental {
  std::vector<double> build, first, settle, after_change, after_jobs;
  std::vector<double> absorb;  // of the passes after a change: taking the change in
  bool same = true;            // every checked pass decided as Plan did
};

std::vector<PendingJob> Arrivals(const Case& c, JobId from, uint32_t n, uint64_t seed) {
  Gen g(static_cast<uint32_t>(c.policy.tenants.size() - 1));
  g.rng.seed(seed);
  std::vector<PendingJob> out;
  for (JobId id = from; id < from + n; ++id) out.push_back(Pending(g, id, Tree::kNone));
  return out;
}

bool SamePass(const Decisions& a, const Decisions& b) {
  if (a.placements.size() != b.placements.size() || a.evictions.size() != b.evictions.size() ||
      a.reservations.size() != b.reservations.size() || a.outcomes.size() != b.outcomes.size()) {
    return false;
  }
  for (size_t i = 0; i < a.outcomes.size(); ++i) {
    const JobOutcome &x = a.outcomes[i], &y = b.outcomes[i];
    if (x.job != y.job || x.outcome != y.outcome || x.reason.str() != y.reason.str()) return false;
  }
  for (size_t i = 0; i < a.placements.size(); ++i) {
    if (a.placements[i].job != b.placements[i].job) return false;
    for (size_t k = 0; k < a.placements[i].nodes.size(); ++k) {
      if (a.placements[i].nodes[k].node != b.placements[i].nodes[k].node) return false;
    }
  }
  return true;
}

// The world as the Scheduler was told it, to apply decisions to it.
struct Mirror {
  std::unordered_map<JobId, PendingJob> pending;
  std::unordered_map<JobId, RunningGang> running;
};

void ApplyDecisions(const Case& c, const Decisions& d, Time now, Mirror& m, Scheduler& s) {
  for (const Placement& p : d.placements) {
    auto it = m.pending.find(p.job);
    RunningGang g;
    g.id = p.job;
    g.tenant = it->second.tenant;
    g.priority_class = it->second.priority_class;
    g.nodes = ToHeld(c.view, p);
    g.started = now;
    s.RemovePending(p.job);
    s.UpsertRunning(g);
    m.pending.erase(it);
    m.running[g.id] = std::move(g);
  }
  for (const Eviction& e : d.evictions) {
    RunningGang& g = m.running[e.victim];
    g.evicting = true;
    g.evicting_for = e.preemptor;
    s.UpsertRunning(g);
  }
  for (const Reservation& r : d.reservations) {
    if (r.kind != Reservation::Kind::kPreemption) continue;
    PendingJob& j = m.pending[r.job];
    j.reserved_nodes.clear();
    for (uint32_t n : r.nodes) j.reserved_nodes.push_back(c.view.nodes[n].name);
    s.UpsertPending(j);
  }
}

void TimeIncremental(const Case& c, Incremental& out, int rep, bool check,
                     Scheduler* given = nullptr) {
  std::unique_ptr<Scheduler> own;
  if (given == nullptr) own = std::make_unique<Scheduler>(c.policy);
  Scheduler& s = given ? *given : *own;
  Mirror m;
  for (const NodeInfo& n : c.view.nodes) s.UpsertNode(n);
  for (const RunningGang& g : c.view.running) {
    s.UpsertRunning(g);
    m.running[g.id] = g;
  }
  for (const PendingJob& j : c.view.pending) {
    s.UpsertPending(j);
    m.pending[j.id] = j;
  }
  s.SetUsage(c.view.usage);
  auto t0 = std::chrono::steady_clock::now();
  s.Prepare(kNow);
  out.build.push_back(Ms(t0));
  auto timed = [&](Time now, std::vector<double>& into) {
    auto t = std::chrono::steady_clock::now();
    s.Prepare(now);  // the changes taken in: part of the pass, timed apart as well
    if (&into == &out.after_change) out.absorb.push_back(Ms(t));
    Decisions d = s.Plan(now);
    into.push_back(Ms(t));
    if (check) out.same &= SamePass(d, Plan(s.View(), c.policy, now));
    ApplyDecisions(c, d, now, m, s);
  };
  timed(kNow, out.first);
  // The pass after a cold start takes in what it started (thousands of gangs at once) and
  // places what is left: timed apart, so that the next is a pass after the stated change.
  timed(kNow + 500, out.settle);
  // The stated change: 1% of the jobs (every 200th ends; as many arrive), 0.1% of nodes.
  JobId next = 900'000'000 + static_cast<JobId>(rep) * 10'000'000;
  auto change_jobs = [&](uint32_t offset) {
    uint32_t n = 0;
    for (size_t i = offset; i < c.view.pending.size(); i += 200, ++n) {
      s.RemovePending(c.view.pending[i].id);
      m.pending.erase(c.view.pending[i].id);
    }
    for (PendingJob& j : Arrivals(c, next, n, next)) {
      s.UpsertPending(j);
      m.pending[j.id] = std::move(j);
    }
    next += n;
  };
  change_jobs(0);
  for (size_t i = 7; i < c.view.nodes.size(); i += 1000) {
    NodeInfo n = c.view.nodes[i];
    n.schedulable = false;
    s.UpsertNode(std::move(n));
  }
  timed(kNow + 1000, out.after_change);
  change_jobs(100);
  timed(kNow + 2000, out.after_jobs);
}

void ReportIncremental(const char* label, const Incremental& r) {
  std::printf(
      "  %s, Scheduler: state built in %.1f ms; first pass %.1f ms; with each pass's "
      "decisions applied, the next %.1f ms, then after the change %.1f ms (%.1f ms of it "
      "taking the change in), after jobs alone %.1f ms (medians of %zu); %s\n",
      label, Median(r.build), Median(r.first), Median(r.settle), Median(r.after_change),
      Median(r.absorb), Median(r.after_jobs), r.first.size(),
      r.same ? "decisions as Plan's" : "DECISIONS DIFFER FROM PLAN'S");
}

// The Scheduler's keys (the `pass_ms_*` keys stay Plan's, the coordinator's pass today),
// and Plan's at 100k x 1M (only when it ran).
std::string IncrementalJson(const Incremental& large, const Case& huge, const Incremental& h) {
  char buf[2048];
  int n = std::snprintf(
      buf, sizeof buf,
      "\"scheduler_build_ms_10k_nodes_100k_jobs\": %.1f, "
      "\"scheduler_pass_ms_10k_nodes_100k_jobs\": %.1f, "
      "\"scheduler_second_pass_ms_10k_nodes_100k_jobs\": %.1f, "
      "\"pass_ms_10k_nodes_100k_jobs_after_change\": %.1f, "
      "\"pass_ms_10k_nodes_100k_jobs_after_job_change\": %.1f, \"scheduler_same_as_plan\": %s",
      Median(large.build), Median(large.first), Median(large.settle), Median(large.after_change),
      Median(large.after_jobs), large.same && h.same ? "true" : "false");
  if (!huge.ms.empty()) {
    std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n),
                  ", \"pass_ms_100k_nodes_1m_jobs\": %.1f, "
                  "\"scheduler_build_ms_100k_nodes_1m_jobs\": %.1f, "
                  "\"scheduler_pass_ms_100k_nodes_1m_jobs\": %.1f, "
                  "\"scheduler_second_pass_ms_100k_nodes_1m_jobs\": %.1f, "
                  "\"pass_ms_100k_nodes_1m_jobs_after_change\": %.1f, "
                  "\"pass_ms_100k_nodes_1m_jobs_after_job_change\": %.1f",
                  Median(huge.ms), Median(h.build), Median(h.first), Median(h.settle),
                  Median(h.after_change), Median(h.after_jobs));
  }
  return buf;
}

// --curves: the Scheduler's pass and memory against the cluster's size and the queue's,
// 1,000-100,000 nodes x 10,000-1,000,000 pending jobs (128 tenants), as a table, an SVG
// plot (--plot) and the JSON line. Per point, the median of `reps` repetitions of
// TimeIncremental; memory is the heap in use (mallinfo2) that the Scheduler holds after
// its first pass: its copy of the world, the built tables, the pass's kept arrays.
struct CurvePoint {
  uint32_t nodes = 0, jobs = 0;
  double first_ms = 0, after_ms = 0, plan_ms = 0;
  double bytes = 0;
};

uint64_t HeapInUse() { return mallinfo2().uordblks; }

// Log-log lines, one per node count, of `value` against pending jobs, in a box at
// (x0, y0) of size w x h.
void SvgPanel(std::string& svg, const std::vector<CurvePoint>& pts,
              double (*value)(const CurvePoint&), const char* title, const char* unit, double x0,
              double y0, double w, double h, double (*dashed)(const CurvePoint&) = nullptr) {
  double lo = 1e300, hi = 0;
  for (const CurvePoint& p : pts) {
    lo = std::min({lo, value(p), dashed ? dashed(p) : value(p)});
    hi = std::max({hi, value(p), dashed ? dashed(p) : value(p)});
  }
  lo = std::pow(10, std::floor(std::log10(std::max(lo, 1e-3))));
  hi = std::pow(10, std::ceil(std::log10(std::max(hi, lo * 10))));
  auto x = [&](double jobs) { return x0 + w * (std::log10(jobs) - 4) / 2; };
  auto y = [&](double v) {
    return y0 + h -
           h * (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  };
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='none' stroke='#888'/>"
                "<text x='%.0f' y='%.0f' font-size='14'>%s</text>\n",
                x0, y0, w, h, x0, y0 - 8, title);
  svg += buf;
  for (double d = lo; d <= hi * 1.001; d *= 10) {
    std::snprintf(buf, sizeof buf,
                  "<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' stroke='#ddd'/>"
                  "<text x='%.0f' y='%.1f' font-size='11' text-anchor='end'>%g %s</text>\n",
                  x0, y(d), x0 + w, y(d), x0 - 4, y(d) + 4, d, unit);
    svg += buf;
  }
  for (double jobs : {1e4, 1e5, 1e6}) {
    std::snprintf(buf, sizeof buf,
                  "<text x='%.1f' y='%.0f' font-size='11' text-anchor='middle'>%s jobs</text>\n",
                  x(jobs), y0 + h + 14,
                  jobs >= 1e6   ? "1M"
                  : jobs >= 1e5 ? "100k"
                                : "10k");
    svg += buf;
  }
  const char* colors[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a"};
  std::vector<uint32_t> sizes;
  for (const CurvePoint& p : pts) {
    if (std::find(sizes.begin(), sizes.end(), p.nodes) == sizes.end()) sizes.push_back(p.nodes);
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    // One node count's points as a polyline of `of`, drawn with `style`.
    auto line = [&](double (*of)(const CurvePoint&), const char* style) {
      std::string path;
      for (const CurvePoint& p : pts) {
        if (p.nodes != sizes[k]) continue;
        std::snprintf(buf, sizeof buf, "%s%.1f,%.1f", path.empty() ? "" : " ", x(p.jobs), y(of(p)));
        path += buf;
      }
      svg += "<polyline fill='none' stroke='" + std::string(colors[k % 4]) + "' " + style +
             " points='" + path + "'/>\n";
    };
    line(value, "stroke-width='2'");
    if (dashed != nullptr) line(dashed, "stroke-width='1.5' stroke-dasharray='5,4'");
    std::snprintf(buf, sizeof buf,
                  "<text x='%.0f' y='%.0f' font-size='11' fill='%s'>%uk nodes</text>\n", x0 + 8,
                  y0 + 16 + 14 * k, colors[k % 4], sizes[k] / 1000);
    svg += buf;
  }
}

int Curves(int reps, const std::string& plot) {
  std::vector<CurvePoint> pts;
  for (uint32_t nodes : {1'000u, 10'000u, 100'000u}) {
    for (uint32_t jobs : {10'000u, 100'000u, 1'000'000u}) {
      Case c = MakeCase("curve", nodes, jobs, false, Tree::kNone, 128);
      Incremental inc;
      std::vector<double> bytes;
      for (int i = 0; i < reps; ++i) {
        TimePass(c);
        c.decisions = Decisions{};
        uint64_t before = HeapInUse();
        Scheduler s(c.policy);
        TimeIncremental(c, inc, i, /*check=*/false, &s);
        bytes.push_back(static_cast<double>(HeapInUse() - before));
      }
      CurvePoint p{nodes,        jobs,         Median(inc.first), Median(inc.after_change),
                   Median(c.ms), Median(bytes)};
      std::printf(
          "%7u nodes %9u jobs: Plan %8.1f ms; Scheduler first pass %8.1f ms, after "
          "the change %8.1f ms; %7.1f MiB (%.0f bytes per pending job)\n",
          nodes, jobs, p.plan_ms, p.first_ms, p.after_ms, p.bytes / (1 << 20), p.bytes / jobs);
      std::fflush(stdout);
      pts.push_back(p);
    }
  }
  std::string svg =
      "<svg xmlns='http://www.w3.org/2000/svg' width='900' height='380' "
      "font-family='sans-serif'>\n";
  SvgPanel(
      svg, pts, [](const CurvePoint& p) { return p.first_ms; },
      "Scheduler pass (ms); dashed: after a change", "ms", 80, 40, 330, 290,
      [](const CurvePoint& p) { return p.after_ms; });
  SvgPanel(
      svg, pts, [](const CurvePoint& p) { return p.bytes / (1 << 20); },
      "Scheduler heap in use (MiB)", "MiB", 540, 40, 330, 290);
  svg += "</svg>\n";
  if (!plot.empty()) {
    if (FILE* f = std::fopen(plot.c_str(), "w")) {
      std::fputs(svg.c_str(), f);
      std::fclose(f);
      std::printf("plot written to %s\n", plot.c_str());
    }
  }
  std::string json = "{\"scheduler_curve\": [";
  for (size_t i = 0; i < pts.size(); ++i) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s{\"nodes\": %u, \"jobs\": %u, \"plan_ms\": %.1f, \"pass_ms\": %.1f, "
                  "\"after_change_ms\": %.1f, \"heap_bytes\": %.0f}",
                  i ? ", " : "", pts[i].nodes, pts[i].jobs, pts[i].plan_ms, pts[i].first_ms,
                  pts[i].after_ms, pts[i].bytes);
    json += buf;
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
}

// --only: builds and times just the matching cases, so that a profile shows one of them.
int Only(const std::string& only, int reps, bool incremental) {
  const struct {
    const char* label;
    uint32_t nodes, pending;
    bool smt;
    Tree tree;
  } kCases[] = {{"small", 1'000, 10'000, false, Tree::kNone},
                {"large", 10'000, 100'000, false, Tree::kNone},
                {"large, SMT", 10'000, 100'000, true, Tree::kNone},
                {"large, tree, no topology asked", 10'000, 100'000, false, Tree::kPlain},
                {"large, tree, gangs ask for a leaf", 10'000, 100'000, false, Tree::kTopology},
                {"huge", 100'000, 1'000'000, false, Tree::kNone}};
  for (const auto& k : kCases) {
    if (std::string(k.label).find(only) == std::string::npos) continue;
    Case c = MakeCase(k.label, k.nodes, k.pending, k.smt, k.tree, k.nodes >= 100'000 ? 128 : 8);
    Incremental inc;
    for (int i = 0; i < reps; ++i) {
      TimePass(c);
      if (incremental) TimeIncremental(c, inc, i, /*check=*/false);
    }
    Report(c);
    if (incremental) ReportIncremental(k.label, inc);
  }
  return 0;
}

int Main(int argc, char** argv) {
  cxxopts::Options opts("baton-bench-scheduler", "one scheduling pass on 1k and 10k nodes");
  opts.add_options()("reps", "passes timed per size", cxxopts::value<int>()->default_value("7"))(
      "only", "time only the cases whose label contains this text (for a profiler; no JSON)",
      cxxopts::value<std::string>()->default_value(""))(
      "incremental", "with --only: time the Scheduler too",
      cxxopts::value<bool>()->default_value("false"))(
      "huge-reps", "repetitions at 100,000 nodes x 1,000,000 jobs (0: leave it out)",
      cxxopts::value<int>()->default_value("3"))(
      "curves", "instead: the Scheduler's pass and memory over 1k-100k nodes x 10k-1M jobs",
      cxxopts::value<bool>()->default_value("false"))(
      "plot", "with --curves: write the SVG plot here",
      cxxopts::value<std::string>()->default_value("scheduler-curves.svg"));
  const cxxopts::ParseResult flags = bench::ParseFlags(opts, argc, argv);
  const int reps = bench::FlagAtLeast(opts, flags, "reps", 1);
  if (const auto only = flags["only"].as<std::string>(); !only.empty()) {
    return Only(only, reps, flags["incremental"].as<bool>());
  }
  if (flags["curves"].as<bool>()) {
    return Curves(flags.count("reps") ? reps : 3, flags["plot"].as<std::string>());
  }
  const int huge_reps = flags["huge-reps"].as<int>();
  Case small = MakeCase("small", 1'000, 10'000);
  Case large = MakeCase("large", 10'000, 100'000);
  // The same cluster and queue on 2-way SMT nodes (inference charged whole cores).
  Case large_smt = MakeCase("large, SMT", 10'000, 100'000, /*smt=*/true);
  Case tree_plain =
      MakeCase("large, tree, no topology asked", 10'000, 100'000, false, Tree::kPlain);
  Case tree =
      MakeCase("large, tree, gangs ask for a leaf", 10'000, 100'000, false, Tree::kTopology);
  // Interleaved, so that whatever else runs on the machine weighs on every case alike.
  for (int i = 0; i < reps; ++i) {
    TimePass(small);
    TimePass(large);
    TimePass(large_smt);
    TimePass(tree_plain);  // each right before its peer: see `paired` below
    TimePass(tree);
  }
  // The Scheduler on the large world, then the huge one (100 tenants and more, so that
  // no tenant's quota is what holds its jobs), after the interleaved Plan passes: a
  // Scheduler holds a copy of its world.
  Incremental large_inc, huge_inc;
  for (int i = 0; i < reps; ++i) TimeIncremental(large, large_inc, i, /*check=*/i == 0);
  Case huge = huge_reps > 0 ? MakeCase("huge", 100'000, 1'000'000, false, Tree::kNone, 128)
                            : Case{"huge", 0, 0, {}, {}, {}, {}};
  for (int i = 0; i < huge_reps; ++i) {
    TimePass(huge);
    TimeIncremental(huge, huge_inc, i, /*check=*/i == 0);
  }
  Report(small);
  Report(large);
  ReportIncremental("large", large_inc);
  if (huge_reps > 0) {
    Report(huge);
    ReportIncremental("huge", huge_inc);
  }
  Report(large_smt);
  Report(tree_plain);
  Report(tree);
  auto [bound, spread] = Spread(tree);
  std::printf("  %zu topology-bound gangs placed, %zu over more leaves than they need\n", bound,
              spread);
  double tree_ms = Median(tree.ms);
  double small_ms = Median(small.ms), large_ms = Median(large.ms), smt_ms = Median(large_smt.ms);
  // Ratios pair the passes of one repetition (timed back to back) and take the median of
  // those pairs: the machine's speed drifts over seconds, and a ratio of two medians
  // would mix passes timed in different phases of it.
  auto paired = [&](const Case& a, const Case& b) {
    std::vector<double> r;
    for (size_t i = 0; i < a.ms.size(); ++i) r.push_back(a.ms[i] / b.ms[i]);
    return Median(r);
  };
  double growth = large_ms / small_ms;
  std::printf("growth large/small %.2f (target <= 12.5); large pass %.1f ms (target <= 200)\n",
              growth, large_ms);
  std::printf(
      "{\"pass_ms_10k_nodes_100k_jobs\": %.1f, \"us_per_job\": %.3f, \"growth_ratio\": %.2f, "
      "\"pass_ms_1k_nodes_10k_jobs\": %.1f, \"pass_ms_10k_smt_nodes_100k_jobs\": %.1f, "
      "\"smt_vs_plain\": %.2f, \"pass_ms_10k_nodes_100k_jobs_topology\": %.1f, "
      "\"topology_vs_plain\": %.2f, %s}\n",
      large_ms, large_ms * 1000 / 100'000, growth, small_ms, smt_ms, paired(large_smt, large),
      tree_ms, paired(tree, tree_plain), IncrementalJson(large_inc, huge, huge_inc).c_str());
  return 0;
}

}  // namespace
}  // namespace baton::sched

int main(int argc, char** argv) { return baton::sched::Main(argc, argv); }
