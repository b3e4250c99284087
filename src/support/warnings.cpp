// The warning sink; see warnings.h.
#include "support/warnings.h"

#include <atomic>
#include <cstdio>

namespace tj {

namespace {
std::atomic<WarningSink> g_sink{nullptr};
}  // namespace

void set_warning_sink(WarningSink sink) { g_sink.store(sink); }

void warn(const std::string& message) {
  if (WarningSink sink = g_sink.load()) {
    sink(message);
    return;
  }
  std::fprintf(stderr, "tracejit: warning: %s\n", message.c_str());
}

}  // namespace tj
