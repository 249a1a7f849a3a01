#include "launcher/agent/progress_report.h"

#include "checkpoint/progress.h"
#include "spdlog/spdlog.h"

namespace baton {

bool ApplyProgressNote(const absl::StatusOr<std::string>& note, ProgressNoteState& state,
                       v1::AttemptReport& report) {
  absl::StatusOr<checkpoint::Progress> progress =
      note.ok() ? checkpoint::ParseProgress(note->substr(0, note->find('\n'))) : note.status();
  if (!progress.ok()) {
    // No note yet is normal; anything else is the job's problem, said once in its report.
    if (absl::IsNotFound(progress.status()) || (note.ok() && note->empty())) return false;
    std::string why = "progress note ignored: " + std::string(progress.status().message());
    if (why == state.error) return false;
    spdlog::warn("job {} attempt {}: {}", report.job_id(), report.attempt(), why);
    state.error = why;
    if (report.message().empty() || report.message().rfind("progress note", 0) == 0) {
      report.set_message(why);
      return true;
    }
    return false;
  }
  bool changed = !report.reports_progress();
  report.set_reports_progress(true);
  if (!state.error.empty()) {
    if (report.message() == state.error) {
      report.clear_message();
      changed = true;
    }
    state.error.clear();
  }
  if (progress->committed_step > report.checkpoint_step()) {
    report.set_checkpoint_step(progress->committed_step);
    // The note is rewritten only as a save starts, commits or fails: its time is the
    // commit's, or a later one. Read late (the last read, at the end), it still says when.
    report.set_checkpoint_time_ms(progress->time_ms);
    changed = true;
  }
  const int64_t saving = progress->state == "saving" ? progress->step : -1;
  if (saving != state.saving_step) {
    state.saving_step = saving;
    if (saving >= 0) {
      report.set_saving_step(saving);
    } else {
      report.clear_saving_step();
    }
    changed = true;
  }
  return changed;
}

}  // namespace baton
