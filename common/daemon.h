// Process plumbing shared by baton's daemons: block the stop signals before any thread
// starts and wait for one of them in main(); publish the bound address in a ready file
// (written atomically) so scripts and tests can start daemons on port 0.
// Call BlockStopSignals first thing in main(), before threads exist.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace baton {

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and every thread it starts).
void BlockStopSignals();
// Turns off Abseil's lock-order (deadlock) graph for every absl::Mutex of the process.
// Debian builds Abseil without NDEBUG, so each lock, and gRPC takes several per call,
// records itself in one global graph: about 2% of a coordinator's CPU under a load of
// submits (perf, baton-bench-submit). Daemons call it in main(); tests keep the check.
void DisableMutexDeadlockDetection();
// Waits for one of the blocked stop signals and returns its number.
int WaitForStopSignal();
// A pending stop signal taken without waiting; 0 when none is pending.
int PollStopSignal();
// Runs this program again in this process, with `argv` (its argv as main() got it):
// every descriptor but stdin, stdout and stderr is closed first. For a daemon whose
// in-memory state must go whole (an HA coordinator that stops leading). Only returns
// (with why) when exec failed.
absl::Status ReExec(char** argv);
// How long a file written here must last. kSurvivesCrash: synced before the rename, so that
// after a power loss the file is the old one or the new one, whole. kUntilReboot: a record
// of what ends with the boot (processes, cgroups); readers still never see half of it.
enum class Durability { kSurvivesCrash, kUntilReboot };

// Writes `content` to `path` through a temp file + rename, so readers never see half.
// The file gets `mode`; the temp file is created exclusively and never through a link.
absl::Status WriteFileAtomically(const std::string& path, const std::string& content,
                                 mode_t mode = 0644,
                                 Durability durability = Durability::kSurvivesCrash);

}  // namespace baton
