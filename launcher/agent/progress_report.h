// What a job's progress note (checkpoint/progress.h: the checkpoint library's one-line
// JSON, rewritten as a save starts, commits or fails) changes in its attempt's report,
// decided with no file, no lock and no clock: the agent reads the note outside its lock
// (it is the job's file, so untrusted) and applies it here under the lock.
// - No note yet (not found, or empty) changes nothing.
// - A note that does not parse is said once in the report's message, and only where the
//   message is free or is an earlier note's complaint; a good note later clears it.
// - The committed step only grows (with the note's time); a save in progress is reported
//   while the note says "saving", and cleared when it no longer does.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/agent.pb.h"

namespace baton {

// What the agent remembers of an attempt's notes between reads.
struct ProgressNoteState {
  int64_t saving_step = -1;  // a save in progress per the note; -1: none
  std::string error;         // why the note was not read (reported once)
};

// Applies `note` (the file's contents, or why it could not be read) to `report`. Returns
// whether the report changed (and so is sent again).
bool ApplyProgressNote(const absl::StatusOr<std::string>& note, ProgressNoteState& state,
                       v1::AttemptReport& report);

}  // namespace baton
