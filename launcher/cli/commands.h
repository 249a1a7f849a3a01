// The `baton` subcommands. Each parses its own flags (plus the shared --coordinator,
// --timeout and --json), makes its calls, prints, and returns the exit code (client.h).
#pragma once

#include <string>
#include <vector>

namespace baton::cli {

// argv as given after the subcommand name.
using Args = std::vector<std::string>;

int RunSubmit(const Args& args);
int RunQueue(const Args& args);
int RunStatus(const Args& args);
int RunExplain(const Args& args);
int RunNodes(const Args& args);
int RunLogs(const Args& args);
int RunCancel(const Args& args);
int RunHold(const Args& args);
int RunRelease(const Args& args);
int RunRequeue(const Args& args);
int RunSignal(const Args& args);
int RunPolicy(const Args& args);
int RunShare(const Args& args);
int RunAdmin(const Args& args);  // `baton admin policy ...` = `baton policy ...`; tokens
int RunWhoAmI(const Args& args);
int RunUi(const Args& args);  // admin_command.cc: a web login link
int RunEvents(const Args& args);
int RunCapacity(const Args& args);
int RunUsage(const Args& args);  // accounting_commands.cc
int RunHistory(const Args& args);
// `nodes drain|undrain NODE` (args start with the verb) and `admin backup DIR`: admins.
int RunNodeDrain(const Args& args);
int RunBackup(const Args& args);  // local: sizes pools and quotas, no coordinator

}  // namespace baton::cli
