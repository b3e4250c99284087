// Warnings for the user from layers that hold no Python state (jit, graph).
//
// `warn(message)` hands a one-line message to the sink the runtime installs
// (which queues it for Python's `warnings` module as
// tracejit.TracejitWarning, so `-W error`, filters and
// `warnings.catch_warnings` apply); with no sink (a C++ unit test) it goes
// to stderr as "tracejit: warning: <message>". Thread-safe.
#pragma once

#include <string>

namespace tj {

using WarningSink = void (*)(const std::string& message);

// Replaces the sink (null: stderr). The runtime sets it when `_tracejit` loads.
void set_warning_sink(WarningSink sink);

void warn(const std::string& message);

}  // namespace tj
