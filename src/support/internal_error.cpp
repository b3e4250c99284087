// Internal error reports; see internal_error.h.
#include "support/internal_error.h"

#include <atomic>

#include "support/log.h"

namespace tj {

namespace {
std::atomic<long long> g_internal_errors{0};
}  // namespace

std::string report_internal_error(std::string_view where, std::string_view what) {
  ++g_internal_errors;
  std::string reason = std::string(kInternalErrorPrefix) + std::string(what);
  log::error_logger().error("{} ({}); it runs uncompiled or op by op. This is a bug of tracejit: please report it "
                            "with the program that shows it.",
                            reason, where);
  return reason;
}

long long internal_error_count() { return g_internal_errors.load(); }

void zero_internal_error_count() { g_internal_errors.store(0); }

}  // namespace tj
