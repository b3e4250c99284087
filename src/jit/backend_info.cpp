// Version lines of the code generators the jit layer was built against.
#include "jit/backend_info.h"

#include <llvm-c/Core.h>

#include "tracejit_build_config.h"

#if TRACEJIT_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace tj::jit {

// Asked of the linked libLLVM, not of the headers, so a mismatched library
// shows up here.
std::string llvm_version_line() {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  return "LLVM " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string nvrtc_version_line() {
#if TRACEJIT_HAVE_NVRTC
  int major = 0;
  int minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
    return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
  }
#endif
  return "NVRTC unavailable";
}

}  // namespace tj::jit
