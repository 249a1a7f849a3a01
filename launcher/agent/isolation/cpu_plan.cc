#include "launcher/agent/isolation/cpu_plan.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace baton {

std::string FormatCpuList(const std::vector<uint32_t>& input) {
  std::vector<uint32_t> cpus = input;
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

CpuPlanner::CpuPlanner(const v1::Inventory& inv, ClassOptions options) : options_(options) {
  for (const auto& n : inv.numa_nodes()) {
    for (uint32_t c : n.cpus()) numa_of_[c] = n.id();
  }
  for (const auto& c : inv.cores()) {
    cores_.push_back(Core{{c.cpus().begin(), c.cpus().end()}, c.numa_node()});
  }
  if (cores_.empty()) {  // an inventory without topology: every CPU a core
    for (const auto& [cpu, numa] : numa_of_) cores_.push_back(Core{{cpu}, numa});
  }
  for (size_t i = 0; i < cores_.size(); ++i) {
    for (uint32_t c : cores_[i].cpus) core_of_[c] = i;
  }
}

std::set<uint32_t> CpuPlanner::TakenCpus() const {
  std::set<uint32_t> taken;
  for (const auto& [n, cpus] : exclusive_) taken.insert(cpus.begin(), cpus.end());
  return taken;
}

std::string CpuPlanner::CheckCharged(const std::vector<uint32_t>& cpus) const {
  std::set<uint32_t> taken = TakenCpus(), mine;
  for (uint32_t c : cpus) {
    if (!numa_of_.count(c)) return "CPU " + std::to_string(c) + " is not one of this node's";
    if (taken.count(c)) return "CPU " + std::to_string(c) + " is held by another inference job";
    mine.insert(c);
  }
  // Whole cores only: a sibling left out would run training on the same core's caches
  // and pipelines (an older coordinator charged single CPUs).
  for (uint32_t c : mine) {
    auto core = core_of_.find(c);
    if (core == core_of_.end()) continue;
    for (uint32_t sibling : cores_[core->second].cpus) {
      if (!mine.count(sibling)) {
        return "CPU " + std::to_string(c) + " without its SMT sibling " + std::to_string(sibling) +
               " (inference holds whole cores)";
      }
    }
  }
  if (taken.size() + mine.size() + options_.min_shared_cpus > numa_of_.size()) {
    return "they would leave fewer than " + std::to_string(options_.min_shared_cpus) +
           " CPU(s) shared";
  }
  return "";
}

absl::Status CpuPlanner::Add(const std::string& name, const CpuDemand& d) {
  if (demands_.count(name)) return absl::OkStatus();
  if (!d.inference) {
    demands_[name] = d;
    return absl::OkStatus();
  }
  if (!d.cpus.empty()) {
    std::string why = CheckCharged(d.cpus);
    if (why.empty()) {
      std::set<uint32_t> mine(d.cpus.begin(), d.cpus.end());
      exclusive_[name].assign(mine.begin(), mine.end());
      demands_[name] = d;
      return absl::OkStatus();
    }
    spdlog::warn("{}: not the CPUs {} the scheduler charged ({}): the agent picks its own", name,
                 FormatCpuList(d.cpus), why);
  }
  size_t want = std::max<uint64_t>(1, (d.cpu_millis + 999) / 1000);
  std::set<uint32_t> taken = TakenCpus();
  size_t total = numa_of_.size();
  // Free whole cores, those on the GPUs' NUMA nodes first, then from the highest id down
  // (CPU 0 and its neighbours carry the system's own work).
  std::vector<const Core*> free;
  for (auto it = cores_.rbegin(); it != cores_.rend(); ++it) {
    bool busy = std::any_of(it->cpus.begin(), it->cpus.end(),
                            [&](uint32_t c) { return taken.count(c) > 0; });
    if (!busy) free.push_back(&*it);
  }
  std::stable_sort(free.begin(), free.end(), [&](const Core* a, const Core* b) {
    return d.numa_nodes.count(a->numa) > d.numa_nodes.count(b->numa);
  });
  std::vector<uint32_t> mine;
  for (const Core* c : free) {
    if (mine.size() >= want) break;
    if (taken.size() + mine.size() + c->cpus.size() + options_.min_shared_cpus > total) continue;
    mine.insert(mine.end(), c->cpus.begin(), c->cpus.end());
  }
  if (mine.size() < want) {
    return absl::ResourceExhaustedError(
        "not enough free whole cores for an inference job: it needs " + std::to_string(want) +
        " CPU(s); " + std::to_string(total - taken.size()) + " not held by inference, of which " +
        std::to_string(options_.min_shared_cpus) + " stay shared");
  }
  std::sort(mine.begin(), mine.end());
  exclusive_[name] = mine;
  demands_[name] = d;
  return absl::OkStatus();
}

void CpuPlanner::Remove(const std::string& name) {
  demands_.erase(name);
  exclusive_.erase(name);
}

std::vector<uint32_t> CpuPlanner::SharedCpus() const {
  std::set<uint32_t> taken = TakenCpus();
  std::vector<uint32_t> shared;
  for (const auto& [cpu, numa] : numa_of_) {
    if (!taken.count(cpu)) shared.push_back(cpu);
  }
  return shared;
}

std::vector<uint32_t> CpuPlanner::MemsOf(const std::vector<uint32_t>& cpus) const {
  std::set<uint32_t> nodes;
  for (uint32_t c : cpus) {
    auto it = numa_of_.find(c);
    if (it != numa_of_.end() && it->second >= 0) nodes.insert(static_cast<uint32_t>(it->second));
  }
  return std::vector<uint32_t>(nodes.begin(), nodes.end());
}

CpuPlan CpuPlanner::PlanFor(const std::string& name) const {
  CpuPlan plan;
  auto it = demands_.find(name);
  if (it == demands_.end()) return plan;
  const CpuDemand& d = it->second;
  uint64_t cores = std::max<uint64_t>(1, (d.cpu_millis + 999) / 1000);
  plan.limits.cpu_weight = std::clamp<uint64_t>(
      d.cpu_millis == 0 ? options_.weight_per_core : d.cpu_millis * options_.weight_per_core / 1000,
      1, 10000);
  std::vector<uint32_t> cpus;
  if (d.inference) {
    cpus = exclusive_.at(name);
    plan.exclusive = true;
    plan.limits.memory_max_bytes =
        d.memory_bytes + d.memory_bytes * options_.inference_memory_headroom_percent / 100;
  } else {
    std::vector<uint32_t> shared = SharedCpus();
    // Near its GPUs when that side alone holds what it asked for; else every shared CPU.
    std::vector<uint32_t> near;
    for (uint32_t c : shared) {
      if (d.numa_nodes.count(numa_of_.at(c))) near.push_back(c);
    }
    cpus = !near.empty() && near.size() >= cores ? near : shared;
    plan.narrowed_cpus = static_cast<uint32_t>(numa_of_.size() - shared.size());
    plan.limits.memory_max_bytes = d.memory_bytes;
  }
  plan.cpus = cpus;
  plan.mems = MemsOf(cpus);
  plan.limits.cpus = FormatCpuList(plan.cpus);
  plan.limits.mems = FormatCpuList(plan.mems);
  plan.limits.cpu_quota_millis = cpus.size() * 1000;
  if (!d.inference && !options_.training_may_burst && d.cpu_millis > 0) {
    plan.limits.cpu_quota_millis = std::min<uint64_t>(plan.limits.cpu_quota_millis, d.cpu_millis);
  }
  return plan;
}

std::vector<std::string> CpuPlanner::TrainingAttempts() const {
  std::vector<std::string> out;
  for (const auto& [name, d] : demands_) {
    if (!d.inference) out.push_back(name);
  }
  return out;
}

std::vector<uint32_t> CpuPlanner::ExclusiveCpuSet() const {
  std::vector<uint32_t> all;
  for (const auto& [n, cpus] : exclusive_) all.insert(all.end(), cpus.begin(), cpus.end());
  return all;
}

}  // namespace baton
