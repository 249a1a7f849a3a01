#include "launcher/agent/attempt_record.h"

#include <unistd.h>

#include <sstream>

#include "common/daemon.h"
#include "launcher/agent/job_files.h"
#include "proto/rpc_util.h"

namespace baton {
namespace {

// The launch it carries is at most a request's size; its processes add little.
constexpr size_t kMaxRecordBytes = kMaxRequestBytes + (1 << 20);

// An agent before attempt.pb: launch.pb (the Launch) and `ranks`, the group on its first
// line, then "rank PID LOCAL_RANK KEEPER" or "daemon PID KEEPER" per process.
absl::StatusOr<v1::AgentAttemptRecord> ReadOlderRecords(const std::string& dir) {
  v1::AgentAttemptRecord r;
  std::string path = dir + "/launch.pb";
  absl::StatusOr<std::string> launch = ReadUntrustedFile(path, geteuid(), kMaxRequestBytes);
  if (!launch.ok()) return launch.status();
  if (!r.mutable_launch()->ParseFromString(*launch)) {
    return absl::DataLossError("unreadable launch record " + path);
  }
  absl::StatusOr<std::string> text = ReadUntrustedFile(dir + "/ranks", geteuid());
  std::istringstream ranks(text.ok() ? *text : "");
  std::string line;
  if (std::getline(ranks, line)) {
    r.set_process_group(static_cast<int32_t>(std::strtol(line.c_str(), nullptr, 10)));
  }
  while (std::getline(ranks, line)) {
    std::istringstream words(line);
    std::string kind;
    pid_t pid = 0, keeper = 0;
    uint32_t rank = 0;
    words >> kind;
    bool daemon = kind == "daemon";
    if (daemon ? !(words >> pid >> keeper) : kind != "rank" || !(words >> pid >> rank >> keeper)) {
      continue;
    }
    v1::AgentAttemptRecord::Process* p = r.add_processes();
    p->set_pid(pid);
    p->set_daemon(daemon);
    p->set_local_rank(rank);
    p->set_keeper(keeper);
  }
  return r;
}

}  // namespace

absl::Status WriteAttemptRecord(const std::string& dir, const v1::AgentAttemptRecord& record) {
  return WriteFileAtomically(dir + "/" + kAttemptRecordFile, record.SerializeAsString(), 0600,
                             Durability::kUntilReboot);
}

absl::StatusOr<v1::AgentAttemptRecord> ReadAttemptRecord(const std::string& dir) {
  std::string path = dir + "/" + kAttemptRecordFile;
  absl::StatusOr<std::string> bytes = ReadUntrustedFile(path, geteuid(), kMaxRecordBytes);
  if (absl::IsNotFound(bytes.status())) {
    absl::StatusOr<v1::AgentAttemptRecord> older = ReadOlderRecords(dir);
    // Neither kind: the new record is the one missing.
    return absl::IsNotFound(older.status()) ? bytes.status() : older;
  }
  if (!bytes.ok()) return bytes.status();
  v1::AgentAttemptRecord r;
  if (!r.ParseFromString(*bytes)) return absl::DataLossError("unreadable attempt record " + path);
  if (!r.has_launch()) return absl::DataLossError("attempt record " + path + " has no launch");
  return r;
}

}  // namespace baton
