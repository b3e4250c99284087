// Precompiled header of the graph layer (used with -Db_pch=true; see
// docs/architecture.md "Build time"): the LibTorch and standard headers
// most of its files include. External headers only: a change to one of
// ours must not rebuild it.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>
