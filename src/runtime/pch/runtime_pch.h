// Precompiled header of the runtime layer (used with -Db_pch=true; see
// docs/architecture.md "Build time"): Python (first, as it must be),
// LibTorch's tensor and the standard headers its files include. External
// headers only.
#pragma once

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
