// What the jit layer was built with, for `tracejit --version` and
// `tracejit.backends()`: the LLVM version, and NVRTC's when it is present.
#pragma once

#include <string>

namespace tj::jit {

// "LLVM 14.0.6"
std::string llvm_version_line();
// "NVRTC 13.0" when built with NVRTC and the library answers, else
// "NVRTC unavailable".
std::string nvrtc_version_line();

}  // namespace tj::jit
