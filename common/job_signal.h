// The signals a person may send a running job (`baton signal -s`, the dashboard's Send
// SIGUSR1): USR1 asks a job using libbaton_checkpoint to save and exit, USR2 is the job's
// own. Anything else stops a job, which is cancel's business.
#pragma once

#include <signal.h>

#include <optional>
#include <string>

namespace baton {

// "USR1"/"SIGUSR1" -> SIGUSR1, "USR2"/"SIGUSR2" -> SIGUSR2; nullopt for any other name.
inline std::optional<int> JobSignalByName(std::string name) {
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  if (name == "USR1") return SIGUSR1;
  if (name == "USR2") return SIGUSR2;
  return std::nullopt;
}

}  // namespace baton
