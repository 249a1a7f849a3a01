#include "launcher/agent/effects_queue.h"

namespace baton {

void EffectsQueue::Post(std::vector<NoteRead> reads, const std::vector<AttemptKey>& sweeps,
                        bool limits_changed, bool refresh_stats) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (NoteRead& r : reads) {
      auto [it, added] = pending_.reads.emplace(r.key, r);
      if (!added && r.finishing) it->second = std::move(r);  // the end's read wins
    }
    pending_.sweeps.insert(sweeps.begin(), sweeps.end());
    pending_.limits_changed |= limits_changed;
    pending_.refresh_stats |= refresh_stats;
    wake = !pending_.empty();
  }
  if (wake) cv_.notify_one();
}

Effects EffectsQueue::Take() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !pending_.empty() || stopped_; });
  Effects out;
  std::swap(out, pending_);
  return out;
}

void EffectsQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

}  // namespace baton
