// Version lines of the code generators the jit layer was built against.
#include "jit/backend_info.h"

#include <llvm/Config/llvm-config.h>

#include "tracejit_build_config.h"

#if TRACEJIT_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace tj::jit {

std::string llvm_version_line() { return std::string("LLVM ") + LLVM_VERSION_STRING; }

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
