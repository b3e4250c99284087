// The build configuration gpu_check's copy of src/jit/nvrtc_compile.cpp
// sees: NVRTC is there (gpu_check is built only where it is). Only on
// gpu_check's include path, in place of the generated top-level one.
#pragma once

#ifndef TRACEJIT_HAVE_NVRTC
#define TRACEJIT_HAVE_NVRTC 1
#endif
