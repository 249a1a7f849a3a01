#include "common/logging.h"

#include <string>

#include "spdlog/sinks/stdout_color_sinks.h"

namespace baton {

void InitLogging(std::string_view component, std::string_view level) {
  auto logger = spdlog::stderr_color_mt(std::string(component));
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ [%n] %v");
  SetLogLevel(level);
  spdlog::flush_on(spdlog::level::info);
}

void SetLogLevel(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
  spdlog::set_level(lvl);
}

}  // namespace baton
