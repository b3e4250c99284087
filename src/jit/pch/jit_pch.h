// Precompiled header of the jit layer (used with -Dpch=true; see
// docs/architecture.md "Build time"): LibTorch's, LLVM's IR builder and the
// standard headers its files include. External headers only.
// No include guard: only ever the -include of its layer's files, and GCC
// warns about `#pragma once` in the header it precompiles.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/BFloat16.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
