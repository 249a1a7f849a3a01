// Reading files a job could have touched, as root, without trusting them. A job is hostile
// code: it can replace its progress note with a FIFO (a blocking read would wedge the
// agent), a symlink to /dev/zero or a secret, or a file of a gigabyte. Every read here
// refuses links (O_NOFOLLOW), never blocks on open or read (O_NONBLOCK), takes regular
// files of the expected owner only and reads at most `max_bytes`; the error names the
// problem, for that attempt's report. Pids read from any record are believed only for
// processes that are in the attempt's cgroups now.
// Pure functions over the file system and /proc; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace baton {

inline constexpr size_t kMaxJobFileBytes = 64 << 10;

// The whole file at `path` (at most `max_bytes`; larger is an error), which must be a
// regular file owned by `owner`.
absl::StatusOr<std::string> ReadUntrustedFile(const std::string& path, uid_t owner,
                                              size_t max_bytes = kMaxJobFileBytes);

// A process group to signal, as read from a record: only a group that is not init's,
// not ours, and led by or containing one of `attempt_pids` (the attempt's cgroup members
// now). `group_of(pid)` is getpgid (a parameter for tests). 0 when not to be believed.
pid_t BelievableGroup(long pgid, const std::vector<pid_t>& attempt_pids, pid_t own_group,
                      pid_t (*group_of)(pid_t));

// Retention on a node: the attempt directories under `data_dir`/jobs/<job>/<attempt>
// (records, output log, work dir) whose directory and output log were last changed more
// than `retention` before `now`, leaving out `keep` (attempts the agent still tracks).
std::vector<std::string> ExpiredAttemptDirs(const std::string& data_dir,
                                            const std::set<std::pair<uint64_t, uint32_t>>& keep,
                                            absl::Time now, absl::Duration retention);

}  // namespace baton
