// Keyword arguments as the tracer holds them for a call.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracer/values.h"

namespace tj::tracer {

// Whether the call names keyword `name`.
inline bool names_kwarg(const std::vector<std::pair<std::string, ValuePtr>>& kwargs, std::string_view name) {
  return std::any_of(kwargs.begin(), kwargs.end(), [name](const auto& kv) { return kv.first == name; });
}

}  // namespace tj::tracer
