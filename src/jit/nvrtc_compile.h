// NVRTC: CUDA C source -> PTX, for the `nvrtc` backend.
//
// Built against /usr/local/cuda's NVRTC when the Meson feature `nvrtc`
// finds it (TRACEJIT_HAVE_NVRTC); without it every compile is an error
// saying so and `available()` is false. Compiling needs no GPU.
#pragma once

#include <string>

#include "support/expected.h"

namespace tj::jit::nvrtc {

bool available();

// config.nvrtc_arch ("" for None: the device's, else sm_80), kept current
// by the runtime's config mirror; `arch()` is what compiles use.
void set_arch(std::string arch);
std::string arch();
// What None means: the process's device's architecture once it is opened.
void set_default_arch(std::string arch);

// The PTX of `source` for `arch` ("sm_80"), or an error naming `kernel`
// with NVRTC's log and the source with line numbers.
Expected<std::string> compile_ptx(const std::string& source, const std::string& kernel, const std::string& arch);

// "  1| line" for each line: what a compile error shows.
std::string numbered(const std::string& source);

}  // namespace tj::jit::nvrtc
