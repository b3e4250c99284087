// Per-topic logging for every layer, in the spirit of TORCH_LOGS.
//
// Topics are a fixed enum; each has its own spdlog logger writing to stderr
// with the prefix "[tracejit:<topic>]". All topics are off by default and
// are switched on by `--log`/`TRACEJIT_LOGS` (a comma list, or "all").
// `TJ_LOG(topic, fmt, args...)` tests one bool before formatting anything,
// so a disabled topic costs a load and a branch on hot paths.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace tj::log {

// graph_breaks and graph_code are about frames that produce (or would
// produce) a graph; frames that run as they are because they do no tensor
// work go to `skips`.
enum class Topic { graph_breaks, recompiles, guards, graph_code, aot_graphs, output_code, perf, skips, dynamic, count_ };
inline constexpr int kTopicCount = static_cast<int>(Topic::count_);

extern std::array<bool, kTopicCount> g_enabled;

inline bool enabled(Topic t) { return g_enabled[static_cast<int>(t)]; }
std::string_view topic_name(Topic t);
spdlog::logger& logger(Topic t);

// Parses "graph_breaks,guards" (or "all", or "") and enables exactly those
// topics. On an unknown name returns false and sets `error` to a one-line
// message naming it and the known topics; nothing is changed then.
bool set_topics(std::string_view spec, std::string* error);
std::string known_topics();

// Always on, whatever the topics: "[tracejit:error] ..." lines on the same
// sink, for what a user must see (internal errors: internal_error.h).
spdlog::logger& error_logger();

}  // namespace tj::log

#define TJ_LOG(topic, ...)                                                  \
  do {                                                                      \
    if (::tj::log::enabled(::tj::log::Topic::topic))                        \
      ::tj::log::logger(::tj::log::Topic::topic).info(__VA_ARGS__);         \
  } while (0)
