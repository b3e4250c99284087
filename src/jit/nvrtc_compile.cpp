// NVRTC: CUDA C source -> PTX; see nvrtc_compile.h.
#include "jit/nvrtc_compile.h"

#include <mutex>
#include <sstream>
#include <vector>

#include "tracejit_build_config.h"
#if TRACEJIT_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace tj::jit::nvrtc {

namespace {
std::mutex g_arch_mutex;
std::string g_arch;
std::string g_default_arch = "sm_80";
}  // namespace

void set_default_arch(std::string arch) {
  std::lock_guard<std::mutex> lock(g_arch_mutex);
  g_default_arch = std::move(arch);
}

void set_arch(std::string arch) {
  std::lock_guard<std::mutex> lock(g_arch_mutex);
  g_arch = std::move(arch);
}

std::string arch() {
  std::lock_guard<std::mutex> lock(g_arch_mutex);
  return g_arch.empty() ? g_default_arch : g_arch;
}

std::string numbered(const std::string& source) {
  std::istringstream in(source);
  std::ostringstream out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) out << (n < 10 ? "  " : n < 100 ? " " : "") << n << "| " << line << "\n";
  return out.str();
}

#if TRACEJIT_HAVE_NVRTC

bool available() { return true; }

Expected<std::string> compile_ptx(const std::string& source, const std::string& kernel, const std::string& arch) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), (kernel + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return Error{"NVRTC could not create a program for " + kernel};
  const std::string arch_flag = "--gpu-architecture=compute_" + arch.substr(arch.find('_') + 1);
  const char* options[] = {arch_flag.c_str(), "--std=c++17"};
  nvrtcResult result = nvrtcCompileProgram(program, 2, options);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(program, log.data());
  if (result != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    return Error{"NVRTC failed on kernel " + kernel + " (" + nvrtcGetErrorString(result) + "):\n" + log.c_str() +
                 "\n" + numbered(source)};
  }
  size_t size = 0;
  nvrtcGetPTXSize(program, &size);
  std::string ptx(size, '\0');
  nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

#else

bool available() { return false; }

Expected<std::string> compile_ptx(const std::string&, const std::string& kernel, const std::string&) {
  return Error{"NVRTC unavailable (tracejit was built without /usr/local/cuda): cannot compile " + kernel};
}

#endif

}  // namespace tj::jit::nvrtc
