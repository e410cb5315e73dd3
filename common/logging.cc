#include "common/logging.h"

#include <mutex>
#include <string>

#include "spdlog/sinks/stdout_color_sinks.h"

namespace warp {
namespace {

constexpr const char* kLoggerNames[] = {
    "warp",          "common.format", "expertd",         "expertd.store",    "expertd.rpc",
    "expertd.uds",   "computed",      "computed.engine", "computed.planner", "computed.client",
    "computed.synth"};

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}

std::shared_ptr<spdlog::sinks::stderr_color_sink_mt>& Sink() {
  static auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  return sink;
}

spdlog::level::level_enum& CurrentLevel() {
  static spdlog::level::level_enum level = spdlog::level::info;
  return level;
}

std::shared_ptr<spdlog::logger> CreateLocked(const std::string& name) {
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = std::make_shared<spdlog::logger>(name, Sink());
  logger->set_pattern("[%n] %l: %v");
  logger->set_level(CurrentLevel());
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace

void InitLogging(std::string_view level) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  const auto parsed = spdlog::level::from_str(std::string(level));
  CurrentLevel() = parsed == spdlog::level::off && level != "off" ? spdlog::level::info : parsed;
  for (const char* name : kLoggerNames) CreateLocked(name)->set_level(CurrentLevel());
  // And every logger made since by name (Logger("store"), ...): a level set
  // again (the C API's warp_set_log_level) reaches them too.
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& logger) {
    logger->set_level(CurrentLevel());
  });
}

spdlog::logger& Logger(std::string_view name) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return *CreateLocked(std::string(name));
}

}  // namespace warp
