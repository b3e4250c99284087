// Precompiled header of the tracer layer (used with -Dpch=true; see
// docs/architecture.md "Build time"): Python (first, as it must be),
// LibTorch's tensor and the standard headers its files include. External
// headers only.
// No include guard: only ever the -include of its layer's files, and GCC
// warns about `#pragma once` in the header it precompiles.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
