// Logging for baton's daemons: spdlog, one logger per process, with the component name
// and a level taken from flags. Daemons call InitLogging once in main(); libraries log
// through spdlog's default logger. Thread-safe after InitLogging.
#pragma once

#include <string_view>

#include "spdlog/spdlog.h"

namespace baton {

// `level`: trace, debug, info, warn, error. Unknown levels fall back to info.
void InitLogging(std::string_view component, std::string_view level);
// Changes the level of the running logger (a daemon's SIGHUP reload).
void SetLogLevel(std::string_view level);

}  // namespace baton
