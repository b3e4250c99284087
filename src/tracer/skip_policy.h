// Which Python source the tracer inlines, TorchDynamo's rule: any code is
// traced into except the standard library, tracejit itself and torch's own
// internals. Third-party packages (torchvision's models, a user's installed
// library) are inlined like user code; of torch, the Python layers model
// code calls are inlined (torch.nn.modules, torch.nn.functional,
// torch.functional, torch.nn.utils, torch.optim) where the tracer has not
// already mapped a callable to ATen. A call into skipped code is a graph
// break whose reason names the rule (`explain` shows it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tracer/trace_api.h"

namespace tj::tracer {

// Why a call into code from `file` is not inlined ("the standard library",
// "torch internals (torch/_tensor.py)", ...), or nullopt: inline it.
// `qualname`, the function's __qualname__, singles out a function of a
// skipped file that is inlined all the same.
std::optional<std::string> skip_inline_reason(std::string_view file, std::string_view qualname = {});

// skip_frame_reason (the rule for frames CPython calls) is declared in
// trace_api.h (the runtime calls it).

// The file is installed code (standard library or a package), whose
// module globals are not guarded (they are not expected to change).
// tracejit's polyfills (python/tracejit/_polyfills.py), inlined in place
// of library functions: their globals are fixed, as an installed file's.
bool is_polyfill_file(std::string_view file);
bool is_installed_file(std::string_view file);

}  // namespace tj::tracer
