// Topic loggers: created lazily, all sharing one stderr sink.
#include "support/log.h"

#include <memory>
#include <spdlog/sinks/stdout_sinks.h>

namespace tj::log {

std::array<bool, kTopicCount> g_enabled{};

namespace {
constexpr std::array<std::string_view, kTopicCount> kNames = {
    "graph_breaks", "recompiles", "guards", "graph_code", "aot_graphs", "output_code", "perf", "skips", "dynamic"};

std::shared_ptr<spdlog::sinks::stderr_sink_mt> shared_sink() {
  static auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  return sink;
}
}  // namespace

std::string_view topic_name(Topic t) { return kNames[static_cast<int>(t)]; }

spdlog::logger& logger(Topic t) {
  static std::array<std::shared_ptr<spdlog::logger>, kTopicCount> loggers;
  auto& slot = loggers[static_cast<int>(t)];
  if (!slot) {
    slot = std::make_shared<spdlog::logger>(std::string(topic_name(t)), shared_sink());
    slot->set_pattern("[tracejit:%n] %v");
    slot->flush_on(spdlog::level::info);
  }
  return *slot;
}

spdlog::logger& error_logger() {
  static std::shared_ptr<spdlog::logger> slot = [] {
    auto l = std::make_shared<spdlog::logger>("error", shared_sink());
    l->set_pattern("[tracejit:%n] %v");
    l->flush_on(spdlog::level::err);
    return l;
  }();
  return *slot;
}

std::string known_topics() {
  std::string out;
  for (auto n : kNames) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

bool set_topics(std::string_view spec, std::string* error) {
  std::array<bool, kTopicCount> wanted{};
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view name = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) continue;
    if (name == "all") {
      wanted.fill(true);
      continue;
    }
    bool found = false;
    for (int i = 0; i < kTopicCount; ++i) {
      if (kNames[i] == name) wanted[i] = found = true;
    }
    if (!found) {
      if (error) *error = "unknown log topic '" + std::string(name) + "' (known: " + known_topics() + ", all)";
      return false;
    }
  }
  g_enabled = wanted;
  return true;
}

}  // namespace tj::log
