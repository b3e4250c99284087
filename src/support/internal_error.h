// Internal errors: bugs of tracejit's own, told apart from the errors a
// user's program causes.
//
// A C++ exception that is not LibTorch's c10::Error (an ATen check the
// user's program fails in eager too) nor std::bad_alloc, caught where a
// layer turns exceptions into values, is a bug of ours: its Error has
// ErrorKind::internal (graph/boxing.h, exception_kind). Where such an error
// would become a reason (a graph break, a frame run uncompiled, a graph run
// op by op), report_internal_error counts it (the `internal_errors`
// counter), logs one line asking for a report whatever the log topics,
// and words the reason so that the raw text (`unordered_map::at`) is never
// shown as if it were why the code is not supported. What failed still
// runs correctly: uncompiled, or op by op.
#pragma once

#include <string>
#include <string_view>

namespace tj {

// Counts and logs an internal error met while `where` (a frame, a step) and
// returns the reason to show: "internal error in tracejit (please report):
// <what>". Thread-safe.
std::string report_internal_error(std::string_view where, std::string_view what);

// The reason's prefix, for code that tells reported errors apart.
inline constexpr std::string_view kInternalErrorPrefix = "internal error in tracejit (please report): ";

long long internal_error_count();
void zero_internal_error_count();

}  // namespace tj
